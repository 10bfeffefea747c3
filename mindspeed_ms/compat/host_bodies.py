"""The optional C extension ``_host_bodies``: the host Functions' forward and backward bodies in one C call each
(:mod:`.host_linear`, :mod:`.host_bda`, :mod:`.host_mlp`, :mod:`.host_layer_norm`, :mod:`.host_attention`: the Python
bodies' calls in the same order), where setup.py built it and it is of this file's ABI. It was ``_host_linear`` until
round 22 (its linear wrapper is :mod:`.host_wrappers`' now)."""

from __future__ import annotations

from typing import Any

try:  # setup.py builds it where it can
    from . import _host_bodies as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

__all__ = ["HOST_BODIES_ABI", "compiled_module"]

#: The C module's interface this file is written for (``HOST_BODIES_ABI`` in ``_host_bodies.c``): an older build in a
#: tree built in place is not used
HOST_BODIES_ABI = 1
if _compiled is not None and getattr(_compiled, "ABI", None) != HOST_BODIES_ABI:
    _compiled = None  # type: ignore[assignment]


def compiled_module() -> Any:
    """The ``_host_bodies`` extension of this file's ABI, or None where it is not built or is an older build."""
    return _compiled
