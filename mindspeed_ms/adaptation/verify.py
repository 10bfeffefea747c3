"""Verification: does every registered target still exist, and does its replacement still fit?

:func:`verify_registry` backs ``mindspeed-ms verify`` and the pytest plugin's
``--mindspeed-ms-verify`` items. It resolves each target by importing it
(:func:`mindspeed_ms.engine.targets.resolve_target`) or, with ``static=True``, by reading the installed
sources (:mod:`mindspeed_ms.engine.static`), and compares signatures (:mod:`mindspeed_ms.engine.signatures`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mindspeed_ms.engine.registry import PatchRegistry

__all__ = ["FAILING_STATES", "TargetCheck", "check_target", "verify_registry", "runtime_module_map",
           "static_resolver"]

#: States of a :class:`TargetCheck` that make ``verify`` fail.
FAILING_STATES = ("missing", "incompatible", "error", "overwritten")


@dataclass(frozen=True)
class TargetCheck:
    """Whether one registered target still exists (and still fits its replacement).

    Attributes:
        target: the dotted target.
        state: ``ok``; ``missing`` (the target does not resolve); ``incompatible`` (the replacement
            cannot accept every call the original accepts); ``error`` (its module fails to import);
            ``unverifiable`` (cannot be judged from source); ``skipped`` (requirements unmet);
            ``stub`` (missing, but registered with ``create_dummy=True``); ``overwritten`` (applied,
            then replaced by someone else: the reason names what is there now).
        reason: why, for every state but ``ok``; close matches are quoted with ``repr``.
        provider: the provider that registered it.
        registered_at: ``file:line`` of the registration.
        suggestions: close matches for the missing part.
    """

    target: str
    state: str
    reason: str | None = None
    provider: str | None = None
    registered_at: str = ""
    suggestions: tuple[str, ...] = ()

    @property
    def is_failure(self) -> bool:
        """True when this check should make ``verify`` fail."""
        return self.state in FAILING_STATES

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data."""
        return {"target": self.target, "state": self.state, "reason": self.reason, "provider": self.provider,
                "registered_at": self.registered_at, "suggestions": list(self.suggestions)}


def runtime_module_map() -> dict[str, str]:
    """Return the top-level module mapping the MindSpore-mode runtime applies, for static resolution.

    With MSAdapter installed, ``import torch`` (after ``import msadapter``) gives MSAdapter's
    ``msadapter`` package, not the ``torch/`` folder it also installs: ``torch.X`` is read from
    ``msadapter/X``. Nothing is imported to find out.
    """
    from mindspeed_ms.engine.finders import find_spec

    return {"torch": "msadapter"} if find_spec("msadapter") is not None else {}


def static_resolver() -> Any:
    """Return a :class:`~mindspeed_ms.engine.static.StaticResolver` that reads modules as the runtime maps them."""
    from mindspeed_ms.engine.static import StaticResolver

    return StaticResolver(module_map=runtime_module_map())


