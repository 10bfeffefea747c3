"""Import-time application: one ``sys.meta_path`` finder that fires callbacks after a module executes.

wrapt's post-import hooks fire once per module name and cannot be removed. Patching needs more:
a hook must fire again when a module is reloaded or evicted from ``sys.modules`` and imported
anew, and revert must disarm it. So the mechanism here is our own, but keeps wrapt's lessons:
callbacks are copied under a lock and fired outside it, and nothing is imported to arm a hook.
(What wrapt does serve is its ``FunctionWrapper``, used for the call-counting shims.)

The finder asks the other finders for the real spec (:func:`.finders.find_spec`) and wraps only
its loader; after the real ``exec_module`` returns it puts the original loader back on the module
and its spec (so the module looks untouched to ``inspect``/``importlib.resources``), then fires the
callbacks. That happens while Python still holds the module's import lock, so no other thread can
``from mod import x`` before the patches are in. Unrelated imports cost one dict lookup.

Other finders that call back into the import system (wrapt's post-import hook finder does) reach
this finder a second time for the same module: a per-thread re-entrancy guard answers ``None``
then, so the loader is wrapped once whichever finder is first. A finder inserted ahead of this one
after it was armed (typeguard-style instrumentation) can import a watched module without asking
it: :meth:`ImportWatcher.catch_up` fires the callbacks for such modules, and runs on the next
import this finder sees and whenever a registry is asked for its status.
"""

from __future__ import annotations

import importlib.util
import sys

# ``threading`` and ``weakref`` are Python wrappers of these C modules; importing the wrappers costs ~2 ms,
# and the adaptor arms this watcher on its PyTorch-mode import path.
from _thread import _local as thread_local
from _thread import allocate_lock
from _weakref import ref as weak_ref
from types import ModuleType

from .errors import BlockedModuleError
from .finders import find_spec as _find_spec

# The adaptor arms this watcher in PyTorch mode (see :meth:`ImportWatcher.when_imported`), where
# importing costs must stay small: ``importlib.abc`` (it pulls ``importlib.resources``, ``tempfile``,
# ``random``...) and ``typing`` are not imported at run time; a finder and a loader need no ABC base.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from typing import Any

    Callback = Callable[[ModuleType], None]

__all__ = ["ImportWatcher", "default_watcher", "BlockedModuleError"]


class _BlockAwareFindSpec:
    """``importlib.util.find_spec`` while modules are blocked: ``None`` for a blocked module.

    A probe ("is apex installed?") asks ``find_spec``; an import asks the finders. The probe must
    hear "no" while the import raises with the block's reason, and ``find_spec`` returns the first
    spec any finder gives, so the answer cannot come from a finder: the function is wrapped while a
    block is in force and put back when the last one is lifted.
    """

    def __init__(self, original: Callable[..., Any], watcher: ImportWatcher) -> None:
        self.original = original
        self.watcher = watcher
        self.__wrapped__ = original
        self.__doc__ = original.__doc__
        self.__name__ = getattr(original, "__name__", "find_spec")

    def __call__(self, name: str, package: str | None = None) -> ModuleSpec | None:
        fullname = importlib.util.resolve_name(name, package) if name.startswith(".") else name
        if self.watcher.is_blocked(fullname) or self.watcher.is_blocked(fullname.partition(".")[0]):
            return None
        return self.original(name, package)  # type: ignore[no-any-return]  # typed as any callable


def _is_initializing(module: ModuleType) -> bool:
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class _HookedLoader:
    """Delegate to the real loader, then fire the watcher's callbacks for the module."""

    def __init__(self, loader: Any, watcher: ImportWatcher, name: str) -> None:
        self._loader = loader
        self._watcher = watcher
        self._name = name

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        spec = getattr(module, "__spec__", None)
        if spec is not None and spec.loader is self:
            spec.loader = self._loader
        self._watcher.fire(self._name, module)

    def __getattr__(self, name: str) -> Any:
        # get_source, is_package, get_resource_reader ... of the real loader.
        return getattr(self._loader, name)


