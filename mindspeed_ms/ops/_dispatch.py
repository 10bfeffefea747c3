"""Choose, once per device, whether each op runs a fused MindSpore kernel or a composite.

The fused kernels (``ops.rms_norm``, ``ops.flash_attention_score``, ...) exist only on Ascend; the
composites are built from ``mindspore.mint`` / ``mindspore.ops`` primitives that run everywhere.
:func:`dispatch_path` tells which one an op takes; :func:`force_composite` (or the environment
variable ``MINDSPEED_MS_OPS_COMPOSITE=1``) forces the composite, e.g. to test it on Ascend.
An op may still take the composite for inputs its fused kernel does not accept (see each op).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from typing import Callable

from mindspeed_ms.device import device_target

__all__ = ["COMPOSITE_ENV_VAR", "OP_NAMES", "dispatch_path", "force_composite", "clear_dispatch_cache"]

logger = logging.getLogger(__name__)

COMPOSITE_ENV_VAR = "MINDSPEED_MS_OPS_COMPOSITE"


def _has(module: str, name: str) -> Callable[[], bool]:
    def check() -> bool:
        import importlib

        try:
            return hasattr(importlib.import_module(module), name)
        except ImportError:
            return False

    return check


def _never() -> bool:
    return False


# op name -> whether MindSpore offers a fused kernel for it (checked on Ascend only).
_FUSED_KERNELS: dict[str, Callable[[], bool]] = {
    "rms_norm": _has("mindspore.ops", "rms_norm"),
    "swiglu": _has("mindspore.ops", "swiglu"),
    "rotary_position_embedding": _has("mindspore.ops", "rotary_position_embedding"),
    # InplaceMatmulAdd runs in graph mode only, and our ops run in PyNative.
    "matmul_add_fp32": _never,
    "gmm": _has("mindspore.ops.function.math_func", "gmm"),
    "moe_token_permute": _has("mindspore.ops", "moe_token_permute"),
    "moe_token_unpermute": _has("mindspore.ops", "moe_token_unpermute"),
    "fusion_attention": _has("mindspore.ops.operations.nn_ops", "FlashAttentionScore"),
    # MindSpore has no standalone matmul+all-reduce kernel (only one fused with add+rms_norm).
    "matmul_all_reduce": _never,
    "all_gather_matmul": _has("mindspore.ops", "all_gather_matmul"),
    "all_gather_matmul_v2": _has("mindspore.ops", "all_gather_matmul"),
    "matmul_reduce_scatter": _has("mindspore.ops", "matmul_reduce_scatter"),
    "pure_matmul": _never,
}

OP_NAMES = tuple(sorted(_FUSED_KERNELS))

_decisions: dict[str, dict[str, str]] = {}
_forced: contextvars.ContextVar[int] = contextvars.ContextVar("mindspeed_ms_ops_forced", default=0)


def _is_forced() -> bool:
    from mindspeed_ms.engine.environment import read_switch  # a malformed value raises SettingError

    return _forced.get() > 0 or read_switch(COMPOSITE_ENV_VAR)


def dispatch_path(op: str) -> str:
    """Return the path ``op`` takes on this device: ``"fused"`` or ``"composite"``.

    The device decision is made once per device target and cached; forcing (see
    :func:`force_composite`) is checked on every call.

    Args:
        op: one of :data:`OP_NAMES`, e.g. ``"rms_norm"``.

    Returns:
        ``"fused"`` when the op calls a fused MindSpore kernel, ``"composite"`` otherwise.

    Raises:
        ValueError: if ``op`` is not a known op name.
    """
    if op not in _FUSED_KERNELS:
        raise ValueError(f"dispatch_path: unknown op {op!r}; expected one of {', '.join(OP_NAMES)}")
    if _is_forced():
        return "composite"
    device = device_target()
    per_device = _decisions.setdefault(device, {})
    path = per_device.get(op)
    if path is None:
        path = "fused" if device == "Ascend" and _FUSED_KERNELS[op]() else "composite"
        per_device[op] = path
        logger.debug("op %s on %s takes the %s path", op, device, path)
    return path


def clear_dispatch_cache() -> None:
    """Forget every op's cached path decision (with :func:`mindspeed_ms.device.clear_device_cache`, for tests)."""
    _decisions.clear()


@contextlib.contextmanager
def force_composite() -> Iterator[None]:
    """Force every op to its composite path inside the ``with`` block (nestable, per context).

    Yields:
        Nothing.
    """
    token = _forced.set(_forced.get() + 1)
    try:
        yield
    finally:
        _forced.reset(token)
