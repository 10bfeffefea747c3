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

from mindspeed_ms.engine.errors import AdaptationError

# Kept off the import path on purpose: this module is imported in PyTorch mode, where every
# millisecond counts, and ``typing`` is not loaded by a bare interpreter. Annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

__all__ = ["FRAMEWORKS", "FRAMEWORK_ENV", "DEFAULT_FRAMEWORK", "TrainingArgs", "get_ai_framework", "get_args",
           "declared_args", "with_declared_flags", "FrameworkError", "BackendImportError", "BackendNotInstalledError"]

#: The frameworks a training entrypoint can run on.
FRAMEWORKS: tuple[str, ...] = ("pytorch", "mindspore")
#: Environment variable consulted when ``--ai-framework`` is not on the command line.
FRAMEWORK_ENV = "MINDSPEED_AI_FRAMEWORK"
DEFAULT_FRAMEWORK = "pytorch"

_FLAG = "--ai-framework"


class FrameworkError(AdaptationError, ValueError):
    """The requested AI framework is not one mindspeed_ms knows."""


class BackendImportError(AdaptationError, ImportError):
    """The MindSpore backend cannot be set up: e.g. a real torch was imported before the adaptor.

    ``.name`` is the module concerned, as on :class:`ImportError`.
    """

    def __init__(self, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name


class BackendNotInstalledError(BackendImportError, ModuleNotFoundError):
    """A package the MindSpore backend needs (MSAdapter, MindSpore) is not installed; the message says how."""


def _check_framework(value: str, source: str) -> str:
    name = value.strip().lower()
    if name not in FRAMEWORKS:
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


class TrainingArgs(SimpleNamespace):
    """The training flags, Megatron-style: a flag nobody gave nor declared reads as ``None``.

    ``args.moe_fb_overlap`` is ``None`` when the flag is absent (as on Megatron's full namespace,
    where every flag exists), so provider code written as ``if args.moe_fb_overlap:`` runs
    unchanged. Only names starting with an underscore raise ``AttributeError`` (``copy``,
    ``pickle`` and ``hasattr(args, "__len__")`` probes must keep working).
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return None


def get_args(argv: Sequence[str] | None = None,
             declarations: Sequence[Callable[[Any], object]] = ()) -> TrainingArgs:
    """Return a namespace of every flag on the command line, the way MindSpeed's ``get_mindspeed_args`` does.

    Without ``declarations``, ``--some-flag`` alone becomes ``some_flag=True``; ``--some-flag value``
    and ``--some-flag=value`` become ``some_flag="value"`` (a string: no types are known without the
    training script's parser); a flag followed by several values gets the list of them. A repeated
    flag keeps its last value. Nothing after a bare ``--`` is read. An absent flag reads as ``None``
    (see :class:`TrainingArgs`).

    ``declarations`` are ``register_args(parser)`` functions (MindSpeed's feature vocabulary): each
    adds its flags to one ``argparse`` parser, the command line is parsed with it
    (``parse_known_args``: other flags are left alone), and every declared flag then has its declared
    type and default (``--enable-a2avc 0`` is the int ``0``, an absent ``--seq1f1b-splits`` its
    default). Undeclared flags keep the untyped reading above.

    Args:
        argv: the arguments to read, without the program name; ``sys.argv[1:]`` when None.
            It is never modified.
        declarations: ``register_args(parser)`` callables declaring typed flags.

    Returns:
        A :class:`TrainingArgs` with one attribute per flag given or declared.

    Raises:
        FrameworkError: a declaration fails, or a declared flag's value does not parse
            (e.g. ``--seq1f1b-splits four`` for an ``int`` flag).
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
    if declarations:
        values.update(declared_args(args, declarations))
    return TrainingArgs(**values)


def declared_args(argv: Sequence[str], declarations: Sequence[Callable[[Any], object]]) -> dict[str, Any]:
    """Parse ``argv`` with the flags that ``declarations`` add to one parser; return every declared flag's value.

    Args:
        argv: the arguments, without the program name (nothing after a bare ``--`` is read).
        declarations: ``register_args(parser)`` callables (an ``argparse`` argument group works too,
            since the parser is what they get).

    Returns:
        ``dest -> value`` for every declared flag: typed when given, its default when absent.

    Raises:
        FrameworkError: a declaration raised, or a declared value does not parse.
    """
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse would print usage and exit
            raise FrameworkError(f"the training flags do not parse with the declared types: {message}")

    parser = _Parser(add_help=False, allow_abbrev=False, prog="training script")
    for declare in declarations:
        try:
            declare(parser)
        except (argparse.ArgumentError, TypeError, ValueError) as exc:
            where = getattr(declare, "__qualname__", repr(declare))
            raise FrameworkError(f"declaring training flags with {where} failed: {exc}") from exc
    tokens = list(argv)
    if "--" in tokens:
        tokens = tokens[:tokens.index("--")]
    known, _ = parser.parse_known_args(tokens)
    return vars(known)


def with_declared_flags(args: Any, declarations: Sequence[Callable[[Any], object]],
                        argv: Sequence[str] | None = None) -> Any:
    """Give ``args`` the typed value of every flag that ``declarations`` declare; return ``args``.

    A :class:`TrainingArgs` read from the command line gets every declared flag, typed (its string
    reading replaced). Any other namespace (e.g. Megatron's full one handed to ``repatch``) keeps its
    own values: only the declared flags it lacks are added, with their values from ``argv``.

    Args:
        args: the namespace the providers will get (changed in place).
        declarations: ``register_args(parser)`` callables.
        argv: the command line, without the program name; ``sys.argv[1:]`` when None.

    Raises:
        FrameworkError: a declaration fails, or a declared flag's value does not parse.
    """
    if not declarations:
        return args
    declared = declared_args(sys.argv[1:] if argv is None else argv, declarations)
    from_command_line = isinstance(args, TrainingArgs)
    for dest, value in declared.items():
        if from_command_line or dest not in vars(args):
            setattr(args, dest, value)
    return args
