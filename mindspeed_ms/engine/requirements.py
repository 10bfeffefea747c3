"""PEP 508 requirements of patches and providers, checked against installed distributions.

``packaging`` and ``importlib.metadata`` are imported only when a requirement is actually given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from .errors import PatchValidationError

__all__ = ["normalize_requires", "unmet_requirements"]


@cache
def _parse(text: str) -> Any:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(text)
    except InvalidRequirement as error:
        raise PatchValidationError(
            f"requirement {text!r} is not a valid PEP 508 string (e.g. 'megatron-core>=0.12,<0.13'): {error}"
        ) from None


def normalize_requires(requires: None | str | Iterable[str], *, target: str | None = None
                       ) -> tuple[str, ...]:
    """Validate ``requires`` and return it as a tuple of PEP 508 strings.

    Raises:
        PatchValidationError: not a string or an iterable of strings, or not valid PEP 508.
    """
    if requires is None:
        return ()
    items: Sequence[Any] = (requires,) if isinstance(requires, str) else tuple(requires) \
        if not isinstance(requires, (bytes, dict)) and hasattr(requires, "__iter__") else (requires,)
    for item in items:
        if not isinstance(item, str):
            raise PatchValidationError(
                f"requires must be a PEP 508 string or a sequence of them, got {type(item).__name__} {item!r}",
                target=target)
        try:
            _parse(item)
        except PatchValidationError as error:
            raise PatchValidationError(str(error), target=target) from None
    return tuple(items)


def unmet_requirements(requires: Sequence[str]) -> list[str]:
    """Return a sentence for each requirement the installed distributions do not satisfy."""
    if not requires:
        return []
    from importlib import metadata

    problems: list[str] = []
    for text in requires:
        requirement = _parse(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            problems.append(f"{requirement.name} is not installed (needs {text!r})")
            continue
        if requirement.specifier and not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name} {version} is installed, {text!r} is needed")
    return problems
