"""bfloat16 elementwise math without a MindSpore CPU kernel (mindspeed_ms.compat.bfloat16_ops): clone (autograd
kept), sub/floor division/remainder/pow/maximum/minimum and the unary math, in every form the field writes
(function, method, operator, in place through views), PyTorch's result dtype when another operand promotes.

Exact ops (PyTorch computes them exactly in float32 and rounds once) compare bit for bit; transcendental ones within
one bfloat16 ulp (rtol 2**-7)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import VIEWS, positive, register, tensor

B = "bfloat16"
ULP = 2.0 ** -7


def _x(torch: Any, seed: int = 0) -> Any:
    return tensor(torch, (3, 4), B, seed=seed, low=-3.0, high=3.0)


def _p(torch: Any, seed: int = 1) -> Any:
    return positive(torch, (3, 4), B, seed=seed)


#: name -> (ops, function, exact)
UNARY: dict[str, tuple[tuple[str, ...], Callable[[Any], Any], bool]] = {
    "exp": (("torch.exp", "Tensor.exp"), lambda t: [t.exp(_x(t)), _x(t).exp()], False),
    "log": (("torch.log", "Tensor.log"), lambda t: [t.log(_p(t)), _p(t).log()], False),
    "sqrt": (("torch.sqrt", "Tensor.sqrt"), lambda t: [t.sqrt(_p(t)), _p(t).sqrt()], False),
    "rsqrt": (("torch.rsqrt", "Tensor.rsqrt"), lambda t: [t.rsqrt(_p(t)), _p(t).rsqrt()], False),
    "sigmoid": (("torch.sigmoid", "Tensor.sigmoid", "torch.nn.functional.sigmoid"),
                lambda t: [t.sigmoid(_x(t)), _x(t).sigmoid(), t.nn.functional.sigmoid(_x(t))], False),
    "tanh": (("torch.tanh", "Tensor.tanh"), lambda t: [t.tanh(_x(t)), _x(t).tanh()], False),
    "sin_cos": (("torch.sin", "Tensor.sin", "torch.cos", "Tensor.cos"),
                lambda t: [t.sin(_x(t)), _x(t).sin(), t.cos(_x(t)), _x(t).cos()], False),
    "erf": (("torch.erf",), lambda t: t.erf(_x(t)), False),
    "expm1_log1p": (("torch.expm1", "torch.log1p"), lambda t: [t.expm1(_x(t)), t.log1p(_p(t))], False),
    "reciprocal": (("torch.reciprocal", "Tensor.reciprocal"), lambda t: [t.reciprocal(_x(t)), _x(t).reciprocal()],
                   True),
    "softplus": (("torch.nn.functional.softplus",), lambda t: t.nn.functional.softplus(_x(t)), False),
    "abs": (("torch.abs", "Tensor.abs"), lambda t: [t.abs(_x(t)), _x(t).abs()], True),
    "neg": (("Tensor.__neg__", "torch.neg"), lambda t: [-_x(t), t.neg(_x(t))], True),
    "relu": (("torch.relu", "torch.nn.functional.relu"), lambda t: [t.relu(_x(t)), t.nn.functional.relu(_x(t))],
             True),
    "rounding": (("torch.floor", "torch.ceil", "torch.round", "torch.trunc", "Tensor.trunc"),
                 lambda t: [t.floor(_x(t)), t.ceil(_x(t)), t.round(_x(t)), t.trunc(_x(t)), _x(t).trunc()], True),
    "square": (("torch.square", "Tensor.square"), lambda t: [t.square(_x(t)), _x(t).square()], True),
    "sign": (("torch.sign",), lambda t: t.sign(_x(t)), True),
    "nan_to_num": (("torch.nan_to_num",), lambda t: t.nan_to_num(
        t.tensor([float("nan"), float("inf"), -float("inf"), 1.5]).to(t.bfloat16)), True),
    "clamp": (("torch.clamp", "Tensor.clamp"), lambda t: [t.clamp(_x(t), -1.0, 1.5), _x(t).clamp(min=0.25),
                                                          _x(t).clamp(max=_p(t))], True),
    "clone": (("Tensor.clone", "torch.clone"), lambda t: [_x(t).clone(), t.clone(_x(t))], True),
}

BINARY: dict[str, tuple[tuple[str, ...], Callable[[Any], Any], bool]] = {
    "sub": (("Tensor.sub", "torch.sub", "Tensor.__sub__", "Tensor.__rsub__"),
            lambda t: [_x(t).sub(_p(t)), t.sub(_x(t), _p(t)), _x(t) - 0.5, 1.5 - _x(t)], True),
    "floordiv_mod": (("Tensor.__floordiv__", "Tensor.__mod__", "torch.floor_divide", "torch.remainder"),
                     lambda t: [_x(t) // _p(t), _x(t) % _p(t), _x(t) // 0.75, _x(t) % 0.75,
                                t.floor_divide(_x(t), _p(t)), t.remainder(_x(t), _p(t))], True),
    "pow": (("Tensor.__pow__", "torch.pow", "Tensor.pow"),
            lambda t: [_x(t) ** 2, t.pow(_p(t), _x(t)), _p(t).pow(0.5), t.pow(_p(t), 3)], False),
    "maximum_minimum": (("torch.maximum", "torch.minimum"),
                        lambda t: [t.maximum(_x(t), _x(t, 2)), t.minimum(_x(t), _x(t, 2))], True),
    # PyTorch's promotion: a float32 operand with dimensions makes the result float32, a 0-d one does not
    "promotes": (("Tensor.sub", "torch.maximum", "Tensor.__pow__"),
                 lambda t: [_x(t).sub(tensor(t, (3, 4))), t.maximum(_x(t), tensor(t, (3, 4))),
                            _x(t).sub(t.tensor(0.5)), _p(t) ** t.tensor(2.0)], True),
}


def _clone_grad(torch: Any) -> Any:
    x = _x(torch).requires_grad_(True)
    y = x.clone()
    (y.float() * tensor(torch, (3, 4), seed=5)).sum().backward()
    return {"clone": y, "requires_grad": y.requires_grad, "grad": x.grad, "grad_dtype": x.grad.dtype}


def _unary_grad(torch: Any) -> Any:
    x = _p(torch).requires_grad_(True)
    y = torch.exp(x) + torch.sqrt(x) - x.sigmoid()
    (y.float() * tensor(torch, (3, 4), seed=5)).sum().backward()
    return {"out": y, "grad": x.grad}


#: in-place op -> (ops, apply to the view)
INPLACE: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "sub_": ("Tensor.sub_", lambda t, v: v.sub_(0.75)),
    "isub": ("Tensor.__isub__", lambda t, v: v.__isub__(tensor(t, tuple(v.shape), B, seed=3))),
    "abs_": ("Tensor.abs_", lambda t, v: v.abs_()),
    "exp_": ("Tensor.exp_", lambda t, v: v.exp_()),
    "clamp_": ("Tensor.clamp_", lambda t, v: v.clamp_(-1.0, 0.5)),
    "pow_": ("Tensor.pow_", lambda t, v: v.pow_(2)),
    "ipow": ("Tensor.__ipow__", lambda t, v: v.__ipow__(3)),
    "floor_divide_": ("Tensor.floor_divide_", lambda t, v: v.floor_divide_(0.75)),
    "ifloordiv": ("Tensor.__ifloordiv__", lambda t, v: v.__ifloordiv__(0.75)),
    "remainder_": ("Tensor.remainder_", lambda t, v: v.remainder_(0.75)),
    "imod": ("Tensor.__imod__", lambda t, v: v.__imod__(0.75)),
}


#: in-place ops compared within one bfloat16 ulp (PyTorch's bfloat16 pow by 3 rounds x * x to bfloat16 first)
_ROUNDED = ("exp_", "ipow")


def _inplace(op: Callable[[Any, Any], Any], view: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        base = tensor(torch, (3, 4), B, seed=7, low=-3.0, high=3.0)
        alias = base.view(12)
        target = view(base)
        out = op(torch, target)
        return {"target": target, "base": base, "alias": alias, "returns_self": out is target}
    return run


for _name, (_ops, _fn, _exact) in {**UNARY, **BINARY}.items():
    if _exact:
        register(__name__, _name, _ops, _fn, exact=True)
    else:
        register(__name__, _name, _ops, _fn, rtol=ULP, atol=1e-30)
register(__name__, "clone_records_grad", ("Tensor.clone", "Tensor.backward"), _clone_grad, exact=True)
register(__name__, "unary_grad", ("torch.exp", "torch.sqrt", "Tensor.sigmoid", "Tensor.backward"), _unary_grad,
         rtol=2 * ULP, atol=1e-30)
for _name, (_op, _fn) in INPLACE.items():
    for _view_name, (_shape, _view) in VIEWS.items():
        register(__name__, f"inplace_{_name}_{_view_name}", (_op,), _inplace(_fn, _view),
                 rtol=ULP if _name in _ROUNDED else None, atol=1e-30 if _name in _ROUNDED else None,
                 exact=_name not in _ROUNDED)
