"""mindspeed_ms.compat.dtype_views: what Tensor.view(dtype) cannot share on this backend is refused, loudly and typed
(the cases PyTorch computes are in tests/conformance/cases/fix_dtype_views.py, against real PyTorch)."""

from __future__ import annotations

import sys

import pytest
from _helpers import run_python, subprocess_env

PROBE = """
import mindspeed_ms.adaptor  # noqa: F401  (first: it installs MSAdapter as torch)
import torch
from mindspeed_ms.compat.errors import UnsupportedOpOptionError

x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
for name, call in (("strided", lambda: x[:, :2].view(torch.int32)), ("to_bfloat16", lambda: x.view(torch.bfloat16)),
                   ("from_bfloat16", lambda: x.bfloat16().view(torch.int16))):
    try:
        call()
        print(name, "returned")
    except UnsupportedOpOptionError as error:
        print(name, "refused", "view(dtype)" in str(error))
print("x unchanged", x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
print("shape view", tuple(x.view(3, 2).shape), tuple(x.view((6,)).shape))
"""


def test_what_cannot_share_memory_here_is_refused_and_shapes_still_view() -> None:
    out = run_python(sys.executable, "-c", PROBE, env=subprocess_env(MINDSPEED_AI_FRAMEWORK="mindspore"))
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines() if not line.startswith("mindspeed_ms:"))
    assert lines["strided"] == "refused True", out
    assert lines["to_bfloat16"] == "refused True", out
    assert lines["from_bfloat16"] == "refused True", out
    assert lines["x"] == "unchanged True", out
    assert lines["shape"] == "view (3, 2) (6,)", out


def test_the_wrapper_passes_shapes_through_untouched() -> None:
    from mindspeed_ms.compat.dtype_views import dtype_view_wrapper

    calls: list[tuple] = []
    wrapped = dtype_view_wrapper(lambda self, *args, **kwargs: calls.append((self, args, kwargs)) or "op")
    assert wrapped("t", 2, 3) == "op"
    assert wrapped("t", (6,)) == "op"
    assert wrapped("t", -1) == "op"
    assert calls == [("t", (2, 3), {}), ("t", ((6,),), {}), ("t", (-1,), {})]
    with pytest.raises(AttributeError):  # a dtype goes to view_as_dtype, which reads the tensor
        wrapped("t", __import__("mindspore").int32)
