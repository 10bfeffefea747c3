"""MindSpeed's ``Patch`` object, as a view of one target of a :class:`~mindspeed_ms.PatchRegistry`.

MindSpeed's ``mindspeed.patch_utils.Patch`` holds one target's replacement (``patch_func``), its
wrappers and what applying installed (``orig_func``, ``final_patch_func``, ``is_applied``). Ours
holds nothing of its own: every attribute is read from, and every method acts on, the registry's
record of the target, so what the ecosystem registers through this API is exact, lazy, reverted
from records and visible in ``status()``, ``mindspeed-ms patches``/``verify`` and the pytest plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableSequence
from typing import TYPE_CHECKING, Any, overload

from mindspeed_ms.engine.errors import TargetNotFoundError
from mindspeed_ms.engine.journal import MISSING
from mindspeed_ms.engine.replacements import NO_REPLACEMENT, is_reference, resolve_reference
from mindspeed_ms.engine.targets import parse_target, resolve_target

from .binding import ManagerBinding, binding_of, default_binding, wrapper_name

if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.engine.patch_record import PatchRecord
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["MindSpeedPatch", "Patch", "register_viewed", "split_target", "view_of"]

#: Record states in which a target counts as applied for MindSpeed's ``is_applied`` (armed counts:
#: the patch goes in the moment its module finishes importing).
_APPLIED_STATES = ("applied", "pending-import")


def split_target(orig_func_name: str) -> tuple[str, str | None]:
    """Split a target the way MindSpeed does: ``("pkg.mod.Class", "method")``; ``(name, None)`` without a dot."""
    module_name, _, func_name = orig_func_name.rpartition(".")
    return (module_name, func_name) if module_name else (orig_func_name, None)


def _as_read(raw: Any, owner: Any) -> Any:
    """Return what ``getattr(owner, name)`` gives for the raw value ``raw`` (a staticmethod's function...)."""
    if raw is MISSING:
        return None
    if isinstance(owner, type) and hasattr(type(raw), "__get__"):
        return raw.__get__(None, owner)
    return raw


class _Wrappers(MutableSequence[Any]):
    """``Patch.wrappers``: a live list of the target's registered wraps; changing it changes the registry.

    MindSpeed-LLM's utilities assign ``patches_info[t].wrappers = []``; MindSpeed's own code calls
    ``.clear()``. Both unregister the wraps (an applied target is reverted at once).
    """

    def __init__(self, patch: MindSpeedPatch) -> None:
        self._patch = patch

    def _items(self) -> list[Any]:
        record = self._patch.record
        return [wrap[0] for wrap in record.wraps] if record is not None else []

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: Any) -> Any:
        return self._items()[index]

    def __len__(self) -> int:
        return len(self._items())

    def __setitem__(self, index: Any, value: Any) -> None:
        items = self._items()
        items[index] = value
        self._patch._set_wrappers(items)

    def __delitem__(self, index: Any) -> None:
        items = self._items()
        del items[index]
        self._patch._set_wrappers(items)

    def insert(self, index: int, value: Any) -> None:
        items = self._items()
        items.insert(index, value)
        self._patch._set_wrappers(items)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, (list, tuple, _Wrappers)) else other)

    def __repr__(self) -> str:
        return repr(self._items())


