"""torch.nn.functional and the matrix ops megatron's layers use: forward values (float32, float16; bfloat16 where
megatron runs it) and gradients of every input."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import grad_of, positive, register, tensor

F = "torch.nn.functional"

# name -> (ops, inputs(torch) -> tuple of float32 tensors, function(torch, *inputs), differentiable)
NN: dict[str, tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]], Callable[..., Any], bool]] = {
    "softmax": ((f"{F}.softmax",), lambda torch: (tensor(torch, (2, 3, 5)),),
                lambda torch, x: torch.nn.functional.softmax(x, dim=-1), True),
    "softmax_fn": (("torch.softmax",), lambda torch: (tensor(torch, (4, 5)),),
                   lambda torch, x: torch.softmax(x, 0), True),
    "softmax_method": (("Tensor.softmax",), lambda torch: (tensor(torch, (4, 5)),), lambda torch, x: x.softmax(-1),
                       True),
    "softmax_dtype": ((f"{F}.softmax",), lambda torch: (tensor(torch, (4, 5)).half(),),
                      lambda torch, x: torch.nn.functional.softmax(x, dim=-1, dtype=torch.float32), False),
    "log_softmax": ((f"{F}.log_softmax",), lambda torch: (tensor(torch, (3, 6)),),
                    lambda torch, x: torch.nn.functional.log_softmax(x, dim=-1), True),
    "log_softmax_method": (("Tensor.log_softmax",), lambda torch: (tensor(torch, (3, 6)),),
                           lambda torch, x: x.log_softmax(dim=0), True),
    "layer_norm": ((f"{F}.layer_norm",), lambda torch: (tensor(torch, (2, 3, 8)), tensor(torch, (8,), seed=1),
                                                         tensor(torch, (8,), seed=2)),
                   lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (8,), w, b, 1e-5), True),
    "layer_norm_no_affine": ((f"{F}.layer_norm",), lambda torch: (tensor(torch, (4, 8)),),
                             lambda torch, x: torch.nn.functional.layer_norm(x, (8,)), True),
    "gelu": ((f"{F}.gelu",), lambda torch: (tensor(torch, (3, 5)),),
             lambda torch, x: torch.nn.functional.gelu(x), True),
    "gelu_tanh": ((f"{F}.gelu",), lambda torch: (tensor(torch, (3, 5)),),
                  lambda torch, x: torch.nn.functional.gelu(x, approximate="tanh"), True),
    "silu": ((f"{F}.silu",), lambda torch: (tensor(torch, (3, 5)),),
             lambda torch, x: torch.nn.functional.silu(x), True),
    "sigmoid_f": ((f"{F}.sigmoid",), lambda torch: (tensor(torch, (3, 5)),),
                  lambda torch, x: torch.nn.functional.sigmoid(x), True),
    "softplus": ((f"{F}.softplus",), lambda torch: (tensor(torch, (3, 5), low=-30, high=30),),
                 lambda torch, x: torch.nn.functional.softplus(x), True),
    "logsigmoid": ((f"{F}.logsigmoid",), lambda torch: (tensor(torch, (3, 5)),),
                   lambda torch, x: torch.nn.functional.logsigmoid(x), True),
    "relu_f": ((f"{F}.relu",), lambda torch: (tensor(torch, (3, 5)),),
               lambda torch, x: torch.nn.functional.relu(x), True),
    "linear": ((f"{F}.linear",), lambda torch: (tensor(torch, (2, 3, 4)), tensor(torch, (5, 4), seed=1),
                                                 tensor(torch, (5,), seed=2)),
               lambda torch, x, w, b: torch.nn.functional.linear(x, w, b), True),
    "linear_no_bias": ((f"{F}.linear",), lambda torch: (tensor(torch, (3, 4)), tensor(torch, (2, 4), seed=1)),
                       lambda torch, x, w: torch.nn.functional.linear(x, w), True),
    "embedding": ((f"{F}.embedding",), lambda torch: (tensor(torch, (6, 4)),),
                  lambda torch, w: torch.nn.functional.embedding(torch.tensor([[0, 2], [5, 2]]), w), True),
    "embedding_padding_idx": ((f"{F}.embedding",), lambda torch: (tensor(torch, (6, 4)),),
                              lambda torch, w: torch.nn.functional.embedding(torch.tensor([[0, 2], [1, 2]]), w,
                                                                             padding_idx=2), True),
    "dropout_p0": ((f"{F}.dropout",), lambda torch: (tensor(torch, (3, 4)),),
                   lambda torch, x: torch.nn.functional.dropout(x, p=0.0, training=True), True),
    "dropout_eval": ((f"{F}.dropout",), lambda torch: (tensor(torch, (3, 4)),),
                     lambda torch, x: torch.nn.functional.dropout(x, p=0.5, training=False), True),
    "pad": ((f"{F}.pad",), lambda torch: (tensor(torch, (2, 3)),),
            lambda torch, x: torch.nn.functional.pad(x, (1, 2)), True),
    "pad_value_2d": ((f"{F}.pad",), lambda torch: (tensor(torch, (2, 3)),),
                     lambda torch, x: torch.nn.functional.pad(x, (0, 1, 1, 0), value=-1.0), True),
    "normalize": ((f"{F}.normalize",), lambda torch: (tensor(torch, (3, 4)),),
                  lambda torch, x: torch.nn.functional.normalize(x, dim=-1), True),
    "cross_entropy": ((f"{F}.cross_entropy",), lambda torch: (tensor(torch, (4, 5)),),
                      lambda torch, x: torch.nn.functional.cross_entropy(x, torch.tensor([1, 0, 4, 2])), True),
    "cross_entropy_ignore": ((f"{F}.cross_entropy",), lambda torch: (tensor(torch, (4, 5)),),
                             lambda torch, x: torch.nn.functional.cross_entropy(
                                 x, torch.tensor([1, -100, 4, 2]), reduction="sum"), True),
    "conv1d": ((f"{F}.conv1d",), lambda torch: (tensor(torch, (2, 3, 8)), tensor(torch, (4, 3, 3), seed=1)),
               lambda torch, x, w: torch.nn.functional.conv1d(x, w, padding=1), True),
    "interpolate": ((f"{F}.interpolate",), lambda torch: (tensor(torch, (1, 2, 4)),),
                    lambda torch, x: torch.nn.functional.interpolate(x, scale_factor=2, mode="nearest"), True),
    "bmm": (("torch.bmm",), lambda torch: (tensor(torch, (2, 3, 4)), tensor(torch, (2, 4, 5), seed=1)),
            lambda torch, a, b: torch.bmm(a, b), True),
    "baddbmm": (("torch.baddbmm",), lambda torch: (tensor(torch, (2, 3, 5)), tensor(torch, (2, 3, 4), seed=1),
                                                   tensor(torch, (2, 4, 5), seed=2)),
                lambda torch, i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=2.0), True),
    "einsum": (("torch.einsum",), lambda torch: (tensor(torch, (2, 3, 4)), tensor(torch, (4, 5), seed=1)),
               lambda torch, a, b: torch.einsum("bij,jk->bik", a, b), True),
    "outer": (("torch.outer",), lambda torch: (tensor(torch, (3,)), tensor(torch, (4,), seed=1)),
              lambda torch, a, b: torch.outer(a, b), True),
    "addcmul": (("torch.addcmul",), lambda torch: (tensor(torch, (3,)), tensor(torch, (3,), seed=1),
                                                   tensor(torch, (3,), seed=2)),
                lambda torch, a, b, c: torch.addcmul(a, b, c, value=0.5), True),
    "clamp": (("torch.clamp",), lambda torch: (tensor(torch, (3, 4)),),
              lambda torch, x: torch.clamp(x, min=-0.5, max=1.0), True),
    "clamp_method_min": (("Tensor.clamp",), lambda torch: (tensor(torch, (3, 4)),), lambda torch, x: x.clamp(min=0),
                         True),
    "pow_fn": (("torch.pow",), lambda torch: (positive(torch, (3,)),), lambda torch, x: torch.pow(x, 1.5), True),
    "pow_method": (("Tensor.pow",), lambda torch: (positive(torch, (3,)),), lambda torch, x: x.pow(2), True),
    "exp_method": (("Tensor.exp",), lambda torch: (tensor(torch, (3,)),), lambda torch, x: x.exp(), True),
    "mul_fn": (("torch.mul",), lambda torch: (tensor(torch, (3,)), tensor(torch, (3,), seed=1)),
               lambda torch, a, b: torch.mul(a, b), True),
    "div_fn_rounding": (("torch.div",), lambda torch: (tensor(torch, (3,)), positive(torch, (3,), seed=1)),
                        lambda torch, a, b: torch.div(a, b, rounding_mode="floor"), False),
    "add_fn_alpha": (("torch.add",), lambda torch: (tensor(torch, (3,)), tensor(torch, (3,), seed=1)),
                     lambda torch, a, b: torch.add(a, b, alpha=-2), True),
    "cat": (("torch.cat",), lambda torch: (tensor(torch, (2, 3)), tensor(torch, (1, 3), seed=1)),
            lambda torch, a, b: torch.cat([a, b], dim=0), True),
    "cat_dim1": (("torch.cat",), lambda torch: (tensor(torch, (2, 3)), tensor(torch, (2, 1), seed=1)),
                 lambda torch, a, b: torch.cat((a, b), -1), True),
    "concat": (("torch.concat",), lambda torch: (tensor(torch, (2, 3)), tensor(torch, (2, 3), seed=1)),
               lambda torch, a, b: torch.concat([a, b]), True),
    "concatenate": (("torch.concatenate",), lambda torch: (tensor(torch, (2, 3)), tensor(torch, (2, 3), seed=1)),
                    lambda torch, a, b: torch.concatenate([a, b], axis=1), True),
    "stack": (("torch.stack",), lambda torch: (tensor(torch, (2, 3)), tensor(torch, (2, 3), seed=1)),
              lambda torch, a, b: torch.stack([a, b], dim=1), True),
    "sqrt_fn": (("torch.sqrt",), lambda torch: (positive(torch, (3,)),), lambda torch, x: torch.sqrt(x), True),
}


def _make(name: str, ops: tuple[str, ...], inputs: Callable[[Any], tuple[Any, ...]], function: Callable[..., Any],
          differentiable: bool) -> None:
    def forward(torch: Any) -> Any:
        return function(torch, *inputs(torch))

    def half(torch: Any) -> Any:
        return function(torch, *[x.half() for x in inputs(torch)])

    def gradient(torch: Any) -> Any:
        return grad_of(torch, lambda *xs: function(torch, *xs), *inputs(torch))

    register(__name__, f"{name}__float32", ops, forward)
    if name not in ("embedding", "embedding_padding_idx", "cross_entropy", "cross_entropy_ignore", "softmax_dtype",
                    "conv1d", "interpolate"):
        register(__name__, f"{name}__float16", ops, half, rtol=1e-2, atol=1e-2)
    if differentiable:
        register(__name__, f"{name}__grad", ops, gradient, rtol=1e-4, atol=1e-5)


for _name, _spec in NN.items():
    _make(_name, *_spec)


def _baddbmm_beta0_ignores_nan(torch: Any) -> Any:
    buffer = torch.full((2, 3, 5), float("nan"))
    a, b = tensor(torch, (2, 3, 4), seed=1), tensor(torch, (2, 4, 5), seed=2)
    return torch.baddbmm(buffer, a, b, beta=0.0, alpha=0.5)


def _cat_mixed_dtypes(torch: Any) -> Any:
    return torch.cat([tensor(torch, (2,), "int64"), tensor(torch, (2,))])


def _cat_empty(torch: Any) -> Any:
    return torch.cat([torch.zeros(0), tensor(torch, (3,))])


def _cat_bfloat16(torch: Any) -> Any:
    return torch.cat([tensor(torch, (2, 2), "bfloat16"), tensor(torch, (1, 2), "bfloat16", seed=1)])


def _softmax_bfloat16(torch: Any) -> Any:
    return torch.nn.functional.softmax(tensor(torch, (2, 4), "bfloat16"), dim=-1)


def _layer_norm_bfloat16(torch: Any) -> Any:
    return torch.nn.functional.layer_norm(tensor(torch, (2, 8), "bfloat16"), (8,))


def _stack_shape_mismatch(torch: Any) -> Any:
    return torch.stack([torch.zeros(2), torch.zeros(3)])


register(__name__, "baddbmm_beta0_ignores_nan_input", ("torch.baddbmm",), _baddbmm_beta0_ignores_nan)
register(__name__, "cat_promotes_int_float", ("torch.cat",), _cat_mixed_dtypes)
register(__name__, "cat_with_empty", ("torch.cat",), _cat_empty)
register(__name__, "cat_bfloat16", ("torch.cat",), _cat_bfloat16)
register(__name__, "softmax_bfloat16", (f"{F}.softmax",), _softmax_bfloat16, rtol=2e-2, atol=2e-2)
register(__name__, "layer_norm_bfloat16", (f"{F}.layer_norm",), _layer_norm_bfloat16, rtol=3e-2, atol=3e-2)
register(__name__, "stack_shape_mismatch_raises", ("torch.stack",), _stack_shape_mismatch)


def _softmaxes_with_dtype(torch: Any) -> Any:
    """``dtype=`` casts the input first (megatron's and MindSpeed's MoE routers: ``torch.softmax(logits, dim=-1,
    dtype=torch.float32)`` of bfloat16 logits); the float16 input's values show a computation in float16."""
    out = {}
    for name in ("float16", "bfloat16"):
        x = (tensor(torch, (3, 6)) * 3).to(getattr(torch, name))
        out[name] = {"F.log_softmax": torch.nn.functional.log_softmax(x, -1, dtype=torch.float32),
                     "torch.log_softmax": torch.log_softmax(x, dim=1, dtype=torch.float32),
                     "method": x.log_softmax(0, dtype=torch.float32),
                     "softmax": torch.softmax(x, dim=-1, dtype=torch.float32),
                     "F.softmax": torch.nn.functional.softmax(x, 0, dtype=torch.float64)}
    return out


