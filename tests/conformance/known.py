"""Cases known to diverge today, with why. The test of each is a strict xfail: it fails as soon as the case
conforms (then delete the entry). The report lists them as divergent. Fixing one = conform it, or make it a loud
typed error of ours, and remove it from here."""

from __future__ import annotations

KNOWN_DIVERGENT: dict[str, str] = {
    # found by the OpInfo-style cases (conformance/cases/ops_*.py); one line each in /work/notes/conformance_findings.md
    # refusals (conformance/cases/ops_errors.py)
    "ops_autograd_function.grad_fn_edges_skip_non_tensors":
        "MindSpore's graph node of a custom Function has an edge (None, 0) per non-tensor forward argument too "
        "(PyTorch: edges for tensor inputs only); the node is C++ (BackwardNode), not patchable from Python",
}

#: divergent cases whose outcome depends on uninitialised memory (a reduction over an empty tensor returns whatever
#: the output buffer held, sometimes the right 0): a non-strict xfail, since a run can pass by chance. Same rule:
#: delete the entry when the op is fixed.
KNOWN_UNSTABLE: dict[str, str] = {
}

#: OpInfo sweep (scripts/opinfo_sweep.py) divergences known today: fnmatch patterns over its record ids
#: (``<opinfo>[.<variant_test_name>]/<variant>/<dtype|error>/<index>``) -> why; written by the sweep's --write-known
from conformance.known_opinfo import KNOWN_OPINFO  # noqa: E402,F401
