"""The commands that start processes with ``mindspeed_ms.adaptor`` first, scripts unchanged.

``mindspeed-ms run`` (:mod:`~mindspeed_ms.bootstrap.cli` over :mod:`~mindspeed_ms.bootstrap.launch`) and
``mindspeed-ms parity`` (:mod:`~mindspeed_ms.bootstrap.parity_cli` over :mod:`~mindspeed_ms.bootstrap.parity_runner`,
which starts both runs through the same bootstrap and compares them with :mod:`mindspeed_ms.parity`'s library).
"""

from mindspeed_ms.bootstrap.launch import (
    BOOTSTRAP_ENV,
    STARTUP_DIR,
    CommandNotFoundError,
    Launch,
    RunCommandError,
    bootstrap_environment,
    execute,
    prepare_launch,
)

__all__ = ["BOOTSTRAP_ENV", "STARTUP_DIR", "CommandNotFoundError", "Launch", "RunCommandError",
           "bootstrap_environment", "execute", "prepare_launch"]
