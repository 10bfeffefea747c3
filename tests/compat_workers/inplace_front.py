"""Tensor.add_ as the adaptor installs it (the C front of compat/inplace.view_adder_front) against the Python
wrapper behind it, over the view adder's cases (inplace_views.py); print one JSON line. Run in a subprocess with
MINDSPEED_AI_FRAMEWORK=mindspore."""

from __future__ import annotations

import json

import mindspeed_ms.adaptor  # noqa: F401  (first: MindSpore mode, MSAdapter's torch, the providers applied)

# isort: split
import numpy as np
import torch
from inplace_views import _view_adder_pairs


def _front_cases() -> None:
    """Tensor.add_ as installed (the C front, inplace.view_adder_front) and its Python wrapper behind it (``.slow``):
    for every pair, the same result object, the same exception, the same bits of the base."""
    front = torch.Tensor.add_
    results = {"front": type(front).__name__, "dtype": str(getattr(front, "dtype", None))}
    slow = getattr(front, "slow", front)
    # first (a failed kernel of a case below is raised at the next read): keywords go to the Python wrapper,
    # alpha scales, and a bool alpha=False adds nothing (as PyTorch)
    x = torch.zeros(6)[0:3]
    x.add_(torch.ones(3), alpha=2.0)
    flags = torch.ones(3, dtype=torch.bool)
    flags.add_(torch.ones(3, dtype=torch.bool), alpha=False)
    results["alpha"] = x.numpy().tolist()
    results["bool_alpha"] = flags.numpy().tolist()
    for dtype in (np.float32, np.float64, np.float16, np.int32):
        for name, build in _view_adder_pairs(dtype, 11).items():
            outcome = {}
            for label, add in (("front", front), ("slow", slow)):
                try:
                    base, tensor, other = build()
                except Exception as exc:
                    outcome[label] = ("unbuilt", type(exc).__name__)
                    continue
                try:  # (an error of a queued kernel is raised when the base is read)
                    returned = add(tensor, other)
                    done = "self" if returned is tensor else type(returned).__name__
                    outcome[label] = (done, base.numpy().view(f"u{base.numpy().itemsize}").tolist())
                except Exception as exc:
                    outcome[label] = (type(exc).__name__, None)
            results[f"{np.dtype(dtype).name}/{name}"] = outcome
    print(json.dumps({"case": "front", **results}), flush=True)


if __name__ == "__main__":
    _front_cases()
