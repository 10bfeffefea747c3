"""The default arguments of ``torch.nn.functional`` on our backend are PyTorch's.

A default that differs computes something else for every call that leaves the argument out, silently
(``F.smooth_l1_loss(a, b)`` returned the elementwise losses: MSAdapter's ``reduction`` defaulted to ``'none'``). Both
sides list every public function of ``torch.nn.functional`` that has a Python signature (real PyTorch's, ours after
the adaptor) and their defaults; a default that differs fails unless :data:`SAME_EFFECT` says why it computes the
same. ``torch.*`` functions and ``Tensor`` methods (C builtins in PyTorch: no Python signature) are compared with
PyTorch's operator schemas (``aten::name``, every overload): a default of ours that no overload has fails
(``Tensor.multinomial``'s ``replacement`` defaulted to True)."""

from __future__ import annotations

import json
import sys

from _helpers import reference_python, run_python, subprocess_env

_DUMP = r"""
import inspect, json, sys
if sys.argv[1] == "ours":
    import mindspeed_ms.adaptor  # noqa: F401
import torch
import torch.nn.functional as F
names = json.loads(sys.argv[2])
out = {}
for name in names:
    function = getattr(F, name, None)
    if function is None or not callable(function):
        continue
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        continue
    out[name] = {p.name: repr(p.default) for p in signature.parameters.values() if p.default is not p.empty}
print("RESULT " + json.dumps(out))
"""

_NAMES = r"""
import json, torch.nn.functional as F
print("RESULT " + json.dumps(sorted(n for n in dir(F) if not n.startswith("_") and callable(getattr(F, n)))))
"""

#: (function, parameter): why the other default computes the same
SAME_EFFECT = {
    ("pad", "value"): "None and 0.0 both pad with zeros in constant mode",
    ("grid_sample", "align_corners"): "PyTorch's None means False (with a warning)",
    ("normalize", "eps"): "MSAdapter's signature says 1e-6; nn_edges.normalize_wrapper applies PyTorch's 1e-12 "
                          "(tests/conformance/cases: F.normalize's eps)",
    ("softmax", "dim"): "PyTorch's None picks a legacy implicit dimension (deprecated, with a warning); -1 is the "
                        "same for 2-d inputs, the only ones the field passes without dim",
}


def _result(text: str) -> dict:
    line = next(line for line in text.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]


def test_functional_defaults_are_pytorchs() -> None:
    names = _result(run_python(reference_python(), "-c", _NAMES))
    reference = _result(run_python(reference_python(), "-c", _DUMP, "reference", json.dumps(names)))
    ours = _result(run_python(sys.executable, "-c", _DUMP, "ours", json.dumps(names),
                              env=subprocess_env(MINDSPEED_AI_FRAMEWORK="mindspore")))
    compared = [name for name in reference if name in ours]
    assert len(compared) >= 40, f"only {len(compared)} functions compared: {compared}"
    differing = [f"F.{name}({parameter}=...): PyTorch {value}, ours {ours[name][parameter]}"
                 for name in compared for parameter, value in reference[name].items()
                 if parameter in ours[name] and ours[name][parameter] != value
                 and (name, parameter) not in SAME_EFFECT]
    assert not differing, "defaults differ from PyTorch's: " + "; ".join(differing)


_SCHEMAS = r"""
import json, torch
names = {n for owner in (torch, torch.Tensor) for n in dir(owner) if not n.startswith("_")}
out = {}
for name in sorted(names):
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except RuntimeError:
        continue
    values = {}
    for schema in schemas:
        for argument in schema.arguments:
            if argument.has_default_value():
                values.setdefault(argument.name, set()).add(repr(argument.default_value))
    if values:
        out[name] = {key: sorted(value) for key, value in values.items()}
print("RESULT " + json.dumps(out))
"""

_OURS = r"""
import inspect, json, sys
import mindspeed_ms.adaptor  # noqa: F401
import torch
out = {}
for name in json.loads(sys.argv[1]):
    for kind, owner in (("torch", torch), ("Tensor", torch.Tensor)):
        function = getattr(owner, name, None)
        if function is None or not callable(function):
            continue
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            continue
        out[f"{kind}.{name}"] = {p.name: repr(p.default) for p in signature.parameters.values()
                                 if p.default is not p.empty}
print("RESULT " + json.dumps(out))
"""

#: parameters whose default is spelled differently but means the same everywhere (PyTorch's None: "the usual")
SCHEMA_SAME_PARAMETERS = {"layout": "strided either way", "pin_memory": "False either way on CPU",
                          "device": "the CPU either way"}
#: (op, parameter): why the other spelling computes the same
SCHEMA_SAME_EFFECT = {
    ("nan_to_num", "nan"): "None means 0.0", ("nan_to_num_", "nan"): "None means 0.0",
    ("std", "unbiased"): "None: True unless correction is given", ("var", "unbiased"): "the same",
    ("std_mean", "correction"): "None means 1", ("var_mean", "correction"): "None means 1",
    ("searchsorted", "side"): "None means 'left' unless right=True",
    ("roll", "dims"): "None and [] both roll the flattened tensor",
    ("norm", "p"): "'fro' and 2 agree on vectors and on matrices",
    ("bernoulli", "p"): "None draws with self as the probabilities (p=0.5 is another overload's)",
    ("cdist", "compute_mode"): "None means use_mm_for_euclid_dist_if_necessary",
    ("randperm", "dtype"): "int64 either way",
    ("tril_indices", "dtype"): "int64 either way (PyTorch's dtype=None gives int64 too)",
    ("triu_indices", "dtype"): "int64 either way (PyTorch's dtype=None gives int64 too)",
}


def _same_value(ours: str, theirs: list[str]) -> bool:
    def plain(value: str) -> str:
        return value.strip("'\"")

    for value in theirs:
        if plain(value) == plain(ours):
            return True
        try:
            if float(plain(value)) == float(plain(ours)):
                return True
        except ValueError:
            pass
    return False


def test_torch_function_and_method_defaults_match_pytorchs_schemas() -> None:
    schemas = _result(run_python(reference_python(), "-c", _SCHEMAS))
    ours = _result(run_python(sys.executable, "-c", _OURS, json.dumps(sorted(schemas)),
                              env=subprocess_env(MINDSPEED_AI_FRAMEWORK="mindspore")))
    assert len(ours) >= 150, f"only {len(ours)} functions compared"
    differing = []
    for key, defaults in sorted(ours.items()):
        op = key.partition(".")[2]
        for parameter, value in defaults.items():
            if (parameter not in schemas[op] or parameter in SCHEMA_SAME_PARAMETERS
                    or (op, parameter) in SCHEMA_SAME_EFFECT or _same_value(value, schemas[op][parameter])):
                continue
            differing.append(f"{key}({parameter}=...): ours {value}, PyTorch's overloads {schemas[op][parameter]}")
    assert not differing, "defaults differ from PyTorch's: " + "; ".join(differing)