register(__name__, "softmax_log_softmax_dtype_casts_first", (f"{F}.log_softmax", "Tensor.log_softmax",
                                                              "torch.softmax", f"{F}.softmax"), _softmaxes_with_dtype)


def _smooth_l1(torch: Any) -> Any:
    """Every reduction and ``beta`` (0: the L1 loss), float64 kept, gradients; the call without ``reduction``."""
    a, b = tensor(torch, (4, 5), seed=11) * 2, tensor(torch, (4, 5), seed=12)
    out = {"default": torch.nn.functional.smooth_l1_loss(a, b),
           "sum_beta": torch.nn.functional.smooth_l1_loss(a, b, reduction="sum", beta=0.5),
           "none": torch.nn.functional.smooth_l1_loss(a, b, reduction="none", beta=2.0),
           "l1": torch.nn.functional.smooth_l1_loss(a, b, beta=0.0),
           "float64": torch.nn.functional.smooth_l1_loss(a.double(), b.double(), beta=0.3)}
    out["grads"] = grad_of(torch, lambda x, y: torch.nn.functional.smooth_l1_loss(x, y, reduction="none", beta=0.7),
                           a, b)
    return out


def _dropout2d_default_trains(torch: Any) -> Any:
    """``F.dropout2d(x, p)`` without ``training``: PyTorch drops whole channels (zeros or ``1 / (1 - p)``)."""
    out = torch.nn.functional.dropout2d(torch.ones(4, 64, 3, 3), 0.5)
    return {"some_dropped": bool((out == 0).any()), "some_kept": bool((out == 2).any()),
            "only_0_or_2": bool(((out == 0) | (out == 2)).all()),
            "whole_channels": bool((out.amax((2, 3)) == out.amin((2, 3))).all())}


register(__name__, "smooth_l1_loss_defaults_and_dtypes", (f"{F}.smooth_l1_loss",), _smooth_l1)
register(__name__, "dropout2d_trains_by_default", (f"{F}.dropout2d",), _dropout2d_default_trains)


def _rms_norm(torch: Any) -> Any:
    """``eps`` left out (the dtype's epsilon: shows on small inputs), no weight, a weight, two normalized dims."""
    small = tensor(torch, (3, 4), seed=13) * 1e-3
    return {"default_eps": torch.nn.functional.rms_norm(small, (4,)),
            "weight": torch.nn.functional.rms_norm(small, [4], tensor(torch, (4,), seed=14), eps=1e-6),
            "two_dims": torch.nn.functional.rms_norm(tensor(torch, (2, 3, 4), seed=15), (3, 4)),
            "grads": grad_of(torch, lambda x, w: torch.nn.functional.rms_norm(x, (4,), w), small,
                             tensor(torch, (4,), seed=16))}


register(__name__, "rms_norm_defaults", (f"{F}.rms_norm",), _rms_norm)
