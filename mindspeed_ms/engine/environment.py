"""Parse mindspeed_ms's environment variables: one parser per kind of value, each strict.

Every parser takes the variable's name and its raw text (``None`` or empty: unset) and either
returns a value or raises :class:`~mindspeed_ms.engine.errors.SettingError` naming the variable,
the value and what it accepts: a typo never silently means the default. The adaptation's settings
(:mod:`mindspeed_ms.adaptation.settings`) read every variable with these once; the layers below it
that must read their own variable at use (the device override, the ops' composite switch) use the
same parsers. Only ``os`` is imported: this runs on the adaptor's PyTorch-mode import path.
"""

from __future__ import annotations

import os

from mindspeed_ms.engine.errors import SettingError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["SWITCH_ON", "SWITCH_OFF", "parse_switch", "parse_choice", "parse_count", "parse_names", "parse_path",
           "read_switch"]

#: The words a yes/no variable accepts (any case, surrounding blanks ignored).
SWITCH_ON = ("1", "true", "yes", "on")
SWITCH_OFF = ("0", "false", "no", "off")
_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _text(raw: str | None) -> str:
    return (raw or "").strip()


def parse_switch(variable: str, raw: str | None) -> bool | None:
    """Parse a yes/no variable: ``None`` when unset or empty.

    Raises:
        SettingError: the value is neither ``1``/``true``/``yes``/``on`` nor ``0``/``false``/``no``/``off``.
    """
    value = _text(raw).lower()
    if not value:
        return None
    if value in SWITCH_ON:
        return True
    if value in SWITCH_OFF:
        return False
    raise SettingError(variable, raw or "", f"{'/'.join(SWITCH_ON)} or {'/'.join(SWITCH_OFF)}")


def parse_choice(variable: str, raw: str | None, choices: Mapping[str, str]) -> str | None:
    """Parse a variable naming one of ``choices`` (keys lower case, any case accepted): its value, or ``None``.

    Args:
        variable: the variable's name (for the error).
        raw: its text.
        choices: accepted spelling (lower case) -> canonical value (``{"npu": "Ascend", ...}``).

    Raises:
        SettingError: the value is none of the choices.
    """
    value = _text(raw)
    if not value:
        return None
    found = choices.get(value.lower())
    if found is None:
        raise SettingError(variable, raw or "", "one of " + ", ".join(repr(choice) for choice in choices))
    return found


def parse_count(variable: str, raw: str | None) -> int | None:
    """Parse a positive integer (ASCII digits only: ``'²'.isdigit()`` is True and ``int('²')`` raises), or ``None``.

    Raises:
        SettingError: the value is not a positive integer.
    """
    value = _text(raw)
    if not value:
        return None
    if value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    raise SettingError(variable, raw or "", "a positive integer")


def parse_names(variable: str, raw: str | None) -> frozenset[str]:
    """Parse a comma-separated list of names (letters, digits, ``_``, ``.``, ``-``); empty items are ignored.

    Raises:
        SettingError: an item holds another character (a blank inside a name, ``;`` as a separator...).
    """
    names = [item.strip() for item in (raw or "").split(",")]
    for name in names:
        if name and not set(name) <= _NAME_CHARACTERS:
            raise SettingError(variable, raw or "", "comma-separated names of letters, digits, '_', '.' and '-' "
                                                    f"({name!r} is not one)")
    return frozenset(name for name in names if name)


def parse_path(variable: str, raw: str | None) -> str | None:
    """Parse a file or folder path (kept as given, it need not exist yet), or ``None`` when unset or blank.

    Raises:
        SettingError: the value holds a NUL character or starts or ends with blanks (no file system
            path does so by intent; a quoting slip does).
    """
    if raw is None or not raw.strip():
        return None
    if "\0" in raw or raw != raw.strip():
        raise SettingError(variable, raw, "a path without NUL characters or surrounding blanks")
    return raw


def read_switch(variable: str, environ: Mapping[str, str] | None = None) -> bool:
    """Read a yes/no variable at use (unset or empty: off), for the layers below the adaptation's settings.

    Raises:
        SettingError: as :func:`parse_switch`.
    """
    env = os.environ if environ is None else environ
    return bool(parse_switch(variable, env.get(variable)))
