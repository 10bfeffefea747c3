"""Which registry a MindSpeed-compatible manager fills: :class:`ManagerBinding`, and the default one.

A manager class (:mod:`.manager`) and a ``Patch`` a user constructs (:mod:`.patch`) both register
through a binding: MindSpeed's rules for a second replacement, the provider the registration is
attributed to, the registry a provider or the adaptation hands over. The binding keeps the patch
views handed out (one per target and registry) but does not make them: :mod:`.patch` does.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from mindspeed_ms.engine.errors import PatchConflictError
from mindspeed_ms.engine.replacements import NO_REPLACEMENT, is_reference
from mindspeed_ms.engine.sites import caller_site

if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["DEFAULT_MANAGER_NAME", "ManagerBinding", "PatchView", "adds_a_function", "binding_of", "default_binding",
           "wrapper_name"]

#: The provider name registrations made through the manager outside any provider are attributed to.
DEFAULT_MANAGER_NAME = "mindspeed.patch_utils"

# Frames looked through when naming a registration's site: this package's own (reached through list
# methods of ``Patch.wrappers`` too), and the ``register_patch`` overrides of subclasses (MindSpeed-LLM's
# staticmethod forwards to the base's: unchanged code that cannot pass a stacklevel).
_FACADE_MODULES = frozenset({"mindspeed_ms.patch_manager.binding", "mindspeed_ms.patch_manager.manager",
                             "mindspeed_ms.patch_manager.patch", "_collections_abc"})
_FORWARDING_FUNCTIONS = frozenset({"register_patch", "set_patch_func", "wrap_print_new_func"})


def _is_facade(frame: FrameType) -> bool:
    return frame.f_globals.get("__name__") in _FACADE_MODULES or frame.f_code.co_name in _FORWARDING_FUNCTIONS


def adds_a_function(target: str, new_func: Any) -> bool:
    """Whether registering ``new_func`` on ``target`` adds a function to a module under the function's own name.

    MindSpeed's features add functions to megatron's modules this way (its context parallelism registers
    ``megatron.core.parallel_state.get_context_parallel_group_for_send_recv_overlap`` with the function of that
    name, and calls it from megatron's attention): MindSpeed's ``parse_path`` sets a missing module attribute to
    ``None`` and installs the replacement there. Such a registration is taken as ``create_dummy=True`` (created,
    shown as a stub in ``status()``, removed on revert). A missing name that is not the replacement's own (a typo,
    a stale target) stays an error, as does one on a class or on a module not imported yet.
    """
    module_path, _, name = target.rpartition(".")
    if not callable(new_func) or isinstance(new_func, type) or getattr(new_func, "__name__", None) != name:
        return False
    module = sys.modules.get(module_path)
    return isinstance(module, types.ModuleType) and not hasattr(module, name)


def wrapper_name(wrapper: Any) -> str:
    """Return the ``__name__`` MindSpeed matches wrappers by (the attribute name of a lazy reference)."""
    if is_reference(wrapper):
        return str(wrapper).rpartition(":")[2].rpartition(".")[2]
    return str(getattr(wrapper, "__name__", ""))


class PatchView(Protocol):
    """What the binding needs of a patch view it keeps: the registry it views."""

    @property
    def registry(self) -> PatchRegistry: ...


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
        self._views: dict[tuple[int, str], PatchView] = {}
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

    def cached_view(self, registry: PatchRegistry, target: str) -> PatchView | None:
        """Return the patch view of ``target`` in ``registry`` handed out before (the patch module makes them)."""
        view = self._views.get((id(registry), target))
        return view if view is not None and view.registry is registry else None

    def keep_view(self, registry: PatchRegistry, target: str, view: PatchView) -> None:
        """Remember ``view`` as the (one) view of ``target`` in ``registry``."""
        self._views[(id(registry), target)] = view

    def forget_view(self, registry: PatchRegistry, target: str) -> None:
        """Drop the view of ``target`` in ``registry`` (``del patches_info[target]``)."""
        self._views.pop((id(registry), target), None)

    def has_view(self, registry: PatchRegistry, target: str) -> bool:
        """Whether a view of ``target`` in ``registry`` was handed out (an emptied target keeps its key)."""
        return (id(registry), target) in self._views

    def views(self, registry: PatchRegistry) -> list[str]:
        """Return the targets of ``registry`` that have a view (registered or emptied), registry order first."""
        targets = [p.target for p in registry.patches() if not p.is_block]
        known = set(targets)
        targets += [t for (rid, t), v in self._views.items() if rid == id(registry) and t not in known
                    and v.registry is registry]
        return targets

    def register(self, target: str, new_func: Any = None, *, force_patch: bool = False, create_dummy: bool = False,
                 registry: PatchRegistry | None = None, kind: str = "auto", site: str | None = None
                 ) -> PatchRegistry:
        """Register through the engine with MindSpeed's rules; return the registry registered into.

        :func:`~.patch.register_viewed` registers and makes the target's view (what keeps its key in
        ``patches_info``): the manager and ``Patch`` register through it.
        """
        from mindspeed_ms.engine.registry import registry_being_filled

        registry = registry if registry is not None else self.registry()
        site = site or caller_site(skip=_is_facade)
        create_dummy = create_dummy or (kind != "wrap" and adds_a_function(target, new_func))
        if kind != "wrap" and self._replaces(registry, target, new_func, force_patch, site):
            return registry
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
        return registry

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


_DEFAULT = ManagerBinding()


def default_binding() -> ManagerBinding:
    """Return the binding of the default ``MindSpeedPatchesManager``."""
    return _DEFAULT


def binding_of(manager: Any) -> ManagerBinding:
    """Return the binding of ``manager``: the default manager, or a class ``bind_manager`` made (or a subclass)."""
    binding = getattr(manager, "_binding", None)  # set on each class bind_manager makes; subclasses inherit it
    if not isinstance(binding, ManagerBinding):
        raise AttributeError(f"{manager!r} has no manager binding: pass a class mindspeed_ms.patch_manager."
                             f"bind_manager made (or a subclass of one)")
    return binding
