"""mindspeed_ms.compat._host_wrappers: the C forms of host_layer_norm's, host_bda's and host_linear's wrappers decide
as the Python forms do: the same calls go to the Function with the same arguments, the same calls to the wrapped
function with the same bound arguments, the same errors. Real MindSpore tensors through MSAdapter, the Function's apply
and the wrapped function recorded.
"""

from __future__ import annotations

import sys

from _helpers import json_lines, run_python, subprocess_env

from mindspeed_ms.compat import host_bda, host_layer_norm, host_linear

SCRIPT = r"""
import inspect, json
import mindspeed_ms.adaptor  # noqa: F401
import numpy as np
import torch
from mindspeed_ms.compat import host_bda, host_layer_norm, host_linear
from mindspeed_ms.compat.host_memory import contiguity_read

assert host_layer_norm.has_compiled_wrapper() and host_bda.has_compiled_wrapper()
assert host_linear.has_compiled_wrapper()
names = {}


def named(value):
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, *map(named, value)]
    if isinstance(value, dict):
        return {key: named(item) for key, item in sorted(value.items())}
    if isinstance(value, (bool, int, float, str)) or value is None:
        return repr(value)
    return names.setdefault(id(value), f"t{len(names)}")


calls = []


def recorder(kind, signature):
    def record(*args, **kwargs):
        if signature is not None:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = (), dict(bound.arguments)
        calls.append([kind, [named(a) for a in args], {k: named(v) for k, v in sorted(kwargs.items())}])
        return "result"
    return record


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, *args, **kwargs):
    return recorder("op", inspect.signature(layer_norm))(input, normalized_shape, weight, bias, eps, *args, **kwargs)


def _bias_dropout_add_func(x_with_bias, residual, prob, training):
    return recorder("op", inspect.signature(_bias_dropout_add_func))(x_with_bias, residual, prob, training)


def linear(input, weight, bias, gradient_accumulation_fusion, allreduce_dgrad, sequence_parallel,
           grad_output_buffer=None, wgrad_deferral_limit=0, async_grad_allreduce=None):
    return recorder("op", inspect.signature(linear))(
        input, weight, bias, gradient_accumulation_fusion, allreduce_dgrad, sequence_parallel,
        grad_output_buffer=grad_output_buffer, wgrad_deferral_limit=wgrad_deferral_limit,
        async_grad_allreduce=async_grad_allreduce)


_bias_dropout_add_func.__module__ = host_bda.MODULE
made = (linear, recorder("apply", None), host_linear._float32(), contiguity_read(), host_linear._autocast_enabled())
for function in (host_layer_norm._function(), host_bda.function()):  # the Functions both forms apply
    function.apply = recorder("apply", None)
forms = {"layer_norm": (host_layer_norm.layer_norm_wrapper(layer_norm),
                        host_layer_norm.python_layer_norm_wrapper(layer_norm)),
         "bda": (host_bda.bias_dropout_add_wrapper(_bias_dropout_add_func),
                 host_bda.python_bias_dropout_add_wrapper(_bias_dropout_add_func)),
         "linear": (host_linear.compiled_linear_wrapper(*made), host_linear.python_linear_wrapper(*made))}
for compiled, _ in forms.values():
    assert type(compiled).__module__ == "mindspeed_ms.compat._host_wrappers", type(compiled)

rng = np.random.default_rng(3)
x = torch.tensor(rng.standard_normal((4, 8, 16)).astype(np.float32))
w = torch.tensor(rng.standard_normal(16).astype(np.float32))
b = torch.tensor(rng.standard_normal(16).astype(np.float32))
w2 = torch.tensor(rng.standard_normal((8, 16)).astype(np.float32))
r = torch.tensor(rng.standard_normal((4, 8, 16)).astype(np.float32))
LAYER_NORM = {
    "plain": ((x, [16], w, b), {}), "int_shape": ((x, 16, w, b), {}), "size": ((x, x.shape[1:], w2, w2), {}),
    "tuple_no_bias": ((x, (16,), w, None), {}), "no_affine": ((x, [16]), {}), "bias_only": ((x, [16], None, b), {}),
    "keywords": ((x,), {"normalized_shape": [16], "weight": w, "bias": b, "eps": 1e-6}),
    "int_eps": ((x, [16], w, b, 0), {}), "numpy_eps": ((x, [16], w, b, np.float64(1e-3)), {}),
    "bool_eps": ((x, [16], w, b, True), {}), "str_eps": ((x, [16], w, b, "1e-5"), {}),
    "half": ((x.half(), [16]), {}), "double_weight": ((x, [16], w.double(), b), {}),
    "weight_shape": ((x, [16], w2, None), {}), "too_long": ((x, [2, 4, 8, 16]), {}), "empty_shape": ((x, []), {}),
    "none_shape": ((x, None), {}), "float_shape": ((x, [16.0]), {}), "tail": ((x, [8]), {}),
    "extra_positional": ((x, [16], w, b, 1e-5, "more"), {}), "other_keyword": ((x, [16]), {"more": 1}),
    "numpy_input": ((np.zeros((4, 16), np.float32), [16]), {}), "list_input": (([[1.0] * 16], [16]), {}),
    "missing": ((x,), {}), "twice": ((x, [16]), {"input": x}), "empty_input": ((x[:0], [16], w, b), {}),
}
BDA = {
    "plain": (((x, b), r, 0.0, True), {}), "no_bias": (((x, None), r, 0.0, True), {}),
    "evaluation": (((x, b), r, 0.5, False), {}), "dropout": (((x, b), r, 0.1, True), {}),
    "int_prob": (((x, b), r, 0, True), {}), "double": (((x.double(), b.double()), r.double(), 0.0, True), {}),
    "bfloat16_residual": (((x, b), r.bfloat16(), 0.0, True), {}),
    "strided_x": (((x.transpose(0, 1).contiguous().transpose(0, 1), b), r, 0.0, True), {}),
    "other_shapes": (((x, b), r[:2], 0.0, True), {}), "bias_2d": (((x, b.reshape(1, -1)), r, 0.0, True), {}),
    "bias_size": (((x, b[:8]), r, 0.0, True), {}), "empty": (((x[:0], b), r[:0], 0.0, True), {}),
    "number": (((1.0, b), r, 0.0, True), {}), "not_a_pair": ((x, r, 0.0, True), {}),
    "triple": (((x, b, b), r, 0.0, True), {}), "list_pair": (([x, b], r, 0.0, True), {}),
    "keywords": (((x, b),), {"residual": r, "prob": 0.0, "training": True}),
    "missing": (((x, b), r), {}), "unknown": (((x, b), r, 0.0, True), {"more": 1}),
}
w32 = torch.tensor(rng.standard_normal((32, 16)).astype(np.float32))
b32 = torch.tensor(rng.standard_normal(32).astype(np.float32))
off = (False, False, False)
LINEAR = {
    "plain": ((x, w32, b32, *off), {}), "no_bias": ((x, w32, None, *off), {}),
    "two_dims": ((x[0], w32, b32, *off), {}),
    "keywords": ((), {"input": x, "weight": w32, "bias": b32, "gradient_accumulation_fusion": False,
                      "allreduce_dgrad": False, "sequence_parallel": False, "wgrad_deferral_limit": 3}),
    "fusion": ((x, w32, b32, True, False, False), {}), "allreduce": ((x, w32, b32, False, True, False), {}),
    "sequence_parallel": ((x, w32, b32, False, False, True), {}),
    "buffer": ((x, w32, b32, *off), {"grad_output_buffer": []}), "async": ((x, w32, b32, *off, None, 0, True), {}),
    "zero_flag": ((x, w32, b32, 0, 0, 0), {}), "double": ((x.double(), w32.double(), None, *off), {}),
    "one_dim": ((x[0, 0], w32, b32, *off), {}), "columns": ((x, w32[:, :8], None, *off), {}),
    "weight_3d": ((x, w32.reshape(2, 16, 16), None, *off), {}), "empty": ((x[:0], w32, b32, *off), {}),
    "strided": ((x.transpose(0, 1), w32, b32, *off), {}),
    "strided_weight": ((x[..., :8], w32.t()[:8].t(), None, *off), {}),
    "bias_size": ((x, w32, b32[:16], *off), {}), "bias_double": ((x, w32, b32.double(), *off), {}),
    "bias_2d": ((x, w32, b32.reshape(1, 32), *off), {}),
    "numpy": ((np.zeros((4, 16), np.float32), w32, None, *off), {}),
    "missing": ((x, w32, b32), {}), "twice": ((x, w32, b32, *off), {"input": x}),
    "unknown": ((x, w32, b32, *off), {"more": 1}),
    "too_many": ((x, w32, b32, *off, None, 0, None, 1), {}),
}
decided = {}
for kind, table in (("layer_norm", LAYER_NORM), ("bda", BDA), ("linear", LINEAR)):
    for case, (args, kwargs) in table.items():
        seen = []
        for form in forms[kind]:
            calls.clear()
            try:
                form(*args, **kwargs)
                seen.append(list(calls))
            except TypeError as error:
                seen.append(["TypeError"])
        decided[f"{kind}.{case}"] = seen
print(json.dumps(decided))
"""


