"""Megatron-LM's ``pretrain_gpt.py --bf16`` / ``--fp16`` (llama: RMSNorm, SwiGLU) against PyTorch: where PyTorch's CPU
kernel computes a half-precision op in float32 and rounds once, ours rounded more often.

* ``torch.nn.RMSNorm`` (mindspeed_ms.compat.msadapter_nn: MSAdapter lacks it; megatron's local layer spec builds it):
  the replacement recognised half precision by the dtype's name, which MindSpore spells ``BFloat16`` / ``Float16``,
  so it normalised op by op in half precision (the first RMSNorm output differed in 1141 of 4096 values); its
  ``eps=None`` is float32's machine epsilon for half inputs (PyTorch's opmath type).
* ``F.silu`` (megatron's SwiGLU): MSAdapter computes ``x * sigmoid(x)`` on CPU, two bfloat16 ops rounded twice
  (2771 of 11008 values differed); now the whole of it in float32, rounded once.
* float16 ``F.silu``, ``torch.sigmoid``, ``softmax`` (mindspeed_ms.compat.float16_ops): MindSpore's float16 CPU
  kernels compute in half precision (4018, 3545, 7664 of 11008 values differed); now in float32, rounded once.
"""

from __future__ import annotations

from typing import Any

from conformance.samples import register, tensor


def _norm(torch: Any, dtype: Any, eps: float | None = 1e-5) -> Any:
    norm = torch.nn.RMSNorm(64, eps=eps).to(dtype)
    with torch.no_grad():
        norm.weight.copy_(tensor(torch, (64,), seed=3, low=0.5, high=1.5).to(dtype))
    return norm


def _forward(dtype_name: str, eps: float | None = 1e-5) -> Any:
    def run(torch: Any) -> Any:
        dtype = getattr(torch, dtype_name)
        out = _norm(torch, dtype, eps)(tensor(torch, (4, 2, 64), seed=1).to(dtype))
        return {"out": out, "dtype": out.dtype}
    return run


def _backward(dtype_name: str) -> Any:
    def run(torch: Any) -> Any:
        dtype = getattr(torch, dtype_name)
        norm = _norm(torch, dtype)
        x = tensor(torch, (4, 2, 64), seed=1).to(dtype).requires_grad_(True)
        (norm(x).float() * tensor(torch, (4, 2, 64), seed=2)).sum().backward()
        return {"x_grad": x.grad, "weight_grad": norm.weight.grad, "dtypes": [x.grad.dtype, norm.weight.grad.dtype]}
    return run


for _dtype in ("bfloat16", "float16"):
    register(__name__, f"rms_norm_{_dtype}", ("torch.nn.RMSNorm",), _forward(_dtype), exact=True)
    register(__name__, f"rms_norm_{_dtype}_backward", ("torch.nn.RMSNorm", "Tensor.backward"), _backward(_dtype),
             exact=True)
register(__name__, "rms_norm_bfloat16_default_eps", ("torch.nn.RMSNorm",), _forward("bfloat16", None), exact=True)


def _silu(torch: Any) -> Any:
    x = tensor(torch, (8, 344), seed=4, low=-6.0, high=6.0).to(torch.bfloat16).requires_grad_(True)
    gate, up = torch.chunk(x, 2, -1)
    out = torch.nn.functional.silu(gate)
    swiglu = out * up
    (swiglu.float() * tensor(torch, (8, 172), seed=5)).sum().backward()
    return {"silu": out, "swiglu": swiglu, "dtype": out.dtype, "grad": x.grad}


register(__name__, "silu_bfloat16", ("torch.nn.functional.silu", "Tensor.backward"), _silu, exact=True)


def _float16(function: Any, backward: bool) -> Any:
    def run(torch: Any) -> Any:
        x = tensor(torch, (4, 32), seed=6, low=-4.0, high=4.0).to(torch.float16).requires_grad_(backward)
        outs = function(torch, x)
        if not backward:
            return {"out": outs, "dtypes": [out.dtype for out in outs]}
        sum((out.float() * tensor(torch, tuple(out.shape), seed=7)).sum() for out in outs).backward()
        return {"out": outs, "dtypes": [out.dtype for out in outs], "grad": x.grad}
    return run


# sigmoid's and softmax's backward are forward only here: PyTorch's backward kernels start from the float16 (rounded)
# output, ours from the float32 one (1-ulp differences in 78 and 40 of 128 gradients)
for _name, _ops, _fn, _backward in (
        ("silu_float16", ("torch.nn.functional.silu",), lambda torch, x: [torch.nn.functional.silu(x)], True),
        ("sigmoid_float16", ("torch.sigmoid", "Tensor.sigmoid"), lambda torch, x: [torch.sigmoid(x), x.sigmoid()],
         False),
        ("softmax_float16", ("torch.softmax", "Tensor.softmax", "torch.nn.functional.softmax"),
         lambda torch, x: [torch.softmax(x / 2, -1), torch.nn.functional.softmax(x / 2, dim=-1)], False)):
    register(__name__, _name, (*_ops, *(("Tensor.backward",) if _backward else ())), _float16(_fn, _backward),
             exact=True)

# softmax of float16 along a dimension that is not the last: PyTorch's CPU kernel depends on the CPU. With AVX2 it is
# the float32 softmax rounded once to float16 (ours, bit for bit); with AVX512 (torch 2.13 on an AMD EPYC with
# avx512f, measured) it rounds each exp(x - max) to float16 first and rounds the quotient again: 8-18 of 128 values
# one float16 unit apart from the single rounding. Compared to one unit (2**-10 relative) here.
register(__name__, "softmax_float16_dim0", ("Tensor.softmax",),
         _float16(lambda torch, x: [(x / 2).softmax(0)], False), rtol=2.0 ** -10, atol=0.0)
