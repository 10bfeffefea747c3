"""The patch engine: registry, apply/revert with rollback, journal, import watcher, target resolution.

Modules: :mod:`.registry` (what is registered, conflicts, provenance, status; a registration checked
by :mod:`.registration`, its all-or-nothing blocks kept by :mod:`.scopes` and the registry being
filled in this context) and :mod:`.applier`
(its applying half: the one install path, resolve -> install -> record, for a batch with rollback and
for a module just imported; revert); :mod:`.patch_record` (the per-target record,
:class:`PatchRecord`; what a replacement is and its name: :mod:`.replacements`), :mod:`.install`
(resolving a target and installing a record there) and
:mod:`.journal` (the install/undo journal of primitive changes); :mod:`.aliases` (the one-pass rebinding of
``from``-imported copies, filtered in C by the optional ``_identity`` extension);
:mod:`.watcher` (the ``sys.meta_path`` import watcher) and
:mod:`.finders` (the one spec lookup); :mod:`.targets` (runtime resolution), :mod:`.static` and
:mod:`.static_index` (resolution by reading sources); :mod:`.signatures`, :mod:`.requirements`,
:mod:`.status` (value objects) and :mod:`.errors`.

Only re-exports live here, loaded on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False

__all__ = ["PatchRegistry", "PatchRecord", "PatchStatus", "ApplyReport", "ImportWatcher"]

_EXPORTS = {
    "PatchRegistry": "mindspeed_ms.engine.registry",
    "PatchRecord": "mindspeed_ms.engine.patch_record",
    "PatchStatus": "mindspeed_ms.engine.status",
    "ApplyReport": "mindspeed_ms.engine.status",
    "ImportWatcher": "mindspeed_ms.engine.watcher",
}

if TYPE_CHECKING:  # pragma: no cover
    from .patch_record import PatchRecord
    from .registry import PatchRegistry
    from .status import ApplyReport, PatchStatus
    from .watcher import ImportWatcher


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mindspeed_ms.engine' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
