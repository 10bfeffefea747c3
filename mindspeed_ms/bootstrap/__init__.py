"""``mindspeed-ms run``: get ``mindspeed_ms.adaptor`` into every Python process of a command, scripts unchanged."""

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
