"""Whether every module's output is being recorded now, so that fused host paths call the modules they fuse.

A parity capture (:mod:`mindspeed_ms.parity.capture`, a layer above this package) records the output of every module
during the model's first forward. A faster path that computes several modules in one step without calling them
(megatron's core attention without its softmax and dropout modules: :mod:`.host_attention`; the MLP without its two
linear layers: :mod:`.host_mlp`) steps aside while that recording runs (:func:`expects_module_calls`), so that the
comparison sees every module's output. The flag lives here, below both, so that the compat package never imports the
parity layer (``lint-imports``' layer contract).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["expects_module_calls", "recording_module_outputs", "set_recording_module_outputs"]

_RECORDING = [False]


def recording_module_outputs() -> bool:
    """Whether a capture is recording every module's output now (during the model's first forward)."""
    return _RECORDING[0]


def set_recording_module_outputs(recording: bool) -> None:
    """Say whether a capture records every module's output from now on (the parity capture's first forward)."""
    _RECORDING[0] = bool(recording)


def expects_module_calls(*modules: Any) -> bool:
    """Whether someone expects ``modules`` to be called: forward hooks or pre-hooks on one of them or on every module
    (MSAdapter's global ones), or a capture recording every module's output (:func:`recording_module_outputs`). A
    fused host path that would compute them without calling them steps aside then."""
    hooks = _hooks()
    if _RECORDING[0] or hooks._global_forward_hooks or hooks._global_forward_pre_hooks:
        return True
    for module in modules:
        if module._forward_hooks or module._forward_pre_hooks:
            return True
    return False


@functools.lru_cache(maxsize=1)
def _hooks() -> Any:
    """MSAdapter's module of the global forward hooks (imported on first use: MSAdapter must be importable)."""
    import msadapter.nn.modules.module as hooks

    return hooks
