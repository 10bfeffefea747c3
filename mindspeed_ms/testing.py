"""Helpers for tests of code that patches: assertions on targets, and tiny provider distributions.

``assert_patched``/``assert_not_patched`` read the target's current object (importing its module,
which applies pending patches) and say what is installed instead when they fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mindspeed_ms.engine.registry import PatchRegistry
    from mindspeed_ms.engine.status import PatchStatus

__all__ = ["assert_patched", "assert_not_patched", "write_distribution"]


def _describe(obj: Any) -> str:
    """Return ``module.qualname (file:line)`` for a function or class, else its repr."""
    from mindspeed_ms.engine.signatures import unwrap_descriptor

    func = unwrap_descriptor(obj)
    name = getattr(func, "__qualname__", None)
    if name is None:
        return repr(obj)
    text = f"{getattr(func, '__module__', '?')}.{name}"
    code = getattr(func, "__code__", None)
    if code is not None:
        text += f" ({code.co_filename}:{code.co_firstlineno})"
    if func is not obj:
        text = f"{type(obj).__name__}({text})"
    return text


def _chain(obj: Any) -> list[Any]:
    """Return ``obj`` unwrapped from its descriptor, then every ``__wrapped__`` below it."""
    from mindspeed_ms.engine.signatures import unwrap_descriptor

    items = [obj, unwrap_descriptor(obj)]
    current = items[-1]
    while hasattr(current, "__wrapped__") and len(items) < 64:
        current = current.__wrapped__
        items.append(current)
    return items


def _status(target: str, registry: PatchRegistry | None) -> tuple[PatchRegistry, PatchStatus | None]:
    if registry is None:
        from mindspeed_ms.adaptation import default_registry

        registry = default_registry()
    for status in registry.status():
        if status.target == target:
            return registry, status
    return registry, None


def _current(target: str) -> Any:
    from mindspeed_ms.engine.targets import resolve_target

    return resolve_target(target).raw


def assert_patched(target: str, replacement: Any = None, *, registry: PatchRegistry | None = None) -> None:
    """Assert that ``target`` is patched by ``registry`` (the default adaptation's when None).

    The target's module is imported if needed (which applies a patch waiting for that import).

    Args:
        target: the dotted target.
        replacement: when given, the object that must be installed (found through descriptors,
            wraps and tracing shims that keep ``__wrapped__``).
        registry: the registry expected to have patched it.

    Raises:
        AssertionError: the target is not registered, not applied, or something else is installed;
            the message says what is installed instead.
    """
    current = _current(target)
    registry, status = _status(target, registry)
    installed = _describe(current)
    if status is None:
        raise AssertionError(f"{target} is not patched: registry {registry.name!r} has nothing registered for it "
                             f"(installed: {installed})")
    if status.state != "applied":
        reason = f" ({status.reason})" if status.reason else ""
        raise AssertionError(f"{target} is not patched: its patch is {status.state!r}{reason}, registered at "
                             f"{status.registered_at} (installed: {installed})")
    if replacement is not None and not any(item is replacement for item in _chain(current)):
        raise AssertionError(f"{target} is patched, but not with {_describe(replacement)}: installed instead is "
                             f"{installed}")


def assert_not_patched(target: str, *, registry: PatchRegistry | None = None) -> None:
    """Assert that ``registry`` (the default adaptation's when None) has not patched ``target``.

    Raises:
        AssertionError: the patch is applied; the message names the installed object, the provider
            and the registration site.
    """
    current = _current(target)
    registry, status = _status(target, registry)
    if status is not None and status.state == "applied":
        provider = f" by provider {status.provider!r}" if status.provider else ""
        raise AssertionError(f"{target} is patched{provider} (registered at {status.registered_at}): installed is "
                             f"{_describe(current)}")


def write_distribution(root: str | Path, name: str, *, version: str = "1.0",
                       modules: Mapping[str, str] | None = None,
                       entry_points: Mapping[str, str] | None = None) -> Path:
    """Write an installed-looking distribution (sources plus ``.dist-info``) under ``root``.

    Put ``root`` on ``sys.path`` (or ``PYTHONPATH``) and ``importlib.metadata`` finds it, entry points
    included: the quickest way to test discovery of a provider of group ``mindspeed_ms.adaptations``.

    Args:
        root: the folder to write into (created if needed).
        name: the distribution name.
        version: its version.
        modules: relative file path -> source text (e.g. ``{"my_patches.py": "..."}``).
        entry_points: entry-point name -> ``module[:attr]`` in group ``mindspeed_ms.adaptations``.

    Returns:
        The ``.dist-info`` folder.
    """
    base = Path(root)
    files: list[str] = []
    for relative, text in (modules or {}).items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        files.append(relative)
    info = base / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    lines = ["[mindspeed_ms.adaptations]", *(f"{key} = {value}" for key, value in (entry_points or {}).items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (info / "INSTALLER").write_text("mindspeed_ms.testing\n", encoding="utf-8")
    record = [*files, *(f"{info.name}/{item}" for item in ("METADATA", "entry_points.txt", "INSTALLER", "RECORD"))]
    (info / "RECORD").write_text("".join(f"{item},,\n" for item in record), encoding="utf-8")
    return info
