"""The optional C extension ``_host_wrappers``: the per-call tests of :mod:`.host_layer_norm`'s, :mod:`.host_bda`'s and
:mod:`.host_linear`'s wrappers in one C call each (no Python frame), where setup.py built it and it is of this file's
ABI."""

from __future__ import annotations

from typing import Any

try:  # setup.py builds it where it can
    from . import _host_wrappers as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

__all__ = ["HOST_WRAPPERS_ABI", "compiled_module"]

#: The C module's interface this file is written for (``HOST_WRAPPERS_ABI`` in ``_host_wrappers.c``): an older build
#: in a tree built in place is not used
HOST_WRAPPERS_ABI = 2
if _compiled is not None and getattr(_compiled, "ABI", None) != HOST_WRAPPERS_ABI:
    _compiled = None  # type: ignore[assignment]


def compiled_module() -> Any:
    """The ``_host_wrappers`` extension of this file's ABI, or None where it is not built or is an older build."""
    return _compiled