def test_the_c_wrappers_decide_as_the_python_wrappers() -> None:
    assert host_layer_norm.has_compiled_wrapper()  # built here (setup.py): two forms compared
    assert host_bda.has_compiled_wrapper()
    assert host_linear.has_compiled_wrapper()
    env = subprocess_env(drop=("MINDSPEED_MS_",), MINDSPEED_AI_FRAMEWORK="mindspore")
    decided = json_lines(run_python(sys.executable, "-c", SCRIPT, env=env))[-1]
    assert len(decided) == 45 + 25
    for case, (compiled, python) in decided.items():
        assert compiled == python, case
    taken = {case for case, (compiled, _) in decided.items() if compiled and compiled[0] != "TypeError"
             and compiled[0][0] == "apply"}
    assert taken == {"layer_norm.plain", "layer_norm.int_shape", "layer_norm.size", "layer_norm.tuple_no_bias",
                     "layer_norm.no_affine", "layer_norm.bias_only", "layer_norm.keywords", "layer_norm.int_eps",
                     "layer_norm.numpy_eps", "bda.plain", "bda.no_bias", "bda.evaluation", "bda.int_prob",
                     "bda.keywords", "linear.plain", "linear.no_bias", "linear.two_dims", "linear.keywords",
                     "linear.zero_flag"}
    # the Function's arguments: (input, weight, bias, n, float(eps)) and (x, residual, bias)
    (kind, args, kwargs), = decided["layer_norm.size"][0]
    assert kind == "apply"
    assert args[1] == args[2] != args[0]
    assert args[3:] == ["128", "1e-05"]
    assert not kwargs
    assert decided["layer_norm.int_eps"][0][0][1][-1] == "0.0"
    assert decided["layer_norm.keywords"][0][0][1][-1] == "1e-06"
    (kind, args, _), = decided["bda.no_bias"][0]
    assert kind == "apply"
    assert args[2:] == ["None"]
    assert decided["layer_norm.missing"] == [["TypeError"], ["TypeError"]]
    assert decided["bda.missing"] == [["TypeError"], ["TypeError"]]
    assert decided["bda.dropout"][0][0][0] == "op"
    for case in ("missing", "twice", "unknown", "too_many"):
        assert decided["linear." + case] == [["TypeError"], ["TypeError"]], case
    (kind, args, kwargs), = decided["linear.fusion"][0]  # megatron's function, every argument by keyword
    assert kind == "op"
    assert not args
    assert kwargs["gradient_accumulation_fusion"] == "True"
