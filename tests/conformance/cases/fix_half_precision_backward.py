"""Half-precision activations' backward and GeLU against PyTorch's CPU kernels (``--fp16`` / ``--bf16``).

PyTorch's CPU backward kernels of sigmoid, tanh and softmax start from the *rounded* half-precision output (saved by
the forward), widen it to float32, compute the gradient there and round it once (float16 sigmoid: every step rounded
to float16); ours differentiated through the casts from the float32 output (mindspeed_ms.compat.half_activations):
307 of 512 float16 sigmoid gradients were a step off, 263 bfloat16, tanh 416 bfloat16, softmax 149 bfloat16; float16
tanh ran MindSpore's half-precision kernel (13 of 512 values off), float16 softmax MindSpore's float32 Exp (2 off).
GeLU with ``approximate='tanh'`` of bfloat16 raised TypeError (no GeLU kernel); now ATen's float32 formula, rounded
once. Exact but for GeLU's tails: near ``x = -4`` ``1 + tanh`` / ``1 + erf`` cancel and PyTorch's own vectorised
float32 tanh / erf (within an ulp, not correctly rounded) decide the last bit (tanh backward: 2 of 512 float16
gradients, 1 bfloat16; erf forward: 31 float16, 3 bfloat16 values): the default half-precision tolerances there.
"""

from __future__ import annotations

from typing import Any

from conformance.samples import register, tensor


def _case(function: Any, dtype_name: str, backward: bool) -> Any:
    def run(torch: Any) -> Any:
        dtype = getattr(torch, dtype_name)
        x = tensor(torch, (8, 64), seed=6, low=-5.0, high=5.0).to(dtype).requires_grad_(backward)
        outs = function(torch, x)
        found = {"out": outs, "dtypes": [out.dtype for out in outs]}
        if backward:
            sum((out.float() * tensor(torch, tuple(out.shape), seed=7)).sum() for out in outs).backward()
            found["grad"] = x.grad
        return found
    return run


_OPS = {
    "gelu": (("torch.nn.functional.gelu",), lambda torch, x: [torch.nn.functional.gelu(x)]),
    "gelu_tanh": (("torch.nn.functional.gelu",),
                  lambda torch, x: [torch.nn.functional.gelu(x, approximate="tanh")]),
    "sigmoid": (("torch.sigmoid",), lambda torch, x: [torch.sigmoid(x)]),
    "tanh": (("torch.tanh",), lambda torch, x: [torch.tanh(x)]),
    "softmax": (("torch.softmax",), lambda torch, x: [torch.softmax(x / 2, -1)]),
}

for _name, (_ops, _function) in _OPS.items():
    for _dtype in ("bfloat16", "float16"):
        register(__name__, f"{_name}_{_dtype}", _ops, _case(_function, _dtype, False), exact=_name != "gelu")
        register(__name__, f"{_name}_{_dtype}_backward", (*_ops, "Tensor.backward"), _case(_function, _dtype, True),
                 exact=not _name.startswith("gelu"))
