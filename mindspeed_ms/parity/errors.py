"""Errors of :mod:`mindspeed_ms.parity`: a run could not be set up, a run failed, or the two sides do not match.

Re-exported from :mod:`mindspeed_ms.errors`.
"""

from __future__ import annotations

from mindspeed_ms.engine.errors import AdaptationError

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

__all__ = ["ParitySetupError", "ParityNoStepError", "ParityRunError", "ParityMismatchError"]


class ParitySetupError(AdaptationError, FileNotFoundError):
    """Something a parity run needs is missing or in the way (the reference interpreter, msrun, the script,
    files in ``--work-dir`` the tool did not create)."""


class ParityNoStepError(ParitySetupError):
    """The reference run recorded no training step: the script is not something parity can compare.

    Attributes:
        missing: ``"model"`` (no ``torch.nn.Module`` holding parameters was called) or ``"backward"``
            (a model ran, but no backward of a scalar loss).
    """

    def __init__(self, message: str, *, missing: str) -> None:
        super().__init__(message)
        self.missing = missing


class ParityRunError(AdaptationError, RuntimeError):
    """One of the two runs failed.

    Attributes:
        role: ``"reference"`` or ``"candidate"``.
        returncode: its exit status (124: it ran past the timeout and every process of it was ended).
        output: the tail of what it printed.
    """

    def __init__(self, role: str, returncode: int, command: Sequence[str], output: str) -> None:
        self.role, self.returncode, self.output = role, returncode, output
        what = "ran past the timeout (all of its processes were ended)" if returncode == 124 else \
            f"exited with status {returncode}"
        super().__init__(f"parity: the {role} run {what}: {' '.join(command)}\n--- last output ---\n{output}")


class ParityMismatchError(AdaptationError, ValueError):
    """The candidate's model or batches cannot be matched with the reference's (names, shapes, keys).

    Attributes:
        problems: one line per mismatch.
    """

    def __init__(self, what: str, problems: list[str]) -> None:
        self.problems = problems
        shown = "; ".join(problems[:10]) + (f"; ... {len(problems) - 10} more" if len(problems) > 10 else "")
        super().__init__(f"parity: the candidate's {what} do not match the reference's: {shown}. Both runs must "
                         f"build the same model with the same parallel sizes")
