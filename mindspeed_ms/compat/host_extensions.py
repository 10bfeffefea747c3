"""The optional C extensions of the host Functions, where setup.py built them and they are of this file's ABIs:

- ``_host_bodies``: the Functions' forward and backward bodies in one C call each (:mod:`.host_linear`,
  :mod:`.host_bda`, :mod:`.host_mlp`, :mod:`.host_layer_norm`, :mod:`.host_attention`: the Python bodies' calls in the
  same order); ``_host_linear`` until round 22;
- ``_host_wrappers``: the per-call tests of :mod:`.host_layer_norm`'s, :mod:`.host_bda`'s and :mod:`.host_linear`'s
  wrappers in one C call each (no Python frame).

An older build in a tree built in place (another ABI) is not used: the Python forms run.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["HOST_BODIES_ABI", "HOST_WRAPPERS_ABI", "bodies_module", "wrappers_module"]

#: The interfaces this file is written for (``HOST_BODIES_ABI`` in ``_host_bodies.c``, ``HOST_WRAPPERS_ABI`` in
#: ``_host_wrappers.c``)
HOST_BODIES_ABI = 1
HOST_WRAPPERS_ABI = 2


def _load(name: str, abi: int) -> Any:
    """The extension ``name`` of this package when built and of interface ``abi``, else None."""
    try:
        module = importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        return None
    return module if getattr(module, "ABI", None) == abi else None


_bodies = _load("_host_bodies", HOST_BODIES_ABI)
_wrappers = _load("_host_wrappers", HOST_WRAPPERS_ABI)


def bodies_module() -> Any:
    """The ``_host_bodies`` extension, or None where it is not built or is an older build."""
    return _bodies


def wrappers_module() -> Any:
    """The ``_host_wrappers`` extension, or None where it is not built or is an older build."""
    return _wrappers
