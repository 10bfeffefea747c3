"""Which device MindSpore computes on, read once and lazily.

Patch providers use :func:`is_ascend` to register CPU-only or Ascend-only patches, and
:mod:`mindspeed_ms.ops` uses it to choose between fused kernels and composites. Importing this
module does not import MindSpore; the first call to :func:`device_target` does.

The environment variable ``MINDSPEED_MS_DEVICE`` (``CPU``, ``Ascend`` or ``GPU``, any case)
overrides what MindSpore's context says, e.g. to inspect the Ascend patch set on a CPU machine.
"""

from __future__ import annotations

import logging
import os

__all__ = ["DEVICE_ENV_VAR", "UNKNOWN", "device_target", "is_ascend", "clear_device_cache"]

logger = logging.getLogger(__name__)

DEVICE_ENV_VAR = "MINDSPEED_MS_DEVICE"
#: What :func:`device_target` says when MindSpore is not installed (listing and static verification
#: run without it): neither the CPU-only nor the Ascend-only patches are registered then.
UNKNOWN = "unknown"

_KNOWN = {"cpu": "CPU", "ascend": "Ascend", "npu": "Ascend", "gpu": "GPU"}
_cached: str | None = None


def _normalise(name: str, source: str) -> str:
    canonical = _KNOWN.get(name.strip().lower())
    if canonical is None:
        raise ValueError(
            f"device target {name!r} from {source} is not one of CPU, Ascend, GPU; "
            f"set {DEVICE_ENV_VAR} to one of those or unset it"
        )
    return canonical


def device_target() -> str:
    """Return the device MindSpore computes on: ``"CPU"``, ``"Ascend"``, ``"GPU"``, or ``"unknown"``.

    ``"unknown"`` (:data:`UNKNOWN`) means MindSpore is not installed and ``MINDSPEED_MS_DEVICE`` is
    not set (e.g. ``mindspeed-ms patches`` on a core-only install).

    The value is read once (from ``MINDSPEED_MS_DEVICE`` if set, else from
    ``mindspore.get_context("device_target")``) and cached; :func:`clear_device_cache` forgets it.

    Returns:
        The canonical device name.

    Raises:
        ValueError: if ``MINDSPEED_MS_DEVICE`` or MindSpore's context names an unknown device.
    """
    global _cached
    if _cached is None:
        override = os.environ.get(DEVICE_ENV_VAR)
        if override:
            _cached = _normalise(override, f"${DEVICE_ENV_VAR}")
        else:
            try:
                import mindspore
            except ImportError:
                logger.info("MindSpore is not installed: device target unknown (set %s to choose one)",
                            DEVICE_ENV_VAR)
                _cached = UNKNOWN
                return _cached
            _cached = _normalise(str(mindspore.get_context("device_target")), "MindSpore's context")
        logger.debug("device target: %s", _cached)
    return _cached


def is_ascend() -> bool:
    """Return whether MindSpore computes on an Ascend NPU.

    Returns:
        ``True`` when :func:`device_target` is ``"Ascend"``.
    """
    return device_target() == "Ascend"


def clear_device_cache() -> None:
    """Forget the cached device so that the next :func:`device_target` call reads it again."""
    global _cached
    _cached = None
