"""``mindspeed-ms run``'s library: the environment that gets ``mindspeed_ms.adaptor`` into every Python process.

:func:`bootstrap_environment` puts the start-up folder (``startup/sitecustomize.py``) first on
``PYTHONPATH``; every Python process started with that environment, and every process those start,
imports the adaptor before its own code (see the sitecustomize's docstring). Nothing else is put on
``PYTHONPATH``: the sitecustomize loads the ``mindspeed_ms`` beside it by its location, so an
interpreter of another virtual environment (the PyTorch reference) sees none of this one's packages.

Interpreters started with ``-S`` (no ``site``), ``-E`` or ``-I`` (``PYTHONPATH`` ignored) are out of reach.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mindspeed_ms.adaptation.settings import FRAMEWORK_ENV, FRAMEWORKS
from mindspeed_ms.engine.errors import AdaptationError

__all__ = ["STARTUP_DIR", "BOOTSTRAP_ENV", "RunCommandError", "CommandNotFoundError", "Launch",
           "bootstrap_environment", "prepare_launch", "execute"]

#: The folder holding the ``sitecustomize.py`` that imports the adaptor.
STARTUP_DIR = str(Path(__file__).resolve().parent / "startup")
#: Set to :data:`STARTUP_DIR` in the bootstrapped environment (tells a process it was started by ``run``).
BOOTSTRAP_ENV = "MINDSPEED_MS_BOOTSTRAP"


class RunCommandError(AdaptationError, ValueError):
    """``mindspeed-ms run`` cannot start the command as given (no command, an unknown framework)."""


class CommandNotFoundError(RunCommandError, FileNotFoundError):
    """The command to run is not an executable on ``PATH`` (nor a path to one).

    Attributes:
        command: the name that was looked up.
    """

    def __init__(self, command: str, path: str) -> None:
        self.command = command
        super().__init__(f"command {command!r} not found on PATH ({path or 'empty'}): put its "
                         f"folder on PATH (e.g. the virtual environment's bin/ for msrun) or give its path")


@dataclass(frozen=True)
class Launch:
    """What :func:`execute` runs: the resolved executable, its arguments and the full environment."""

    executable: str
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)

    def to_dict(self) -> dict[str, object]:
        """Return JSON-serialisable data: the command and the variables the bootstrap sets."""
        return {"executable": self.executable, "argv": list(self.argv),
                "environment": {key: self.env[key] for key in ("PYTHONPATH", BOOTSTRAP_ENV, FRAMEWORK_ENV)
                                if key in self.env}}


def _prepend_path(first: str, current: str | None) -> str:
    """Return ``first`` followed by ``current``'s entries, without ``first`` twice."""
    rest = [entry for entry in (current or "").split(os.pathsep)
            if entry and os.path.abspath(entry) != os.path.abspath(first)]
    return os.pathsep.join([first, *rest])


def bootstrap_environment(environ: Mapping[str, str] | None = None, *,
                          framework: str | None = None) -> dict[str, str]:
    """Return a copy of ``environ`` in which every Python process imports ``mindspeed_ms.adaptor`` first.

    Args:
        environ: the environment to start from; ``os.environ`` when None. It is not changed.
        framework: when given, ``MINDSPEED_AI_FRAMEWORK`` is set to it (a process's own
            ``--ai-framework`` flag still wins there); when None the variable is left as it is.

    Returns:
        The new environment.

    Raises:
        RunCommandError: ``framework`` is not a known framework (a ``ValueError``).
    """
    env = dict(os.environ if environ is None else environ)
    env["PYTHONPATH"] = _prepend_path(STARTUP_DIR, env.get("PYTHONPATH"))
    env[BOOTSTRAP_ENV] = STARTUP_DIR
    if framework is not None:
        name = framework.strip().lower()
        if name not in FRAMEWORKS:
            raise RunCommandError(f"unknown AI framework {framework!r}: choose one of "
                                  + ", ".join(map(repr, FRAMEWORKS)))
        env[FRAMEWORK_ENV] = name
    return env


def prepare_launch(command: Sequence[str], environ: Mapping[str, str] | None = None, *,
                   framework: str | None = None) -> Launch:
    """Return the :class:`Launch` of ``command`` under the bootstrap; nothing is started.

    Args:
        command: the program and its arguments (``["msrun", "--worker_num=2", ..., "train.py", ...]``).
        environ: the environment to start from; ``os.environ`` when None.
        framework: sets ``MINDSPEED_AI_FRAMEWORK`` (see :func:`bootstrap_environment`).

    Raises:
        RunCommandError: ``command`` is empty, or ``framework`` is unknown.
        CommandNotFoundError: the program is not found on the environment's ``PATH``.
    """
    if not command or not command[0]:
        raise RunCommandError("no command given (usage: mindspeed-ms run -- COMMAND [ARGS...])")
    env = bootstrap_environment(environ, framework=framework)
    program = command[0]
    search = env.get("PATH", os.defpath)
    found = shutil.which(program, path=search) if os.sep not in program else (
        program if os.path.isfile(program) and os.access(program, os.X_OK) else None)
    if found is None:
        raise CommandNotFoundError(program, search)
    return Launch(found, tuple(command), env)


def execute(launch: Launch) -> None:
    """Replace this process with ``launch`` (``os.execve``): its exit status and signals are the command's own.

    Raises:
        OSError: the executable could not be started (e.g. not a valid executable format).
    """
    os.execve(launch.executable, list(launch.argv), dict(launch.env))
