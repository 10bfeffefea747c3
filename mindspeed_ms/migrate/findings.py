"""What convert-launch reports and does not fix: a :class:`Finding` per flag, option or hidden launch."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROBLEM_STATUSES", "STATUSES", "Finding"]

STATUSES = ("unsupported", "conditional", "unused", "unconvertible")
# the statuses that need the user; ``unused`` is information only and does not change the exit code
PROBLEM_STATUSES = ("unsupported", "conditional", "unconvertible")


@dataclass(frozen=True)
class Finding:
    """Something the converter reports and does not fix: ``status`` is unsupported, conditional, unused or
    unconvertible; ``line``/``column`` are 1-based positions in the input."""

    line: int
    column: int
    flag: str
    status: str
    reason: str
    value: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "column": self.column, "flag": self.flag, "value": self.value,
                "status": self.status, "reason": self.reason}