class MindSpeedPatch:
    """One target as MindSpeed's ``Patch`` shows it, backed by a :class:`~mindspeed_ms.PatchRegistry` record.

    Created by the manager (``patches_info[target]``); constructing one directly, as
    ``Patch(orig_func_name, new_func, create_dummy)``, registers ``new_func`` through the default
    manager, as MindSpeed's constructor sets its patch function.

    Attributes (read from the registry): ``orig_module_name``/``orig_func_name`` (the target split
    at its last dot), ``orig_module`` (where it is installed), ``orig_func`` (what was there before),
    ``patch_func`` (the replacement; a lazy ``"pkg.mod:attr"`` reference until applied),
    ``final_patch_func`` (what is installed now), ``wrappers`` (a live list), ``is_applied``.
    """

    def __init__(self, orig_func_name: str, new_func: Any = None, create_dummy: bool = False, *,
                 manager: Any = None) -> None:
        binding = binding_of(manager) if manager is not None else default_binding()
        self._init(binding, binding.registry(), orig_func_name)
        register_viewed(binding, orig_func_name, new_func, force_patch=False, create_dummy=create_dummy)

    def _init(self, binding: ManagerBinding, registry: PatchRegistry, target: str) -> None:
        parse_target(target)
        self._binding = binding
        self._registry = registry
        self.target = target
        self.orig_module_name, self.orig_func_name = split_target(target)

    # -- what the registry holds ------------------------------------------------------------------
    @property
    def record(self) -> PatchRecord | None:
        """The registry's record of this target (``None`` once nothing is registered for it)."""
        return next((p for p in self._registry.patches() if p.target == self.target and not p.is_block), None)

    @property
    def registry(self) -> PatchRegistry:
        """The registry this patch lives in."""
        return self._registry

    def _live_records(self) -> list[Any]:
        record = self.record
        if record is None:
            return []
        return [r for r in record.records if r.alive and r.kind in ("attr", "getattr", "module")]

    @property
    def is_applied(self) -> bool:
        """Whether the target is installed (or armed, waiting for its module) and nothing changed since."""
        record = self.record
        return record is not None and record.state in _APPLIED_STATES and not record.dirty

    @property
    def orig_module(self) -> Any:
        """The module or class the target is installed on (``None`` before it is installed)."""
        records = self._live_records()
        if not records:
            return None
        first = records[0]
        return first.owner if first.kind != "module" else None

    @property
    def orig_func(self) -> Any:
        """What the target held before the patch, as ``getattr`` reads it (``None`` before it is installed)."""
        records = self._live_records()
        if not records:
            return None
        return _as_read(records[0].old, records[0].owner)

    @property
    def final_patch_func(self) -> Any:
        """What the patch installed, as ``getattr`` reads it (``None`` when not installed)."""
        records = self._live_records()
        if not records:
            return None
        return _as_read(records[-1].new, records[-1].owner)

    @property
    def patch_func(self) -> Any:
        """The registered replacement (``None`` when only wrappers are registered)."""
        record = self.record
        if record is None or record.replacement is NO_REPLACEMENT or record.replacement is None:
            return None
        if is_reference(record.replacement) and self.is_applied and self._live_records():
            return resolve_reference(record.replacement, target=self.target)
        return record.replacement

    @property
    def wrappers(self) -> _Wrappers:
        """The registered wrappers, in the order they are applied (a live list)."""
        return _Wrappers(self)

    @wrappers.setter
    def wrappers(self, value: Iterable[Any]) -> None:
        self._set_wrappers(list(value))

    @property
    def create_dummy(self) -> bool:
        record = self.record
        return record is not None and record.create_dummy

    @property
    def orig_func_id(self) -> int:
        return id(self.orig_func)

    @property
    def patch_func_id(self) -> int:
        return id(self.patch_func)

    # -- MindSpeed's methods ----------------------------------------------------------------------
    def set_patch_func(self, new_func: Any, force_patch: bool = False) -> None:
        """Register ``new_func`` here: a wrap if its name ends in ``wrapper``/``decorator``, else the replacement.

        Raises:
            PatchConflictError: another replacement is registered and ``force_patch`` is False.
        """
        register_viewed(self._binding, self.target, new_func, force_patch=force_patch, create_dummy=False,
                               registry=self._registry)

    def apply_patch(self) -> None:
        """Install this target now, before the others (MindSpeed's early ``patches_info[t].apply_patch()``).

        Nothing happens while a provider is registering (providers only register: the target is
        applied with the rest), nor when it is applied already. A target whose module is not imported
        yet is armed and goes in the moment that module finishes importing.

        Raises:
            PatchApplyError: installing it failed; nothing changed.
        """
        from mindspeed_ms.engine.registry import registry_being_filled

        if self.is_applied or self.record is None or registry_being_filled() is self._registry:
            return
        self._registry.apply([self.target])

    def remove_patch(self) -> None:
        """Revert this target and drop its replacement; its wrappers stay registered (as in MindSpeed)."""
        record = self.record
        if record is None:
            return
        if record.replacement is not NO_REPLACEMENT:
            self._registry.unregister_replacement(self.target)  # a placeholder (None) too, not the whole target
        elif record.state not in ("registered", "reverted"):
            self._set_wrappers([wrap[0] for wrap in record.wraps], force=True)

    def remove_wrappers(self, wrapper_names: str | Iterable[str] | None = None) -> None:
        """Unregister the wrappers named ``wrapper_names`` (by ``__name__``), or all of them for ``None``."""
        if wrapper_names is None:
            self._set_wrappers([])
            return
        names = {wrapper_names} if isinstance(wrapper_names, str) else set(wrapper_names)
        self._set_wrappers([wrap for wrap in self.wrappers if wrapper_name(wrap) not in names])

    def _set_wrappers(self, wanted: list[Any], *, force: bool = False) -> None:
        """Make the registered wraps exactly ``wanted``, in order, keeping each kept wrap's site and owner."""
        record = self.record
        current = list(record.wraps) if record is not None else []
        if not force and [wrap[0] for wrap in current] == wanted:
            return
        # keep the longest common prefix registered as it is; unregister the rest, register the tail
        keep = 0
        while not force and keep < min(len(current), len(wanted)) and current[keep][0] is wanted[keep]:
            keep += 1
        with self._registry.transaction():
            for wrap in current[keep:]:
                self._registry.unregister(self.target, wrap[0])
            known = {id(wrap[0]): wrap for wrap in current}
            for wrap in wanted[keep:]:
                old = known.get(id(wrap))
                if old is not None:
                    self._binding.reregister(self._registry, self.target, old)
                else:
                    register_viewed(self._binding, self.target, wrap, force_patch=False, create_dummy=False,
                                           registry=self._registry, kind="wrap")

    # -- MindSpeed's static helper ----------------------------------------------------------------
    @staticmethod
    def parse_path(module_path: str, function_name: str | None, create_dummy: bool) -> tuple[Any, Any]:
        """Import ``module_path`` and return ``(owner, getattr(owner, function_name))``, as MindSpeed does.

        ``module_path`` may name a class (``"pkg.mod.Class"``), read through its module. Unlike
        MindSpeed, nothing is created: a missing attribute with ``create_dummy=True`` gives a
        placeholder function that raises ``NotImplementedError`` (not set anywhere), and without it
        an error with close matches. To add a new attribute on purpose, register it with
        ``create_dummy=True`` (it then shows as a stub in ``status()``).

        Raises:
            TargetNotFoundError: a module or attribute along the path does not exist (a ``LookupError``).
        """
        owner = resolve_target(module_path).raw
        if function_name is None:
            return owner, None
        try:
            return owner, getattr(owner, function_name)
        except AttributeError:
            pass
        try:  # a submodule not imported yet, or a name with close matches to report
            located = resolve_target(f"{module_path}.{function_name}")
        except TargetNotFoundError:
            if not create_dummy:
                raise
            from mindspeed_ms.engine.journal import placeholder

            return owner, placeholder(f"{module_path}.{function_name}", "Patch.parse_path")
        return owner, _as_read(located.raw, owner)

    def __repr__(self) -> str:
        record = self.record
        state = record.state if record is not None else "empty"
        return f"<mindspeed_ms Patch {self.target} {state}>"
Patch = MindSpeedPatch


def view_of(binding: ManagerBinding, registry: PatchRegistry, target: str) -> MindSpeedPatch:
    """Return the (one) :class:`MindSpeedPatch` of ``target`` in ``registry`` for ``binding``; registers nothing."""
    view = binding.cached_view(registry, target)
    if isinstance(view, MindSpeedPatch):
        return view
    view = MindSpeedPatch.__new__(MindSpeedPatch)
    view._init(binding, registry, target)
    binding.keep_view(registry, target, view)
    return view


def register_viewed(binding: ManagerBinding, target: str, new_func: Any, **options: Any) -> MindSpeedPatch:
    """Register through ``binding`` (:meth:`ManagerBinding.register`'s options) and return the target's view.

    The view is made even when the registration changed nothing: it keeps the target's key in ``patches_info``.
    """
    return view_of(binding, binding.register(target, new_func, **options), target)
