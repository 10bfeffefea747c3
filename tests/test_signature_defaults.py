"""The default arguments of ``torch.nn.functional`` on our backend are PyTorch's.

A default that differs computes something else for every call that leaves the argument out, silently
(``F.smooth_l1_loss(a, b)`` returned the elementwise losses: MSAdapter's ``reduction`` defaulted to ``'none'``). Both
sides list every public function of ``torch.nn.functional`` that has a Python signature (real PyTorch's, ours after
the adaptor) and their defaults; a default that differs fails unless :data:`SAME_EFFECT` says why it computes the
same."""

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
