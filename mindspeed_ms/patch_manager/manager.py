"""MindSpeed's ``MindSpeedPatchesManager``, backed by a :class:`~mindspeed_ms.PatchRegistry`.

MindSpeed's manager is a class whose staticmethods fill a class-level ``patches_info`` dict; the
ecosystem calls them on the class (``MindSpeedPatchesManager.register_patch(...)``) and subclasses
it (MindSpeed-LLM's ``MindSporeAdaptation`` overrides ``register_patch`` as a staticmethod that
calls the base's). To keep those calls working unchanged, a manager here is also a class, made by
:func:`bind_manager` around a :class:`ManagerBinding` that says which registry it fills; the state
lives in that registry, so each test can bind a manager to a fresh one.

The default :data:`MindSpeedPatchesManager` fills the registry a provider is registering into
(``mindspeed-ms patches``/``verify`` list it), else the one the adaptation handed over when it
executed (the registry it applies in its mode: the default one in MindSpore mode, PyTorch mode's in
PyTorch mode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from types import FrameType
from typing import TYPE_CHECKING, Any

from mindspeed_ms.engine.errors import PatchConflictError, TargetNotFoundError
from mindspeed_ms.engine.patch_record import NO_REPLACEMENT
from mindspeed_ms.engine.sites import caller_site
from mindspeed_ms.engine.targets import suggest

from .errors import WrapperNotFoundError
from .patch import MindSpeedPatch, patch_view, wrapper_name

if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["DEFAULT_MANAGER_NAME", "ManagerBinding", "PatchesInfo", "WrapperNotFoundError", "bind_manager",
           "binding_of", "default_binding", "MindSpeedPatchesManager"]

#: The provider name registrations made through the manager outside any provider are attributed to.
DEFAULT_MANAGER_NAME = "mindspeed.patch_utils"

# Frames looked through when naming a registration's site: this package's own (reached through list
# methods of ``Patch.wrappers`` too), and the ``register_patch`` overrides of subclasses (MindSpeed-LLM's
# staticmethod forwards to the base's: unchanged code that cannot pass a stacklevel).
_FACADE_MODULES = frozenset({"mindspeed_ms.patch_manager.manager", "mindspeed_ms.patch_manager.patch",
                             "_collections_abc"})
_FORWARDING_FUNCTIONS = frozenset({"register_patch", "set_patch_func", "wrap_print_new_func"})


def _is_facade(frame: FrameType) -> bool:
    return frame.f_globals.get("__name__") in _FACADE_MODULES or frame.f_code.co_name in _FORWARDING_FUNCTIONS


class ManagerBinding:
    """Which registry a manager class fills, under which provider name, and the patch views it handed out.

    Args:
        registry: the registry to fill; ``None``: the one a provider is filling, else the one the
            adaptation handed over (see :meth:`registry`).
        name: the provider name of registrations made outside any provider.
    """

    def __init__(self, registry: PatchRegistry | None = None, name: str = DEFAULT_MANAGER_NAME) -> None:
        self._registry = registry
        self.name = name
        self._views: dict[tuple[int, str], MindSpeedPatch] = {}
        #: provider names registrations went in under, per registry (what remove_patches() withdraws)
        self._providers: dict[int, set[str]] = {}
        self._handed: Callable[[], PatchRegistry] | None = None
        self._own: PatchRegistry | None = None

    def registry(self) -> PatchRegistry:
        """Return the registry registrations go to now.

        The bound one; else the one a provider is filling in this context; else the one the adaptation
        handed over (:meth:`hand_over`: the registry it applies in its mode, once it executed); else a
        registry of this binding's own, named after it.
        """
        if self._registry is not None:
            return self._registry
        from mindspeed_ms.engine.registry import PatchRegistry, registry_being_filled

        filling = registry_being_filled()
        if filling is not None:  # not `or`: an empty registry is falsy
            return filling
        if self._handed is not None:
            return self._handed()
        if self._own is None:
            self._own = PatchRegistry(name=self.name)
        return self._own

    def hand_over(self, registry: Callable[[], PatchRegistry] | None) -> Callable[[], PatchRegistry] | None:
        """Fill ``registry()`` when no provider is filling one (None: take it back); return what was handed before.

        The adaptation hands over the registry it applies in its mode when it executes, so MindSpeed's
        module-level ``register_patch`` calls land beside its own patches (one status, one revert).
        """
        previous, self._handed = self._handed, registry
        return previous

    def view(self, registry: PatchRegistry, target: str) -> MindSpeedPatch:
        """Return the (one) patch view of ``target`` in ``registry``."""
        key = (id(registry), target)
        view = self._views.get(key)
        if view is None or view.registry is not registry:
            view = self._views[key] = patch_view(self, registry, target)
        return view

    def views(self, registry: PatchRegistry) -> list[str]:
        """Return the targets of ``registry`` that have a view (registered or emptied), registry order first."""
        targets = [p.target for p in registry.patches() if not p.is_block]
        known = set(targets)
        targets += [t for (rid, t), v in self._views.items() if rid == id(registry) and t not in known
                    and v.registry is registry]
        return targets

    def register(self, target: str, new_func: Any = None, *, force_patch: bool = False, create_dummy: bool = False,
                 registry: PatchRegistry | None = None, kind: str = "auto", site: str | None = None
                 ) -> MindSpeedPatch:
        """Register through the engine with MindSpeed's rules; return the target's view."""
        from mindspeed_ms.engine.filling import registry_being_filled

        registry = registry if registry is not None else self.registry()
        site = site or caller_site(skip=_is_facade)
        if kind != "wrap" and self._replaces(registry, target, new_func, force_patch, site):
            return self.view(registry, target)
        if registry_being_filled() is registry:
            # inside a provider: the registration is that provider's
            record = registry.register(target, new_func, force_patch=force_patch, create_dummy=create_dummy,
                                       kind=kind, site=site)
            self._providers.setdefault(id(registry), set()).add(record.sites[-1][1] or self.name)
        else:
            with registry.provider(self.name):
                registry.register(target, new_func, force_patch=force_patch, create_dummy=create_dummy, kind=kind,
                                  site=site)
            self._providers.setdefault(id(registry), set()).add(self.name)
        return self.view(registry, target)

    @staticmethod
    def _replaces(registry: PatchRegistry, target: str, new_func: Any, force_patch: bool, site: str) -> bool:
        """Apply MindSpeed's ``set_patch_func`` rule where it differs from the engine's; return whether it did all.

        MindSpeed keeps one ``patch_func`` per target, a placeholder (``new_func=None``) included: a second
        one without ``force_patch`` is a conflict, whichever comes first; forcing ``None`` over it drops it
        (the original comes back under the wrappers). A built-in fallback of ours is not MindSpeed's
        ``patch_func``: the engine's rules hold there.

        Raises:
            PatchConflictError: a replacement or placeholder is registered and ``force_patch`` is False.
        """
        if wrapper_name(new_func).endswith(("wrapper", "decorator")) and new_func is not None:
            return False
        record = next((p for p in registry.patches() if p.target == target and not p.is_block), None)
        if record is None or record.replacement is NO_REPLACEMENT or record.replacement_fallback:
            return False
        if record.replacement is new_func and not (new_func is None and force_patch):
            return False  # the same replacement again changes nothing
        if not force_patch:
            current = "a placeholder (new_func=None)" if record.replacement is None else repr(record.replacement)
            wanted = "a placeholder (new_func=None)" if new_func is None else repr(new_func)
            raise PatchConflictError(
                f"{target!r} already has {current} registered at {record.replacement_site}; the registration "
                f"at {site} wants {wanted}. Pass force_patch=True to replace it (MindSpeed raises "
                f"'the patch of ... exist' here too)", target=target,
                sites=(record.replacement_site or "?", site))
        if new_func is None:
            registry.unregister_replacement(target)
            return True
        return False

    def reregister(self, registry: PatchRegistry, target: str, wrap: tuple[Any, str, str | None, tuple[str, ...]]
                   ) -> None:
        """Register a wrap again exactly as it was (same site, provider and requirements)."""
        func, site, provider, requires = wrap
        if provider is None:
            registry.register(target, func, kind="wrap", requires=requires, site=site)
            return
        with registry.provider(provider):
            registry.register(target, func, kind="wrap", requires=requires, site=site)

    def remove_wrappers(self, orig_func_name: str, wrappers_name: Any, remove_check: bool = True) -> None:
        registry = self.registry()
        if orig_func_name not in registry and (id(registry), orig_func_name) not in self._views:
            close = suggest(orig_func_name, [p.target for p in registry.patches()])
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise TargetNotFoundError(f"remove_wrappers: nothing is registered for {orig_func_name!r}{hint}",
                                      target=orig_func_name, missing=orig_func_name, suggestions=close)
        patch = self.view(registry, orig_func_name)
        before = [wrapper_name(w) for w in patch.wrappers]
        patch.remove_wrappers(wrappers_name)
        if remove_check and len(patch.wrappers) == len(before):
            names = (wrappers_name,) if isinstance(wrappers_name, str) else tuple(wrappers_name or ())
            raise WrapperNotFoundError(
                f"remove_wrappers({orig_func_name!r}, {wrappers_name!r}) removed nothing: the wrappers registered "
                f"there are {before or 'none'}; pass remove_check=False if that is expected",
                target=orig_func_name, names=names, registered=tuple(before))

    def remove_patches(self) -> None:
        """Revert and unregister what was registered through this manager (other registrations stay).

        As in MindSpeed, ``patches_info`` keeps the targets: their patches are empty (no ``patch_func``,
        no wrappers, not applied) until something is registered there again.
        """
        registry = self.registry()
        for name in sorted(self._providers.pop(id(registry), set())):
            registry.withdraw_provider(name)
        # MindSpeed keeps the keys of patches_info (each Patch emptied): the views stay, empty

    def apply_patches(self) -> None:
        self.registry().apply()


class PatchesInfo(MutableMapping[str, MindSpeedPatch]):
    """``patches_info``: target -> :class:`MindSpeedPatch`, a live view of the manager's registry.

    Every target of the registry is listed (the built-in providers' too: one engine, one list).
    ``del``/``pop`` unregisters a target (reverting it if applied); entries cannot be assigned:
    register them with ``register_patch``.
    """

    def __init__(self, binding: ManagerBinding) -> None:
        self._binding = binding

    def __getitem__(self, target: str) -> MindSpeedPatch:
        registry = self._binding.registry()
        if not isinstance(target, str) or target not in self._binding.views(registry):
            raise KeyError(target)
        return self._binding.view(registry, target)

    def __setitem__(self, target: str, value: Any) -> None:
        raise TypeError(f"patches_info[{target!r}] cannot be assigned: register the replacement with "
                        f"register_patch({target!r}, new_func)")

    def __delitem__(self, target: str) -> None:
        registry = self._binding.registry()
        if target not in self._binding.views(registry):
            raise KeyError(target)
        if target in registry:
            registry.unregister(target)
        self._binding._views.pop((id(registry), target), None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._binding.views(self._binding.registry()))

    def __len__(self) -> int:
        return len(self._binding.views(self._binding.registry()))

    def __contains__(self, target: object) -> bool:
        return isinstance(target, str) and target in self._binding.views(self._binding.registry())

    def __repr__(self) -> str:
        return f"<patches_info of {self._binding.registry()!r}>"


def bind_manager(registry: PatchRegistry | None = None, *, name: str = DEFAULT_MANAGER_NAME) -> type:
    """Return a ``MindSpeedPatchesManager``-compatible class that fills ``registry``.

    Args:
        registry: the registry to fill; ``None``: the one a provider is filling, else the default one.
        name: the provider name of registrations made outside any provider (shown in ``status()``).

    Returns:
        A class with MindSpeed's staticmethods (``register_patch``, ``remove_wrappers``,
        ``remove_patches``, ``apply_patches``) and ``patches_info``; subclass it as MindSpeed-LLM does.
    """
    return _manager_class(ManagerBinding(registry, name))


def _manager_class(binding: ManagerBinding) -> type:
    class MindSpeedPatchesManager:
        """MindSpeed's patch manager on a mindspeed_ms registry (see :mod:`mindspeed_ms.patch_manager`)."""

        _binding = binding
        patches_info = PatchesInfo(binding)

        @staticmethod
        def register_patch(orig_func_name: str, new_func: Any = None, force_patch: bool = False,
                           create_dummy: bool = False) -> None:
            """Register ``new_func`` for ``orig_func_name``; nothing is imported or patched until applied.

            A ``new_func`` whose name ends in ``wrapper``/``decorator`` is stacked as a wrapper; any
            other replaces the target (a second one needs ``force_patch=True``). ``new_func`` may be
            a lazy ``"pkg.mod:attr"`` reference, imported when the patch is installed. ``None``
            installs a placeholder raising ``NotImplementedError``. ``create_dummy=True`` creates
            missing modules and the attribute on purpose (shown as a stub in ``status()``).

            Raises:
                PatchValidationError: malformed target or replacement (a ``ValueError``).
                PatchConflictError: another replacement is registered and ``force_patch`` is False.
            """
            binding.register(orig_func_name, new_func, force_patch=force_patch, create_dummy=create_dummy)

        @staticmethod
        def remove_wrappers(orig_func_name: str, wrappers_name: Any, remove_check: bool = True) -> None:
            """Unregister the wrappers named ``wrappers_name`` of ``orig_func_name``.

            Raises:
                TargetNotFoundError: nothing is registered for ``orig_func_name``.
                WrapperNotFoundError: nothing was removed and ``remove_check`` is True.
            """
            binding.remove_wrappers(orig_func_name, wrappers_name, remove_check)

        @staticmethod
        def remove_patches() -> None:
            """Revert and unregister everything registered through this manager (exactly, from records)."""
            binding.remove_patches()

        @staticmethod
        def apply_patches() -> None:
            """Apply every registered patch (lazily: targets not imported yet go in on import)."""
            binding.apply_patches()

        @staticmethod
        def registry() -> PatchRegistry:
            """Return the registry this manager fills now (mindspeed_ms's addition)."""
            return binding.registry()

    return MindSpeedPatchesManager


_DEFAULT = ManagerBinding()


def default_binding() -> ManagerBinding:
    """Return the binding of the default :data:`MindSpeedPatchesManager`."""
    return _DEFAULT


def binding_of(manager: Any) -> ManagerBinding:
    """Return the binding of ``manager``: the default manager, or a class :func:`bind_manager` made."""
    return manager._binding


#: The default manager: fills the registry a provider is filling, else the one the adaptation handed over.
MindSpeedPatchesManager: Any = _manager_class(_DEFAULT)
