"""Patch providers: discovery (built-in modules, entry points), disabling, registration, verification.

A provider is the unit of patches a library or a downstream repository adds. It is either a
callable ``register(registry, args)``, or an object (a module, an instance, a class) with a
``name``, optional ``requires`` (PEP 508 strings) and ``register(registry, args)``. Providers only
*register*: they must not import torch or their targets while doing it.

Built-in providers are the non-underscore modules of :mod:`mindspeed_ms.patches`, found with
``pkgutil`` (alphabetical order) without importing the disabled ones; downstream providers are the
entry points of group ``mindspeed_ms.adaptations`` (ordered by name). ``MINDSPEED_MS_DISABLE=a,b``
turns providers off by entry-point, module or provider name: the adaptation hands the names it read
(:class:`~.settings.Settings`) to :func:`discover_providers`.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import sys
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from mindspeed_ms.adaptation.errors import ProviderError
from mindspeed_ms.adaptation.settings import DISABLE_ENV
from mindspeed_ms.engine.errors import AdaptationError

if TYPE_CHECKING:
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = [
    "ENTRY_POINT_GROUP", "DISABLE_ENV", "BUILTIN_PACKAGE", "Provider", "SkippedProvider", "Discovery",
    "ProviderRun", "ProviderError", "as_provider", "discover_providers", "register_providers",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "mindspeed_ms.adaptations"
BUILTIN_PACKAGE = "mindspeed_ms.patches"


@dataclass(frozen=True)
class Provider:
    """A normalised provider.

    Attributes:
        name: the provider's name (what ``status()`` shows and ``MINDSPEED_MS_DISABLE`` matches).
        register: ``register(registry, args)``.
        requires: PEP 508 requirements; when unmet the provider is skipped.
        origin: where it came from, for messages (module or entry point and distribution).
        blocks: ``(module, purpose)`` of the modules it blocks, declared as data (a ``blocks``
            attribute) so they can be in force before any provider registers.
        register_args: ``register_args(parser)`` declaring the provider's typed training flags on an
            ``argparse`` parser (MindSpeed's feature vocabulary), or ``None``.
    """

    name: str
    register: Callable[[Any, Any], object]
    requires: tuple[str, ...] = ()
    origin: str = ""
    blocks: tuple[tuple[str, str | None], ...] = ()
    register_args: Callable[[Any], object] | None = None
    #: one of mindspeed_ms's own (:mod:`mindspeed_ms.patches`): its replacements are fallbacks that
    #: give way to anyone else's registration of the same target (MindSpeed, MindSpeed-LLM, the user)
    builtin: bool = False


@dataclass(frozen=True)
class SkippedProvider:
    """A provider left out, and why (disabled, or requirements unmet)."""

    name: str
    origin: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """Return JSON-serialisable data."""
        return {"name": self.name, "origin": self.origin, "reason": self.reason}


@dataclass(frozen=True)
class Discovery:
    """The providers found, in the order they register, and those disabled before loading."""

    providers: tuple[Provider, ...] = ()
    disabled: tuple[SkippedProvider, ...] = ()
    unknown_disabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProviderRun:
    """What :func:`register_providers` did."""

    registered: tuple[str, ...] = ()
    skipped: tuple[SkippedProvider, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data."""
        return {"registered": list(self.registered), "skipped": [item.to_dict() for item in self.skipped]}


def as_provider(obj: Any, default_name: str, origin: str) -> Provider:
    """Normalise anything that follows the provider protocol into a :class:`Provider`.

    Args:
        obj: a callable ``register(registry, args)``, or an object with ``register``, optional
            ``name`` and optional ``requires``.
        default_name: the name to use when ``obj`` has none (module or entry-point name).
        origin: where ``obj`` came from, for messages.

    Returns:
        The provider.

    Raises:
        ProviderError: ``obj`` does not follow the protocol, or its name or requirements are malformed.
    """
    register = getattr(obj, "register", None)
    if register is None and callable(obj):
        register = obj
    if not callable(register):
        raise ProviderError(
            f"{origin} gives {obj!r}, which is not a provider: expected a callable register(registry, args) "
            f"or an object with name, optional requires and register(registry, args)", provider=default_name)
    name = getattr(obj, "name", None) if register is not obj else None
    if name is None:
        name = default_name
    if not isinstance(name, str) or not name.strip():
        raise ProviderError(f"{origin}: provider name must be a non-empty string, got {name!r}",
                            provider=default_name)
    raw = getattr(obj, "requires", None)
    try:
        from mindspeed_ms.engine.requirements import normalize_requires

        requires = normalize_requires(raw)
    except AdaptationError as exc:
        raise ProviderError(f"{origin}: provider {name!r} has malformed requires: {exc}",
                            provider=name) from exc
    blocks = _blocks_of(obj, name, origin) if register is not obj else ()
    declare = getattr(obj, "register_args", None) if register is not obj else None
    if declare is not None and not callable(declare):
        raise ProviderError(f"{origin}: provider {name!r} has register_args = {declare!r}, which is not a callable "
                            f"register_args(parser)", provider=name)
    return Provider(name=name, register=register, requires=requires, origin=origin, blocks=blocks,
                    register_args=declare)


def _blocks_of(obj: Any, name: str, origin: str) -> tuple[tuple[str, str | None], ...]:
    raw = getattr(obj, "blocks", None) or ()
    blocks: list[tuple[str, str | None]] = []
    for item in raw:
        module, purpose = (item, None) if isinstance(item, str) else tuple(item) + (None,) * (2 - len(item))
        if not isinstance(module, str) or not (purpose is None or isinstance(purpose, str)):
            raise ProviderError(f"{origin}: provider {name!r} has a malformed blocks entry {item!r}: expected a "
                                f"module name or (module name, purpose)", provider=name)
        blocks.append((module, purpose))
    return tuple(blocks)


def _builtin_names(package_name: str) -> list[str]:
    package = importlib.import_module(package_name)
    found = {info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_")}
    return sorted(found)


def _entry_points() -> list[Any]:
    from importlib import metadata

    selected = metadata.entry_points()
    if hasattr(selected, "select"):
        items = list(selected.select(group=ENTRY_POINT_GROUP))
    else:  # Python 3.9: a dict of group -> entry points
        items = list(selected.get(ENTRY_POINT_GROUP, ()))
    unique: dict[tuple[str, str], Any] = {}
    for entry_point in items:
        unique.setdefault((entry_point.name, entry_point.value), entry_point)
    return sorted(unique.values(), key=lambda entry_point: (entry_point.name, entry_point.value))


def _entry_point_origin(entry_point: Any) -> str:
    dist = getattr(entry_point, "dist", None)
    owner = f" of {dist.metadata['Name']} {dist.version}" if dist is not None else ""
    return f"entry point {entry_point.name!r} ({entry_point.value}){owner}"


def discover_providers(
    disabled: Collection[str] | Mapping[str, str] = (), *, builtin: bool = True, entry_points: bool = True,
    builtin_package: str = BUILTIN_PACKAGE,
) -> Discovery:
    """Find every provider: built-in modules first, then entry points of ``mindspeed_ms.adaptations``.

    A provider named in ``disabled`` (by module or entry-point name) is never imported. A provider
    whose own ``name`` is listed is imported (its name is only known then) but left out. Names that
    match nothing are logged as a warning.

    Args:
        disabled: the names to leave out (``MINDSPEED_MS_DISABLE``), or name -> why it is left out.
        builtin: include the modules of :mod:`mindspeed_ms.patches`.
        entry_points: include the installed entry points.
        builtin_package: the package whose non-underscore modules are the built-in providers.

    Returns:
        A :class:`Discovery`.

    Raises:
        ProviderError: a provider fails to import or does not follow the provider protocol.
    """
    reasons = dict(disabled) if isinstance(disabled, Mapping) else dict.fromkeys(disabled, f"disabled by {DISABLE_ENV}")
    seen: set[str] = set()
    providers: list[Provider] = []
    left_out: list[SkippedProvider] = []

    def consider(key: str, origin: str, load: Callable[[], Any], builtin: bool = False) -> None:
        seen.add(key)
        if key in reasons:
            left_out.append(SkippedProvider(key, origin, reasons[key]))
            return
        try:
            obj = load()
        except Exception as exc:
            raise ProviderError(f"provider {key!r} ({origin}) failed to load: {type(exc).__name__}: {exc}",
                                provider=key) from exc
        provider = as_provider(obj, key, origin)
        if builtin:
            provider = replace(provider, builtin=True)
        seen.add(provider.name)
        if provider.name in reasons:
            left_out.append(SkippedProvider(provider.name, origin, reasons[provider.name]))
            return
        providers.append(provider)

    if builtin:
        for module_name in _builtin_names(builtin_package):
            qualified = f"{builtin_package}.{module_name}"
            consider(module_name, f"built-in module {qualified}",
                     lambda qualified=qualified: importlib.import_module(qualified),  # type: ignore[misc]  # the default binds the loop value
                     builtin=True)
    if entry_points:
        for entry_point in _entry_points():
            consider(entry_point.name, _entry_point_origin(entry_point), entry_point.load)
    unknown = tuple(sorted(set(reasons) - seen))
    if unknown:
        logger.warning("%s names no known provider: %s (known: %s)", DISABLE_ENV,
                       ", ".join(map(repr, unknown)), ", ".join(map(repr, sorted(seen))) or "none")
    return Discovery(tuple(providers), tuple(left_out), unknown)


def _imports_during(provider: Provider, registry: PatchRegistry, new_modules: Iterable[str]) -> list[str]:
    """Return the modules a provider should not have imported while registering: torch or its targets."""
    targets = [status.target for status in registry.status() if status.provider == provider.name]
    offending = []
    for module in new_modules:
        if module == "torch" or module.startswith("torch."):
            offending.append(module)
        elif any(target == module or target.startswith(module + ".") for target in targets):
            offending.append(module)
    return sorted(offending)


def register_providers(registry: PatchRegistry, providers: Iterable[Provider], args: Any, *,
                       enforce_blocks: bool = False) -> ProviderRun:
    """Let each provider register into ``registry``; all or nothing.

    Providers whose ``requires`` are unmet are skipped (and logged). Registrations are attributed to
    the provider (``PatchStatus.provider``). If any provider raises, every registration of this call
    is withdrawn (the registry is as it was before, so the call can be retried).

    Args:
        registry: the registry to fill.
        providers: providers in registration order.
        args: the namespace handed to each ``register(registry, args)``.
        enforce_blocks: register and apply every provider's declared ``blocks`` before any provider
            runs (the adaptation does, so a provider never meets a blocked shim); lifted again if a
            provider fails.

    Returns:
        A :class:`ProviderRun` naming the providers that registered and those skipped.

    Raises:
        ProviderError: a provider raised; this call's registrations were withdrawn and later
            providers did not run.
    """
    from mindspeed_ms.engine.requirements import unmet_requirements

    registered: list[str] = []
    skipped: list[SkippedProvider] = []
    runnable: list[Provider] = []
    for provider in providers:
        unmet = unmet_requirements(provider.requires)
        if unmet:
            skipped.append(SkippedProvider(provider.name, provider.origin, "; ".join(unmet)))
            logger.info("provider %r skipped: %s", provider.name, "; ".join(unmet))
        else:
            runnable.append(provider)
    with registry.transaction():
        blocked: list[str] = []
        if enforce_blocks:
            for provider in runnable:
                with registry.provider(provider.name):
                    for module, purpose in provider.blocks:
                        # the block is the provider's (it declares it): its site is the provider's code
                        registry.block(module, purpose=purpose, site=_site_of(provider))
                        blocked.append(module)
            registry.apply_blocks()
        try:
            for provider in runnable:
                _register_one(registry, provider, args)
                registered.append(provider.name)
        except BaseException:
            for module in blocked:
                if module in registry:
                    registry.unregister(module)
            raise
    return ProviderRun(tuple(registered), tuple(skipped))


def _site_of(provider: Provider) -> str:
    """Return ``file:line`` of the provider's ``register`` function (its origin when that has no code)."""
    code = getattr(provider.register, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else provider.origin


def _register_one(registry: PatchRegistry, provider: Provider, args: Any) -> None:
    before = set(sys.modules)
    try:
        with registry.provider(provider.name, fallback=provider.builtin):
            provider.register(registry, args)
    except Exception as exc:
        raise ProviderError(
            f"provider {provider.name!r} ({provider.origin}) failed while registering: "
            f"{type(exc).__name__}: {exc}; the registrations of every provider were withdrawn",
            provider=provider.name, target=getattr(exc, "target", None)) from exc
    offending = _imports_during(provider, registry, set(sys.modules) - before)
    if offending:
        logger.warning("provider %r imported %s while registering: providers must only register; import "
                       "torch and the targets inside the replacement functions", provider.name,
                       ", ".join(map(repr, offending)))
