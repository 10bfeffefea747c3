"""Read mindspeed_ms's on/off environment variables, one rule for all of them."""

from __future__ import annotations

import os

from mindspeed_ms.engine.errors import SettingError

__all__ = ["read_switch"]

_ON = ("1", "true", "yes", "on")
_OFF = ("", "0", "false", "no", "off")


def read_switch(variable: str) -> bool:
    """Read an on/off environment variable: unset or empty is off; anything but the on/off words is an error.

    Args:
        variable: the environment variable's name.

    Returns:
        Whether the switch is on.

    Raises:
        SettingError: the value is neither ``1``/``true``/``yes``/``on`` nor ``0``/``false``/``no``/``off``.
    """
    raw = os.environ.get(variable) or ""
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise SettingError(variable, raw, "1/true/yes/on or 0/false/no/off")
