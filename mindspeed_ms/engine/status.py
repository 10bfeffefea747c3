"""Value objects that tell what a registry holds and did: :class:`PatchStatus`, :class:`ApplyReport`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

__all__ = ["STATES", "PatchStatus", "ApplyReport", "make_status"]

#: Every state a patch can be in, in the order reports list them.
STATES = ("registered", "pending-import", "applied", "overwritten", "skipped", "failed", "reverted")


@dataclass(frozen=True)
class PatchStatus:
    """A snapshot of one target's patch.

    Attributes:
        target: the dotted target.
        kinds: what is registered for it: ``"replace"`` and/or ``"wrap"`` (``"block"`` for a blocked module).
        state: one of :data:`STATES`.
        replacement: qualified name of the replacement (``None`` when only wraps are registered).
        registered_at: ``file:line`` of the registration that set the replacement, else of the first wrap.
        sources: ``file:line`` of every registration.
        stub: whether stub modules or attributes were created for it (``create_dummy=True``).
        aliases: names of the modules whose ``from``-imported bindings were rebound.
        warnings: e.g. signature incompatibilities.
        reason: why it was skipped or failed.
        purpose: the one-line reason the patch exists, as registered.
        provider: the provider that registered it, if any.
        calls: calls counted since apply when call tracing is on, else ``None``.
        requires: the PEP 508 requirements it was registered with.
        superseded: fallback replacements (mindspeed_ms's built-in fixes) that gave the target to the
            registered replacement and wait behind it, each as ``"name (registered at file:line by
            provider 'x')"``; they take the target again if that replacement is withdrawn.
        unverified: requirements of what is installed counted as met without a version to check (a source
            checkout that declares none), one sentence each; they are among ``warnings`` too.
    """

    target: str
    kinds: tuple[str, ...]
    state: str
    replacement: str | None
    registered_at: str
    sources: tuple[str, ...] = ()
    stub: bool = False
    aliases: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    reason: str | None = None
    purpose: str | None = None
    provider: str | None = None
    calls: int | None = None
    requires: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    unverified: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data."""
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, tuple):
                data[key] = list(value)
        return data


_FIELDS = frozenset(item.name for item in fields(PatchStatus))


def make_status(**values: Any) -> PatchStatus:
    """Build a :class:`PatchStatus` from every one of its fields, ten times faster than its ``__init__``.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; ``apply()``
    reports every patch of the registry, so that cost is paid per patch per apply.

    Raises:
        TypeError: a field is missing or unknown.
    """
    if values.keys() != _FIELDS:
        raise TypeError(f"PatchStatus fields missing: {sorted(_FIELDS - values.keys())}, unknown: "
                        f"{sorted(values.keys() - _FIELDS)}")
    status = object.__new__(PatchStatus)
    status.__dict__.update(values)
    return status


class ApplyReport:
    """The states of a whole registry right after an ``apply()``.

    Args:
        registry: the registry's name.
        counts: number of patches per state (every state of :data:`STATES` present).
        statuses: the status of every patch, in registration order; or a function returning them, called
            on the first read of :attr:`statuses` (the registry captures what they say when the report
            is made, so they are that moment's statuses whenever they are read).
    """

    __slots__ = ("registry", "counts", "_statuses")

    def __init__(self, registry: str, counts: Mapping[str, int],
                 statuses: tuple[PatchStatus, ...] | Callable[[], tuple[PatchStatus, ...]] = ()) -> None:
        self.registry = registry
        self.counts = counts
        self._statuses = statuses

    @property
    def statuses(self) -> tuple[PatchStatus, ...]:
        """The status of every patch, in registration order."""
        statuses = self._statuses
        if callable(statuses):
            # two threads reading at once both build the same tuple from the same capture: either may stay
            statuses = self._statuses = statuses()
        return statuses

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApplyReport):
            return NotImplemented
        return (self.registry, dict(self.counts), self.statuses) == (other.registry, dict(other.counts),
                                                                     other.statuses)

    def __repr__(self) -> str:
        return f"ApplyReport(registry={self.registry!r}, counts={self.counts!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled and copied with its statuses built (the function building them is the registry's)
        return (ApplyReport, (self.registry, self.counts, self.statuses))

    @property
    def applied(self) -> int:
        return self.counts.get("applied", 0)

    @property
    def pending(self) -> int:
        return self.counts.get("pending-import", 0)

    @property
    def skipped(self) -> int:
        return self.counts.get("skipped", 0)

    @property
    def failed(self) -> int:
        return self.counts.get("failed", 0)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        """Return a one-line summary such as ``84 patches applied, 12 waiting for import, 3 skipped``."""
        parts = [f"{self.applied} patches applied"]
        if self.pending:
            parts.append(f"{self.pending} waiting for import")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.failed:
            parts.append(f"{self.failed} failed")
        overwritten = self.counts.get("overwritten", 0)
        if overwritten:
            parts.append(f"{overwritten} overwritten by someone else")
        superseded = sum(1 for status in self.statuses if status.superseded)
        if superseded:
            parts.append(f"{superseded} built-in {'fix' if superseded == 1 else 'fixes'} superseded by other "
                         f"registrations")
        unverified = [status for status in self.statuses if status.unverified and status.state != "skipped"]
        if unverified:
            packages = sorted({sentence.split(" ", 1)[0] for status in unverified for sentence in status.unverified})
            parts.append(f"{len(unverified)} on unverified requirements (no version declared by the source "
                         f"checkout of {', '.join(packages)}: see status())")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """Return JSON-serialisable data: the name, the counts and every patch's status."""
        return {"registry": self.registry, "counts": dict(self.counts),
                "patches": [status.to_dict() for status in self.statuses]}
