"""The ``mindspeed_ms`` loggers' routing, and the adaptation's one summary line.

``logging`` is imported inside the functions: PyTorch mode without work to do never loads it.
"""

from __future__ import annotations

import sys

from mindspeed_ms.adaptation.tracing import current_rank

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from mindspeed_ms.adaptation.providers import ProviderRun
    from mindspeed_ms.adaptation.runtime import RuntimeSetting
    from mindspeed_ms.adaptation.settings import Settings
    from mindspeed_ms.engine.status import ApplyReport

__all__ = ["configure_logging", "log_summary"]


def configure_logging(settings: Settings | None = None) -> None:
    """Send the ``mindspeed_ms`` loggers to stderr at the level of ``MINDSPEED_MS_LOG_LEVEL`` (default INFO).

    A stderr handler is added only when neither the ``mindspeed_ms`` logger nor the root logger has a
    handler (an application that configured logging keeps its own routing). Nothing goes to stdout.

    Args:
        settings: where the level comes from; read from ``os.environ`` when None.

    Raises:
        SettingError: ``MINDSPEED_MS_LOG_LEVEL`` is not a level (only when ``settings`` is None).
    """
    import logging

    from mindspeed_ms.adaptation.settings import Settings

    class _Formatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            prefix = "mindspeed_ms" if record.levelno == logging.INFO else f"mindspeed_ms {record.levelname}"
            return f"{prefix}: {super().format(record)}"

    class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        """Write to whatever ``sys.stderr`` is when a record is emitted (it may be swapped later)."""

        def emit(self, record: logging.LogRecord) -> None:
            self.stream = sys.stderr
            super().emit(record)

    level = (settings if settings is not None else Settings.from_environ()).log_level
    package = logging.getLogger("mindspeed_ms")
    if not package.handlers and not logging.getLogger().handlers:
        handler = _StderrHandler(sys.stderr)
        handler.setFormatter(_Formatter("%(message)s"))
        package.addHandler(handler)
        package.propagate = False
    package.setLevel(level)


def log_summary(report: ApplyReport, run: ProviderRun, runtime: Sequence[RuntimeSetting] = ()) -> None:
    """Log the MindSpore-mode summary line (INFO on rank 0, DEBUG elsewhere) and each patch at DEBUG."""
    import logging

    logger = logging.getLogger("mindspeed_ms.adaptation")
    line = f"MindSpore backend, {report.summary()}"
    if run.skipped:
        line += "; providers skipped: " + ", ".join(f"{item.name} ({item.reason})" for item in run.skipped)
    if runtime:
        line += "; runtime: " + ", ".join(setting.describe() for setting in runtime)
    logger.log(logging.INFO if current_rank() == 0 else logging.DEBUG, "%s", line)
    for status in report.statuses:
        logger.debug("%s: %s%s%s%s", status.target, status.state,
                     f" -> {status.replacement}" if status.replacement else "",
                     f" [{status.provider}]" if status.provider else "",
                     f" ({status.reason})" if status.reason else "")
