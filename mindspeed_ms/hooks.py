"""Import-time application: one ``sys.meta_path`` finder that fires callbacks after a module executes.

wrapt's post-import hooks fire once per module name and cannot be removed. Patching needs more:
a hook must fire again when a module is reloaded or evicted from ``sys.modules`` and imported
anew, and revert must disarm it. So the mechanism here is our own, but keeps wrapt's lessons:
callbacks are copied under a lock and fired outside it, and nothing is imported to arm a hook.
(What wrapt does serve is its ``FunctionWrapper``, used for the call-counting shims in ``patching``.)

The finder asks the other finders for the real spec and wraps only its loader; after the real
``exec_module`` returns it puts the original loader back on the module and its spec (so the module
looks untouched to ``inspect``/``importlib.resources``), then fires the callbacks. That happens
while Python still holds the module's import lock, so no other thread can ``from mod import x``
before the patches are in. Unrelated imports cost one dict lookup.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, Callable

__all__ = ["ImportWatcher", "watcher", "BlockedModuleError"]

Callback = Callable[[ModuleType], None]


class BlockedModuleError(ModuleNotFoundError):
    """Raised on ``import`` of a module that an applied registry blocks."""


class _HookedLoader(Loader):
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


class ImportWatcher(MetaPathFinder):
    """Process-wide finder holding, per module name, the callbacks to fire and the blocks in force.

    Each registry subscribes with a key of its own, so it can disarm exactly its hooks.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watch: dict[str, dict[int, Callback]] = {}
        self._blocked: dict[str, dict[int, str]] = {}

    # -- subscription -------------------------------------------------------------------------
    def watch(self, name: str, key: int, callback: Callback) -> None:
        """Fire ``callback(module)`` each time module ``name`` finishes executing."""
        with self._lock:
            self._watch.setdefault(name, {})[key] = callback
            self._install()

    def unwatch(self, names: Sequence[str], key: int) -> None:
        """Remove the callbacks of ``key`` for ``names``."""
        with self._lock:
            for name in names:
                subscribers = self._watch.get(name)
                if subscribers is not None:
                    subscribers.pop(key, None)
                    if not subscribers:
                        del self._watch[name]
            self._uninstall_if_idle()

    def block(self, name: str, key: int, owner: str) -> None:
        """Make ``import name`` raise :class:`BlockedModuleError` until unblocked."""
        with self._lock:
            self._blocked.setdefault(name, {})[key] = owner
            self._install()

    def unblock(self, names: Sequence[str], key: int) -> None:
        with self._lock:
            for name in names:
                owners = self._blocked.get(name)
                if owners is not None:
                    owners.pop(key, None)
                    if not owners:
                        del self._blocked[name]
            self._uninstall_if_idle()

    def is_blocked(self, name: str) -> bool:
        return name in self._blocked

    def watched(self) -> tuple[str, ...]:
        return tuple(self._watch)

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
            owners = ", ".join(sorted(set(blocked.values())))
            raise BlockedModuleError(f"import of {fullname!r} is blocked by mindspeed_ms registry {owners} "
                                     f"while its patches are applied", name=fullname)
        if fullname not in self._watch:
            return None
        spec = self._real_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _HookedLoader(spec.loader, self, fullname)
        return spec

    def _real_spec(self, fullname: str, path: Sequence[str] | None,
                   target: ModuleType | None) -> ModuleSpec | None:
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                return spec  # type: ignore[no-any-return]
        return None

    def fire(self, name: str, module: ModuleType) -> None:
        """Run the callbacks for ``name`` (outside the lock: they run user code and may import)."""
        with self._lock:
            callbacks: list[Callback] = list(self._watch.get(name, {}).values())
        for callback in callbacks:
            callback(module)


watcher = ImportWatcher()
