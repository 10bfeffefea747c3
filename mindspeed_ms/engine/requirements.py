"""PEP 508 requirements of patches and providers, checked against what is installed.

"Installed" is what the process can import. A distribution with metadata reports its version there; a
package importable without metadata (a source checkout on ``PYTHONPATH``, the field's canonical MindSpore
set-up) counts as installed too, with the version its source declares (read statically, see
:mod:`.source_version`). When it declares none the requirement is *unverified*: it counts as met (the
registration applies) and says so: :func:`check_requirements` returns a sentence for it, the engine shows
it in the patch's status and in the apply summary, and a warning is logged once per package.

``packaging`` and ``importlib.metadata`` are imported only when a requirement is actually given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from .errors import PatchValidationError

__all__ = ["normalize_requires", "unmet_requirements", "check_requirements", "RequirementCheck",
           "InstalledVersion", "installed_version", "module_folders", "IMPORT_NAMES"]

logger = logging.getLogger(__name__)

#: distribution -> the module its code is imported as, where the two differ beyond ``-``/``_``
IMPORT_NAMES = {"megatron-core": "megatron.core", "megatron-lm": "megatron.training", "mindspeed-llm": "mindspeed_llm",
                "pytorch": "torch"}
_warned: set[tuple[str, str]] = set()


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


@dataclass(frozen=True)
class InstalledVersion:
    """What is installed of one distribution.

    Attributes:
        name: the distribution name asked for.
        version: its version, or None when nothing declares one.
        source: ``"metadata"`` (distribution metadata), ``"source"`` (declared by its source, no metadata)
            or ``"unknown"`` (importable, no metadata, no version declared).
        location: the imported package's folder (None for ``"metadata"``).
        declared_in: the file the version was read from (``"source"`` only).
    """

    name: str
    version: str | None
    source: str
    location: str | None = None
    declared_in: str | None = None

    def describe(self) -> str:
        """Return e.g. ``mindspeed 0.12.1 (a source checkout at /x/mindspeed, version from /x/setup.py)``."""
        if self.source == "metadata":
            return f"{self.name} {self.version}"
        if self.source == "source":
            return (f"{self.name} {self.version} (a source checkout at {self.location}, no distribution metadata; "
                    f"version from {self.declared_in})")
        return f"{self.name} (a source checkout at {self.location}: no distribution metadata, no version declared)"


def _import_name(distribution: str) -> str:
    canonical = distribution.lower().replace("_", "-").replace(".", "-")
    return IMPORT_NAMES.get(canonical, canonical.replace("-", "_"))


def module_folders(dotted: str) -> tuple[str, str] | None:
    """Return (the folder of module ``dotted``, the folder of its top-level package), importing nothing; or None.

    Only the finders known to run no code are asked (``PathFinder``, editable installs; not hooks that act when
    a name is looked up). A plain module gives the folder of its file.
    """
    import os
    import sys

    from .finders import find_spec, is_safe_finder, search_locations  # finders that locate without running code

    path: list[str] | None = None
    top: str | None = None
    parts = dotted.split(".")
    for index in range(len(parts)):
        name = ".".join(parts[:index + 1])
        module = sys.modules.get(name)
        spec = getattr(module, "__spec__", None) if module is not None else \
            find_spec(name, path, accept=is_safe_finder)
        if spec is None:
            return None
        locations = search_locations(spec)
        if locations:
            folder = locations[0]
        elif spec.origin and os.path.isfile(spec.origin) and index == len(parts) - 1:
            folder = os.path.dirname(spec.origin)
        else:
            return None
        top = top or folder
        path = locations
    return (folder, top) if top else None


def installed_version(name: str) -> InstalledVersion | None:
    """Return what is installed of distribution ``name`` (metadata first, else an importable package), or None.

    Nothing is imported or executed: the metadata is read, the import system's finders are asked where the
    package would come from, and its source is parsed (see :mod:`.source_version`).
    """
    from importlib import metadata

    try:
        return InstalledVersion(name, metadata.version(name), "metadata")
    except metadata.PackageNotFoundError:
        pass
    package = _import_name(name)
    folders = module_folders(package)
    if folders is None:
        return None
    from .source_version import declared_version

    version, declared_in = declared_version(folders[0], folders[1], distribution=name, package=package)
    if version is None:
        return InstalledVersion(name, None, "unknown", folders[0])
    return InstalledVersion(name, version, "source", folders[0], declared_in)


@dataclass(frozen=True)
class RequirementCheck:
    """The outcome of checking requirements.

    Attributes:
        unmet: one sentence per requirement not satisfied (the registration is left out).
        unverified: one sentence per requirement counted as met without a version to check (a source
            checkout that declares none): the registration applies, with this warning.
    """

    unmet: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()


def check_requirements(requires: Sequence[str]) -> RequirementCheck:
    """Check each PEP 508 requirement against what is installed (see the module docstring)."""
    if not requires:
        return RequirementCheck()
    unmet: list[str] = []
    unverified: list[str] = []
    for text in requires:
        requirement = _parse(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        installed = installed_version(requirement.name)
        if installed is None:
            unmet.append(f"{requirement.name} is not installed (needs {text!r})")
        elif installed.version is None:
            if requirement.specifier:
                sentence = f"{installed.describe()}: {text!r} assumed met, unverified"
                unverified.append(sentence)
                if (requirement.name, installed.location or "") not in _warned:
                    _warned.add((requirement.name, installed.location or ""))
                    logger.warning("%s", sentence)
        elif requirement.specifier and not requirement.specifier.contains(installed.version, prereleases=True):
            unmet.append(f"{installed.describe()} is installed, {text!r} is needed")
    return RequirementCheck(tuple(unmet), tuple(unverified))


def unmet_requirements(requires: Sequence[str]) -> list[str]:
    """Return a sentence for each requirement not satisfied by what is installed (see :func:`check_requirements`)."""
    return list(check_requirements(requires).unmet)