class ImportWatcher:
    """A finder holding, per module name, the callbacks to fire and the blocks in force.

    Each registry subscribes with a key of its own, so it can disarm exactly its hooks. One
    process-wide instance (:data:`watcher`) serves the default registries; a registry can be given
    its own.
    """

    #: Tells :func:`.finders.find_spec` that this finder only delegates to the others.
    is_import_watcher = True

    def __init__(self) -> None:
        self._lock = allocate_lock()
        self._watch: dict[str, dict[int, Callback]] = {}
        self._blocked: dict[str, dict[int, str]] = {}
        # module name -> the module object the callbacks last ran for (or that was there when armed)
        self._seen: dict[str, weak_ref[ModuleType]] = {}
        self._local = thread_local()
        # watched namespace packages found but not yet seen: they have no loader to wrap (the import system
        # makes one after find_spec) and execute nothing, so they count as executed once in sys.modules
        self._namespaces: set[str] = set()

    # -- subscription -------------------------------------------------------------------------
    def watch(self, name: str, key: int, callback: Callback) -> None:
        """Fire ``callback(module)`` each time module ``name`` finishes executing."""
        with self._lock:
            subscribers = self._watch.get(name)
            if subscribers is None:
                self._watch[name] = {key: callback}
            else:
                subscribers[key] = callback
            if name not in self._seen:
                current = sys.modules.get(name)
                if current is not None:
                    self._remember(name, current)
            meta_path = sys.meta_path
            if not meta_path or meta_path[0] is not self:  # first already: the usual case, told without a call
                self._install()

    def when_imported(self, name: str, callback: Callback) -> Callable[[], None]:
        """Call ``callback(module)`` once, when module ``name`` finishes executing; at once if it is imported.

        The generic "run this when that module is there" hook (wrapt's post-import hook, once): the
        adaptation defers PyTorch mode's work on ``megatron`` with it, so that importing the adaptor
        imports nothing. A module in ``sys.modules`` counts as imported, even while it executes.

        Args:
            name: the module's dotted name.
            callback: called with the module, outside the watcher's lock.

        Returns:
            A function that cancels the call if it has not happened yet (idempotent).
        """
        current = sys.modules.get(name)
        if current is not None:
            callback(current)
            return _nothing
        pending = [callback]  # emptied by whichever of firing and cancelling comes first

        def once(module: ModuleType) -> None:
            self.unwatch([name], key)
            try:
                fire = pending.pop()
            except IndexError:  # another thread fired or cancelled it
                return
            fire(module)

        def cancel() -> None:
            pending.clear()
            self.unwatch([name], key)

        key = id(once)  # unique while subscribed: the watcher holds ``once``
        self.watch(name, key, once)
        return cancel

    def unwatch(self, names: Sequence[str], key: int) -> None:
        """Remove the callbacks of ``key`` for ``names``."""
        with self._lock:
            for name in names:
                subscribers = self._watch.get(name)
                if subscribers is not None:
                    subscribers.pop(key, None)
                    if not subscribers:
                        del self._watch[name]
                        self._seen.pop(name, None)
            self._uninstall_if_idle()

    def block(self, name: str, key: int, owner: str) -> None:
        """Make ``import name`` raise :class:`BlockedModuleError` until unblocked."""
        with self._lock:
            self._blocked.setdefault(name, {})[key] = owner
            self._install()
            current = importlib.util.find_spec
            if not (isinstance(current, _BlockAwareFindSpec) and current.watcher is self):
                importlib.util.find_spec = _BlockAwareFindSpec(current, self)

    def unblock(self, names: Sequence[str], key: int) -> None:
        with self._lock:
            for name in names:
                owners = self._blocked.get(name)
                if owners is not None:
                    owners.pop(key, None)
                    if not owners:
                        del self._blocked[name]
            current = importlib.util.find_spec
            if not self._blocked and isinstance(current, _BlockAwareFindSpec) and current.watcher is self:
                importlib.util.find_spec = current.original
            self._uninstall_if_idle()

    def is_blocked(self, name: str) -> bool:
        return name in self._blocked

    def watched(self) -> tuple[str, ...]:
        return tuple(self._watch)

    def mark_seen(self, name: str, module: ModuleType) -> None:
        """Tell the watcher that ``module`` in ``sys.modules[name]`` was put there on purpose (a patch)."""
        with self._lock:
            if name in self._watch:
                self._remember(name, module)

    def _remember(self, name: str, module: ModuleType) -> None:
        try:
            self._seen[name] = weak_ref(module)
        except TypeError:  # a module stand-in that takes no weak references
            self._seen.pop(name, None)

    def _install(self) -> None:
        # First on meta_path, and again first if another finder (MSAdapter's redirect finder, say)
        # was inserted ahead of us since: we delegate to the others anyway.
        meta_path = sys.meta_path
        if not meta_path or meta_path[0] is not self:
            if self in meta_path:
                meta_path.remove(self)
            meta_path.insert(0, self)

    def _uninstall_if_idle(self) -> None:
        if not self._watch and not self._blocked and self in sys.meta_path:
            sys.meta_path.remove(self)

    # -- the finder -----------------------------------------------------------------------------
    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        blocked = self._blocked.get(fullname)
        if blocked:
            owners = sorted(set(blocked.values()))
            raise BlockedModuleError(f"import of {fullname!r} is blocked by mindspeed_ms registry "
                                     f"{', '.join(owners)} while its patches are applied", name=fullname,
                                     owners=owners)
        if self._watch and sys.meta_path and sys.meta_path[0] is not self:
            # A finder was put ahead of us: it may have imported a watched module without us.
            with self._lock:
                self._install()
            self.catch_up()
        if self._namespaces:
            self._fire_namespaces()
        if fullname not in self._watch:
            return None
        busy: set[str] | None = getattr(self._local, "busy", None)
        if busy is None:
            busy = self._local.busy = set()
        if fullname in busy:
            return None  # a finder we asked called back into the import system
        busy.add(fullname)
        try:
            spec = _find_spec(fullname, path, target, accept=lambda finder: finder is not self)
        finally:
            busy.discard(fullname)
        if spec is not None and spec.loader is None and spec.submodule_search_locations is not None:
            with self._lock:
                self._namespaces.add(fullname)  # fired by the next import this finder sees, or by catch_up()
            return spec
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        if not isinstance(spec.loader, _HookedLoader) or spec.loader._watcher is not self:
            # a loader by protocol: subclassing importlib.abc.Loader would import importlib.resources (see above)
            spec.loader = _HookedLoader(spec.loader, self, fullname)  # type: ignore[assignment]
        return spec

    def _fire_namespaces(self) -> None:
        """Fire the callbacks of the watched namespace packages that are in ``sys.modules`` by now."""
        with self._lock:
            ready = [(name, sys.modules[name]) for name in self._namespaces if name in sys.modules]
            self._namespaces.difference_update(name for name, _ in ready)
            seen = {name: self._seen.get(name) for name, _ in ready}
        for name, module in ready:
            reference = seen[name]
            if reference is None or reference() is not module:  # catch_up() may have fired it already
                self.fire(name, module)

    def fire(self, name: str, module: ModuleType) -> None:
        """Run the callbacks for ``name`` (outside the lock: they run user code and may import)."""
        with self._lock:
            callbacks: list[Callback] = list(self._watch.get(name, {}).values())
            self._remember(name, module)
        for callback in callbacks:
            callback(module)

    def catch_up(self) -> None:
        """Fire the callbacks of watched modules that were imported without asking this finder."""
        if not self._watch:
            return
        missed: list[tuple[str, ModuleType]] = []
        with self._lock:
            modules = sys.modules
            seen_now = self._seen
            for name in self._watch:
                module = modules.get(name)
                if module is None:
                    continue
                seen = seen_now.get(name)
                # a module seen already is the usual case: told before asking whether it is still executing
                if (seen is None or seen() is not module) and not _is_initializing(module):
                    missed.append((name, module))
        for name, module in missed:
            self.fire(name, module)


def _nothing() -> None:
    """Cancel a call that already happened."""


_default = ImportWatcher()


def default_watcher() -> ImportWatcher:
    """Return the process's import watcher: the one registries and adaptations use unless given their own."""
    return _default
