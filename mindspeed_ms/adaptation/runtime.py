"""MindSpore runtime settings per device, chosen by measurement, each overridable from the environment.

Applied in MindSpore mode by the adaptation, right after MindSpore is imported and before the
training script builds anything. Nothing here runs in PyTorch mode.

Measured with ``benchmarks/bench_train.py`` on a 2-core x86_64 machine (the example GPT, see README):
on the CPU backend PyNative's asynchronous op queue costs far more than it overlaps: most of a
step waits in it. Synchronous launch (``mindspore.runtime.launch_blocking()``) is the one setting
that helps there, so it is the CPU default; the dispatch-thread count, the CPU intra-op thread count
and CPU affinity did not measurably help and stay MindSpore's own unless set. On Ascend the queue
is what keeps the device busy: nothing is changed there unless the environment asks.

msrun's launcher (MindSpore 2.7.1) polls its workers in a loop that never sleeps: it keeps a whole
core busy while the workers train (80% of a core beside a worker at 105%, the example's tiny GPT on 2
cores). On CPU the worker gives its msrun parent the lowest priority, and where the kernel groups
processes by session (autogroups: msrun starts each worker in a session of its own) the launcher's
session group too (:mod:`.launcher`), so the launcher only gets a core nobody else wants; it computes
nothing, so nothing else changes. The group is what counts on a 2-core machine: at hidden 512 the
example's step fell from 333 to 214 ms (minimum; PyTorch 174 ms), the two-thread matrix products no
longer sharing their second core with the spinning launcher.

| setting | environment variable | CPU default | Ascend/GPU default |
|---|---|---|---|
| synchronous launch | ``MINDSPEED_MS_LAUNCH_BLOCKING`` (1/0) | on | MindSpore's (off) |
| dispatch threads | ``MINDSPEED_MS_DISPATCH_THREADS`` (int) | MindSpore's | MindSpore's |
| CPU intra-op threads | ``MINDSPEED_MS_CPU_OP_THREADS`` (int) | MindSpore's | MindSpore's |
| CPU affinity | ``MINDSPEED_MS_CPU_AFFINITY`` (1/0) | MindSpore's (off) | MindSpore's |
| msrun launcher (and its autogroup) at nice 19 | ``MINDSPEED_MS_QUIET_LAUNCHER`` (1/0) | on | off |
| subnormals kept | ``MINDSPEED_MS_KEEP_SUBNORMALS`` (1/0) | on | MindSpore's (flushed on its CPU threads) |
| forks wait for the pool threads to sleep | ``MINDSPEED_MS_QUIET_FORK`` (1/0) | on | off |

Subnormals: MindSpore's CPU thread pools flush subnormal floats to zero (MXCSR's FTZ and DAZ, set when a pool
thread starts), PyTorch keeps them; :func:`mindspeed_ms.compat.fp_mode.keep_subnormals` makes those writes the
identity before the pools start. It is applied first (a setting such as the CPU thread count may start a pool);
where it cannot be done (another MindSpore build, a pool started before the adaptor), a warning says why and
:func:`subnormal_report` holds the details.

Quiet forks: a process forked while one of MindSpore's pool threads holds its lock (a DataLoader worker forked
right after the parent's last ops) may hang at its first parallel kernel; :mod:`.quiet_fork` makes each fork
wait (~15-150 ms) until the pool threads sleep. Measured on CPU (Megatron-LM's ``pretrain_gpt.py``); the same
pool runs host kernels on Ascend, where it is not measured and stays off unless set.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from mindspeed_ms.adaptation.settings import RUNTIME_ENV

if TYPE_CHECKING:
    from mindspeed_ms.adaptation.settings import Settings
    from mindspeed_ms.compat.fp_mode import KeepReport

__all__ = [
    "RuntimeSetting",
    "SETTINGS_ENV",
    "choose_runtime_settings",
    "apply_runtime_settings",
    "subnormal_report",
]

logger = logging.getLogger(__name__)

#: setting name -> the environment variable that overrides it (read by :mod:`.settings`).
SETTINGS_ENV = RUNTIME_ENV

#: What measurably helps, per device (anything absent keeps MindSpore's default).
_DEFAULTS: dict[str, dict[str, Any]] = {
    "CPU": {"launch_blocking": True, "quiet_launcher": True, "keep_subnormals": True, "quiet_fork": True},
}


@dataclass(frozen=True)
class RuntimeSetting:
    """One runtime setting to apply.

    Attributes:
        name: one of :data:`SETTINGS_ENV`'s keys.
        value: ``True``/``False`` for switches, a positive int for thread counts.
        source: ``"default"`` (measured for this device) or the environment variable that set it.
    """

    name: str
    value: Any
    source: str

    def describe(self) -> str:
        """Return ``name=value`` for the summary line (``(env)`` when the environment chose it)."""
        value = "on" if self.value is True else "off" if self.value is False else str(self.value)
        return f"{self.name}={value}" + ("" if self.source == "default" else " (env)")


def choose_runtime_settings(device: str, settings: Settings) -> tuple[RuntimeSetting, ...]:
    """Return the settings for ``device``: the measured defaults, overridden by the environment's.

    Args:
        device: ``"CPU"``, ``"Ascend"`` or ``"GPU"``.
        settings: the adaptation's settings (the variables were checked when they were read).

    Returns:
        The settings to apply, in a fixed order; switches turned off are included (they say so).
    """
    chosen: list[RuntimeSetting] = []
    defaults = _DEFAULTS.get(device, {})
    for name, variable in SETTINGS_ENV.items():
        value = getattr(settings, name)
        if value is not None:
            chosen.append(RuntimeSetting(name, value, variable))
        elif name in defaults:
            chosen.append(RuntimeSetting(name, defaults[name], "default"))
    return tuple(chosen)


def _launch_blocking(value: bool) -> None:
    if value:
        import mindspore

        mindspore.runtime.launch_blocking()


def _dispatch_threads(value: int) -> None:
    import mindspore

    mindspore.runtime.dispatch_threads_num(value)


def _cpu_op_threads(value: int) -> None:
    from mindspore.device_context.cpu.op_tuning import threads_num

    threads_num(value)


def _cpu_affinity(value: bool) -> None:
    import mindspore

    mindspore.runtime.set_cpu_affinity(value)


def _quiet_launcher(value: bool) -> None:
    if value:
        from mindspeed_ms.adaptation.launcher import lower_launcher_priority

        lower_launcher_priority(restore_at_exit=True)


_KEEP_REPORT: list[KeepReport] = []


def _keep_subnormals(value: bool) -> None:
    if not value:
        return
    import mindspore  # noqa: F401 - its libraries must be loaded to be changed

    from mindspeed_ms.compat.fp_mode import keep_subnormals

    report = keep_subnormals()
    _KEEP_REPORT[:] = [report]
    if report.kept:
        logger.debug("keep_subnormals: %s", report.describe())
    else:
        logger.warning("keep_subnormals: %s", report.describe())


def subnormal_report() -> KeepReport | None:
    """Return what the ``keep_subnormals`` setting did in this process, or None when it did not run."""
    return _KEEP_REPORT[0] if _KEEP_REPORT else None


def _quiet_fork(value: bool) -> None:
    from mindspeed_ms.adaptation import quiet_fork

    if value:
        quiet_fork.install()
    else:
        quiet_fork.uninstall()


_APPLY: dict[str, Callable[[Any], None]] = {
    "launch_blocking": _launch_blocking,
    "dispatch_threads": _dispatch_threads,
    "cpu_op_threads": _cpu_op_threads,
    "cpu_affinity": _cpu_affinity,
    "quiet_launcher": _quiet_launcher,
    "keep_subnormals": _keep_subnormals,
    "quiet_fork": _quiet_fork,
}


def apply_runtime_settings(device: str, settings: Settings) -> tuple[RuntimeSetting, ...]:
    """Choose (:func:`choose_runtime_settings`) and apply MindSpore's runtime settings for ``device``.

    Args:
        device: the device MindSpore computes on.
        settings: the adaptation's settings.

    Returns:
        What was applied.
    """
    chosen = choose_runtime_settings(device, settings)
    for setting in sorted(chosen, key=lambda setting: setting.name != "keep_subnormals"):  # before any pool starts
        _APPLY[setting.name](setting.value)
    return chosen
