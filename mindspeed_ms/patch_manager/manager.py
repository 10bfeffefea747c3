"""MindSpeed's ``MindSpeedPatchesManager``, backed by a :class:`~mindspeed_ms.PatchRegistry`.

MindSpeed's manager is a class whose staticmethods fill a class-level ``patches_info`` dict; the
ecosystem calls them on the class (``MindSpeedPatchesManager.register_patch(...)``) and subclasses
it (MindSpeed-LLM's ``MindSporeAdaptation`` overrides ``register_patch`` as a staticmethod that
calls the base's). To keep those calls working unchanged, a manager here is also a class, made by
:func:`bind_manager` around a :class:`~.binding.ManagerBinding` that says which registry it fills; the state
lives in that registry, so each test can bind a manager to a fresh one.

The default :data:`MindSpeedPatchesManager` fills the registry a provider is registering into
(``mindspeed-ms patches``/``verify`` list it), else the one the adaptation handed over when it
executed (the registry it applies in its mode: the default one in MindSpore mode, PyTorch mode's in
PyTorch mode).
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from mindspeed_ms.engine.errors import TargetNotFoundError
from mindspeed_ms.engine.targets import suggest

from .binding import DEFAULT_MANAGER_NAME, ManagerBinding, default_binding, wrapper_name
from .errors import WrapperNotFoundError
from .patch import MindSpeedPatch, register_viewed, view_of

if TYPE_CHECKING:  # pragma: no cover
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["PatchesInfo", "WrapperNotFoundError", "bind_manager", "MindSpeedPatchesManager"]



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
        return view_of(self._binding, registry, target)

    def __setitem__(self, target: str, value: Any) -> None:
        raise TypeError(f"patches_info[{target!r}] cannot be assigned: register the replacement with "
                        f"register_patch({target!r}, new_func)")

    def __delitem__(self, target: str) -> None:
        registry = self._binding.registry()
        if target not in self._binding.views(registry):
            raise KeyError(target)
        if target in registry:
            registry.unregister(target)
        self._binding.forget_view(registry, target)

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


def _remove_wrappers(binding: ManagerBinding, orig_func_name: str, wrappers_name: Any, remove_check: bool) -> None:
    registry = binding.registry()
    if orig_func_name not in registry and not binding.has_view(registry, orig_func_name):
        close = suggest(orig_func_name, [p.target for p in registry.patches()])
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise TargetNotFoundError(f"remove_wrappers: nothing is registered for {orig_func_name!r}{hint}",
                                  target=orig_func_name, missing=orig_func_name, suggestions=close)
    patch = view_of(binding, registry, orig_func_name)
    before = [wrapper_name(w) for w in patch.wrappers]
    patch.remove_wrappers(wrappers_name)
    if remove_check and len(patch.wrappers) == len(before):
        names = (wrappers_name,) if isinstance(wrappers_name, str) else tuple(wrappers_name or ())
        raise WrapperNotFoundError(
            f"remove_wrappers({orig_func_name!r}, {wrappers_name!r}) removed nothing: the wrappers registered "
            f"there are {before or 'none'}; pass remove_check=False if that is expected",
            target=orig_func_name, names=names, registered=tuple(before))


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
            register_viewed(binding, orig_func_name, new_func, force_patch=force_patch, create_dummy=create_dummy)

        @staticmethod
        def remove_wrappers(orig_func_name: str, wrappers_name: Any, remove_check: bool = True) -> None:
            """Unregister the wrappers named ``wrappers_name`` of ``orig_func_name``.

            Raises:
                TargetNotFoundError: nothing is registered for ``orig_func_name``.
                WrapperNotFoundError: nothing was removed and ``remove_check`` is True.
            """
            _remove_wrappers(binding, orig_func_name, wrappers_name, remove_check)

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


#: The default manager: fills the registry a provider is filling, else the one the adaptation handed over.
MindSpeedPatchesManager: Any = _manager_class(default_binding())
