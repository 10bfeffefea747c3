"""Which AI framework a process runs on (decided once, here), and the flags providers are handed.

:func:`decide_framework` is the one place the ``--ai-framework`` decision is made: the flag on the
command line, else ``MINDSPEED_AI_FRAMEWORK`` (read into the :class:`~.settings.Settings`), else
:data:`DEFAULT_FRAMEWORK`. The adaptation, the CLI, the pytest plugin and ``mindspeed-ms doctor`` all
ask it. The decision is handed to providers as ``args.ai_framework`` on a :class:`ProviderArgs`, a
view over the caller's namespace: a user's namespace (Megatron's parsed arguments handed to
``repatch``) is read, never written.

Flags are read from the command line without changing it and without Megatron's argument parser,
so that ``import mindspeed_ms.adaptor`` can decide what to do before Megatron parses anything.
This module is imported on the PyTorch path too: it must stay cheap (no ``argparse``, no
``importlib.metadata``, no ``typing``).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

from mindspeed_ms.adaptation.settings import FRAMEWORK_ENV, FRAMEWORKS, Settings

# Kept off the import path on purpose: this module is imported in PyTorch mode, where every
# millisecond counts, and ``typing`` is not loaded by a bare interpreter. Annotations are strings.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

__all__ = ["FRAMEWORKS", "FRAMEWORK_ENV", "DEFAULT_FRAMEWORK", "FrameworkChoice", "TrainingArgs", "ProviderArgs",
           "decide_framework", "framework_flag", "get_ai_framework", "get_args", "declared_args",
           "with_declared_flags"]

#: The one default: a training process runs on PyTorch unless told otherwise (MindSpeed's rule).
DEFAULT_FRAMEWORK = "pytorch"

_FLAG = "--ai-framework"


def _check_framework(value: str, source: str) -> str:
    name = value.strip().lower()
    if name not in FRAMEWORKS:
        from mindspeed_ms.adaptation.errors import FrameworkError

        choices = ", ".join(repr(choice) for choice in FRAMEWORKS)
        raise FrameworkError(
            f"invalid AI framework {value!r} from {source}: choose one of {choices} "
            f"(e.g. '{_FLAG} mindspore')"
        )
    return name


def framework_flag(argv: Sequence[str]) -> str | None:
    """Return the framework named by the last ``--ai-framework`` in ``argv`` (argparse's rule), or None.

    Nothing after a bare ``--`` is read; ``argv`` is never modified.

    Raises:
        FrameworkError: the flag has no value, or names an unknown framework.
    """
    found: str | None = None
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            break
        if token == _FLAG:
            if index + 1 >= len(argv) or argv[index + 1].startswith("--"):
                from mindspeed_ms.adaptation.errors import FrameworkError

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
    return None if found is None else _check_framework(found, f"'{_FLAG}' on the command line")


class FrameworkChoice:
    """The framework decided, and what decided it (for ``doctor`` and the summary line).

    Attributes:
        name: ``"pytorch"`` or ``"mindspore"``.
        source: ``"flag"`` (``--ai-framework``, or a caller's explicit choice), ``"environment"``
            (``MINDSPEED_AI_FRAMEWORK``) or ``"default"``.
    """

    __slots__ = ("name", "source")

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source

    def __repr__(self) -> str:
        return f"FrameworkChoice({self.name!r}, {self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameworkChoice) and (self.name, self.source) == (other.name, other.source)

    def __hash__(self) -> int:
        return hash((self.name, self.source))


def decide_framework(argv: Sequence[str] | None = None, settings: Settings | None = None, *,
                     given: str | None = None) -> FrameworkChoice:
    """Decide the framework: ``given``, else ``--ai-framework`` in ``argv``, else the setting, else the default.

    Args:
        argv: the arguments to read, without the program name; ``sys.argv[1:]`` when None.
        settings: the settings (``MINDSPEED_AI_FRAMEWORK``); read from ``os.environ`` when None.
        given: a framework chosen explicitly by the caller (a CLI option, ``args.ai_framework``).

    Returns:
        The :class:`FrameworkChoice`.

    Raises:
        FrameworkError: the choice, the flag or the variable names an unknown framework, or the flag
            has no value. The message lists the valid choices.
    """
    if given is not None:
        return FrameworkChoice(_check_framework(str(given), "the caller"), "flag")
    flag = framework_flag(sys.argv[1:] if argv is None else argv)
    if flag is not None:
        return FrameworkChoice(flag, "flag")
    chosen = (settings if settings is not None else Settings.from_environ()).framework
    if chosen is not None:
        return FrameworkChoice(chosen, "environment")
    return FrameworkChoice(DEFAULT_FRAMEWORK, "default")


def get_ai_framework(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Return the AI framework this process should run on: ``"pytorch"`` or ``"mindspore"``.

    ``--ai-framework NAME`` and ``--ai-framework=NAME`` are read from the command line (the last
    occurrence wins, as with argparse; nothing after a bare ``--``), then the environment variable
    ``MINDSPEED_AI_FRAMEWORK``; the default is ``"pytorch"``. Names are case-insensitive. This is
    :func:`decide_framework`'s answer, by MindSpeed's name.

    Args:
        argv: the arguments to read, without the program name; ``sys.argv[1:]`` when None.
            It is never modified.
        environ: the environment to read; ``os.environ`` when None.

    Returns:
        The framework name, lower case.

    Raises:
        FrameworkError: the flag or the environment variable names an unknown framework, or the
            flag has no value. The message lists the valid choices.
        SettingError: another variable of the environment is malformed (they are read together).
    """
    return decide_framework(argv, Settings.from_environ(environ)).name


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


class ProviderArgs:
    """The namespace a provider's ``register(registry, args)`` gets: a view over the caller's namespace.

    Reading an attribute gives, in order: what was set on the view (the framework decided, as
    ``ai_framework``; the typed values of the flags providers declare; anything a provider sets),
    then the caller's namespace. Nothing is ever written to the caller's namespace, so a user's
    Megatron arguments handed to ``repatch`` stay exactly as they were.

    Args:
        base: the caller's namespace (a :class:`TrainingArgs` read from ``sys.argv``, Megatron's...).
        **values: attributes of the view itself.
    """

    def __init__(self, base: Any, **values: Any) -> None:
        object.__setattr__(self, "_base", base)
        self.__dict__.update(values)

    @property
    def base(self) -> Any:
        """Return the caller's namespace the view reads through to."""
        return object.__getattribute__(self, "_base")

    def __getattr__(self, name: str) -> Any:  # only for names the view itself does not hold
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_base"), name)

    def __repr__(self) -> str:
        own = ", ".join(f"{key}={value!r}" for key, value in vars(self).items() if key != "_base")
        return f"ProviderArgs({own}; over {self.base!r})"


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

    from mindspeed_ms.adaptation.errors import FrameworkError

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


def with_declared_flags(args: ProviderArgs, declarations: Sequence[Callable[[Any], object]],
                        argv: Sequence[str] | None = None) -> ProviderArgs:
    """Give the view ``args`` the typed value of every flag that ``declarations`` declare; return it.

    Over a :class:`TrainingArgs` read from the command line, the view gets every declared flag, typed
    (its string reading shadowed). Over any other namespace (e.g. Megatron's full one handed to
    ``repatch``) the namespace's own values win: only the declared flags it lacks are added to the
    view, with their values from ``argv``. The namespace itself is never written.

    Args:
        args: the view the providers will get (changed in place).
        declarations: ``register_args(parser)`` callables.
        argv: the command line, without the program name; ``sys.argv[1:]`` when None.

    Raises:
        FrameworkError: a declaration fails, or a declared flag's value does not parse.
    """
    if not declarations:
        return args
    declared = declared_args(sys.argv[1:] if argv is None else argv, declarations)
    base = args.base
    from_command_line = isinstance(base, TrainingArgs)
    own = vars(base) if hasattr(base, "__dict__") else {}
    for dest, value in declared.items():
        if from_command_line or dest not in own:
            setattr(args, dest, value)
    return args
