"""Which AI framework a training process runs on, and the flags it was started with.

Both are read from the command line without changing it and without Megatron's argument parser,
so that ``import mindspeed_ms.adaptor`` can decide what to do before Megatron parses anything.
This module is imported on the PyTorch path too: it must stay cheap (no ``argparse``, no
``importlib.metadata``).
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

# Kept off the import path on purpose: this module is imported in PyTorch mode, where every
# millisecond counts, and ``typing`` is not loaded by a bare interpreter. Annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["FRAMEWORKS", "FRAMEWORK_ENV", "DEFAULT_FRAMEWORK", "get_ai_framework", "get_args"]

#: The frameworks a training entrypoint can run on.
FRAMEWORKS: tuple[str, ...] = ("pytorch", "mindspore")
#: Environment variable consulted when ``--ai-framework`` is not on the command line.
FRAMEWORK_ENV = "MINDSPEED_AI_FRAMEWORK"
DEFAULT_FRAMEWORK = "pytorch"

_FLAG = "--ai-framework"


def _check_framework(value: str, source: str) -> str:
    name = value.strip().lower()
    if name not in FRAMEWORKS:
        from mindspeed_ms.errors import FrameworkError

        choices = ", ".join(repr(choice) for choice in FRAMEWORKS)
        raise FrameworkError(
            f"invalid AI framework {value!r} from {source}: choose one of {choices} "
            f"(e.g. '{_FLAG} mindspore')"
        )
    return name


def _flag_value(argv: Sequence[str]) -> str | None:
    """Return the value of the last ``--ai-framework`` in ``argv`` (argparse's rule), or None."""
    found: str | None = None
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            break
        if token == _FLAG:
            if index + 1 >= len(argv) or argv[index + 1].startswith("--"):
                from mindspeed_ms.errors import FrameworkError

                raise FrameworkError(
                    f"'{_FLAG}' needs a value: choose one of "
                    + ", ".join(repr(choice) for choice in FRAMEWORKS)
                )
            found = argv[index + 1]
            index += 2
            continue
        if token.startswith(_FLAG + "="):
            found = token[len(_FLAG) + 1 :]
        index += 1
    return found


def get_ai_framework(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Return the AI framework this process should run on: ``"pytorch"`` or ``"mindspore"``.

    ``--ai-framework NAME`` and ``--ai-framework=NAME`` are read from the command line (the last
    occurrence wins, as with argparse; nothing after a bare ``--``), then the environment variable
    ``MINDSPEED_AI_FRAMEWORK``; the default is ``"pytorch"``. Names are case-insensitive.

    Args:
        argv: the arguments to read, without the program name; ``sys.argv[1:]`` when None.
            It is never modified.
        environ: the environment to read; ``os.environ`` when None.

    Returns:
        The framework name, lower case.

    Raises:
        FrameworkError: the flag or the environment variable names an unknown framework, or the
            flag has no value. The message lists the valid choices.
    """
    args = sys.argv[1:] if argv is None else argv
    env = os.environ if environ is None else environ
    flag = _flag_value(args)
    if flag is not None:
        return _check_framework(flag, f"'{_FLAG}' on the command line")
    value = env.get(FRAMEWORK_ENV)
    if value:
        return _check_framework(value, f"the environment variable {FRAMEWORK_ENV}")
    return DEFAULT_FRAMEWORK


def _is_flag(token: str) -> bool:
    if not token.startswith("-") or token == "-":
        return False
    # A negative number is a value, not a flag.
    try:
        float(token)
    except ValueError:
        return True
    return False


def _store(values: dict[str, object], key: str, items: list[str]) -> None:
    if not items:
        values[key] = True
    elif len(items) == 1:
        values[key] = items[0]
    else:
        values[key] = list(items)


def get_args(argv: Sequence[str] | None = None) -> SimpleNamespace:
    """Return a namespace of every flag on the command line, the way MindSpeed's ``get_mindspeed_args`` does.

    ``--some-flag`` alone becomes ``some_flag=True``; ``--some-flag value`` and ``--some-flag=value``
    become ``some_flag="value"`` (a string: no types are known without the training script's
    parser); a flag followed by several values gets the list of them. A repeated flag keeps its last
    value. Nothing after a bare ``--`` is read. Providers use this to decide which patches to
    register; absent flags are simply absent (use ``getattr(args, name, default)``).

    Args:
        argv: the arguments to read, without the program name; ``sys.argv[1:]`` when None.

    Returns:
        A ``types.SimpleNamespace`` with one attribute per flag.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    values: dict[str, object] = {}
    key: str | None = None
    items: list[str] = []
    for token in args:
        if token == "--":
            break
        if _is_flag(token):
            if key is not None:
                _store(values, key, items)
            name, sep, inline = token.lstrip("-").partition("=")
            key = name.replace("-", "_")
            items = [inline] if sep else []
            if not key.isidentifier():
                key = None
        elif key is not None:
            items.append(token)
    if key is not None:
        _store(values, key, items)
    return SimpleNamespace(**values)
