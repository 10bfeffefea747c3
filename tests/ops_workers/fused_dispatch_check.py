"""With ``MINDSPEED_MS_DEVICE=Ascend`` on a CPU build, call each op's fused path.

Each call must get past MindSpore's argument binding and fail only because the CPU build has no
such kernel (a RuntimeError), which shows the fused calls are spelled as MindSpore expects. On a
real Ascend the calls simply run.
Prints ``<op>: reached kernel`` per op; exits 1 if any op failed otherwise or ran.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable

import mindspore
import numpy as np
from mindspore import Tensor

from mindspeed_ms import ops

REAL_DEVICE = str(mindspore.get_context("device_target"))
#: MindSpore's messages when a CPU build has no implementation of an op (seen with 2.7.1): no kernel
#: ("The kernel RmsNorm unregistered."), no pyboost op ("Not found op ...GmmE on device 1"), or no
#: shape inference (a "Not implement exception" raised from op_func_impl.h's InferShape).
MISSING_KERNEL = re.compile(r"The kernel \S+ unregistered|Not found op \S+ on device|"
                            r"Not implement exception[\s\S]*op_func_impl\.h:\d+ InferShape")
mindspore.runtime.launch_blocking()  # report kernel errors at the failing call, not one op later


def f16(*shape: int) -> Tensor:
    return Tensor(np.random.default_rng(0).random(shape).astype(np.float16))


pairs = Tensor(np.array([[0, 1], [1, 0], [0, 1], [1, 0]], np.int32))
CASES: dict[str, Callable[[], Any]] = {
    "rms_norm": lambda: ops.npu_rms_norm(f16(2, 16), f16(16)),
    "swiglu": lambda: ops.npu_swiglu(f16(2, 16)),
    "rotary_position_embedding": lambda: ops.npu_rotary_position_embedding(
        f16(1, 4, 2, 16), f16(1, 4, 1, 16), f16(1, 4, 1, 16)
    ),
    "gmm": lambda: ops.npu_gmm(f16(6, 16), f16(2, 16, 8), group_list=[3, 6]),
    "moe_token_permute": lambda: ops.npu_moe_token_permute(f16(4, 8), pairs),
    "moe_token_unpermute": lambda: ops.npu_moe_token_unpermute(
        f16(8, 8), Tensor(np.arange(8, dtype=np.int32)), f16(4, 2)
    ),
    "fusion_attention": lambda: ops.npu_fusion_attention(
        f16(1, 4, 32),
        f16(1, 4, 32),
        f16(1, 4, 32),
        2,
        "BSH",
        pse=f16(1, 2, 4, 4),
        atten_mask=Tensor(np.zeros((4, 4), bool)),
        scale=0.25,
    ),
}

bad = []
for name, call in CASES.items():
    assert ops.dispatch_path(name) == "fused", name
    try:
        result = call()
        (result[0] if isinstance(result, tuple) else result).asnumpy()
        if REAL_DEVICE == "CPU":
            bad.append(f"{name}: ran on a CPU build")
        else:  # a real Ascend: the fused kernel exists and ran
            print(f"{name}: reached kernel (ran on {REAL_DEVICE})", flush=True)
    except RuntimeError as exc:
        text = str(exc).strip()
        first = text.splitlines()[0] if text else ""
        # Only MindSpore's missing-implementation errors prove the call was bound and dispatched;
        # any other RuntimeError is the call itself going wrong.
        if MISSING_KERNEL.search(text) and REAL_DEVICE == "CPU":
            print(f"{name}: reached kernel ({first[:80]})", flush=True)
        else:
            bad.append(f"{name}: RuntimeError that is not a missing kernel: {first[:200]}")
    except Exception as exc:  # noqa: BLE001 - any other error means the call itself is wrong
        bad.append(f"{name}: {type(exc).__name__}: {exc}")
print("\n".join(bad) if bad else "ALL REACHED", flush=True)
sys.stdout.flush()
os._exit(1 if bad else 0)