def check_target(patch: Any, *, static: bool = False, resolver: Any = None) -> TargetCheck:
    """Resolve one patch's target and check its replacement's signature.

    Args:
        patch: a :class:`~mindspeed_ms.PatchRecord`.
        static: resolve by reading sources; signatures are compared from source too (nothing is imported).
        resolver: a :class:`~mindspeed_ms.engine.static.StaticResolver` to reuse across calls (static only).

    Returns:
        The :class:`TargetCheck`.
    """
    from mindspeed_ms.engine.errors import TargetNotFoundError
    from mindspeed_ms.engine.replacements import NO_REPLACEMENT, is_reference
    from mindspeed_ms.engine.requirements import unmet_requirements

    status = patch.status(False)
    base = {"provider": status.provider, "registered_at": status.registered_at}
    if status.state == "overwritten":
        return TargetCheck(patch.target, "overwritten", status.reason, **base)
    unmet = unmet_requirements(patch.requires)
    if unmet:
        return TargetCheck(patch.target, "skipped", "; ".join(unmet), **base)
    stub_reason = "does not exist; created as a stub when applied (create_dummy=True)"
    if static:
        try:
            result = (resolver or static_resolver()).resolve(patch.target)
        except Exception as exc:  # one target's surprise must not end the whole run
            return TargetCheck(patch.target, "error", f"static resolution failed: {type(exc).__name__}: {exc}",
                               **base)
        if result.state == "missing" and patch.create_dummy:
            return TargetCheck(patch.target, "stub", stub_reason, **base)
        if result.state == "ok" and is_reference(patch.replacement):
            reference = (resolver or static_resolver()).resolve(patch.replacement.replace(":", "."))
            if reference.state == "missing":
                return TargetCheck(patch.target, "missing", f"the replacement {patch.replacement!r} does not resolve: "
                                   f"{reference.reason}", suggestions=reference.suggestions, **base)
        if result.state == "ok" and result.kind == "function":
            problems = _static_signature_problems(patch, resolver or static_resolver())
            if problems:
                name = status.replacement or patch.replacement
                return TargetCheck(patch.target, "incompatible", f"replacement {name} " + "; ".join(problems), **base)
        return TargetCheck(patch.target, result.state, result.reason, suggestions=result.suggestions, **base)
    from mindspeed_ms.engine.signatures import signature_problems
    from mindspeed_ms.engine.targets import resolve_target

    try:
        located = resolve_target(patch.target)
    except TargetNotFoundError as exc:
        if patch.create_dummy:
            return TargetCheck(patch.target, "stub", stub_reason, **base)
        return TargetCheck(patch.target, "missing", str(exc), suggestions=exc.suggestions, **base)
    except Exception as exc:  # the target's own module fails to import: report it, keep verifying
        return TargetCheck(patch.target, "error", f"importing it fails: {type(exc).__name__}: {exc}", **base)
    replacement = patch.replacement
    if is_reference(replacement):
        try:  # a lazy "pkg.mod:attr" reference is imported here, as applying would
            replacement = resolve_target(replacement.replace(":", ".")).raw
        except TargetNotFoundError as exc:
            return TargetCheck(patch.target, "missing", f"the replacement {patch.replacement!r} does not resolve: "
                               f"{exc}", suggestions=exc.suggestions, **base)
        except Exception as exc:
            return TargetCheck(patch.target, "error", f"importing the replacement {patch.replacement!r} fails: "
                               f"{type(exc).__name__}: {exc}", **base)
    if replacement is not NO_REPLACEMENT and replacement is not None and not located.is_module:
        problems = signature_problems(located.raw, replacement)
        if problems:
            name = status.replacement or repr(replacement)
            return TargetCheck(patch.target, "incompatible", f"replacement {name} " + "; ".join(problems), **base)
    return TargetCheck(patch.target, "ok", **base)


def _static_signature_problems(patch: Any, resolver: Any) -> list[str]:
    """Compare the target's signature, read from source, with the replacement's, importing neither.

    A lazy ``"pkg.mod:attr"`` replacement is read from source too; an object replacement gives its own.
    Wraps (``kind="wrap"``) take the original, not its arguments: nothing to compare.
    """
    from mindspeed_ms.engine.replacements import NO_REPLACEMENT, is_reference
    from mindspeed_ms.engine.signatures import ast_shape, object_shape, shape_problems

    replacement = patch.replacement
    if replacement is NO_REPLACEMENT or replacement is None:
        return []
    old = ast_shape(resolver.definition(patch.target))
    if is_reference(replacement):
        new = ast_shape(resolver.definition(replacement.replace(":", ".")))
    else:
        new = object_shape(replacement)
    return shape_problems(old, new)


def verify_registry(registry: PatchRegistry, *, static: bool = False) -> list[TargetCheck]:
    """Check every target registered in ``registry`` (blocks excepted), without applying any patch.

    Dynamic verification imports the targets' modules with the registry's module blocks in force
    (they are lifted afterwards), so that e.g. a blocked ``transformer_engine`` is not picked up.

    Args:
        registry: a registry filled by providers, not applied.
        static: read sources instead of importing (see :mod:`mindspeed_ms.engine.static`).

    Returns:
        One :class:`TargetCheck` per target, in registration order.
    """
    patches = registry.patches()
    targets = [patch for patch in patches if not patch.is_block]
    if static:
        resolver = static_resolver()
        return [check_target(patch, static=True, resolver=resolver) for patch in targets]
    from mindspeed_ms.engine.registry import PatchRegistry

    blocker = PatchRegistry(name=f"{registry.name}:blocks")
    for patch in patches:
        if patch.is_block:
            blocker.block(patch.target)
    with blocker.applied():
        return [check_target(patch) for patch in targets]
