"""Pass-through wrappers of hot ops: in C where the optional extension is built, else the same as Python closures.

A wrap that does nothing on a call that succeeds (it only looks at what the op raised, or checks one flag
first) costs a Python frame per call in Python: hundreds of calls a training step. The C objects of
``mindspeed_ms/engine/_passthrough.c`` do the same without a frame; :func:`is_accelerated` tells which kind
this process builds, :func:`accelerator` switches it (tests run both). They are invisible to a profiler (their
time is booked to their caller): :func:`calls` counts their calls, and ``benchmarks/bench_train.py`` adds
their cost to mindspeed_ms's share.

- :func:`guard`: ``func`` called; ``fix()`` first when ``check()`` is false; ``on_error(error)`` (called as
  from an ``except`` block: ``error`` is the exception being handled) is the result when ``func`` raises one of
  ``catch``.
- :func:`fork`: ``func`` called on the common case that one attribute tells (a tensor's dtype), else ``slow``
  (the Python wrapper that handles every case; without the extension, ``slow`` is the wrapper).
- :func:`grad_read`: ``obj.<value>``, ``warn(frames)`` first for a non-leaf that requires grad and does not retain
  it (``frames``: how many Python frames of the reader stand between ``warn`` and the reader's caller: 0 in C).
- :func:`attr_write`: ``setattr(obj, name, value)`` as a property's setter.
- :func:`mark`: ``func``'s result with one attribute set (to a value, or to the first argument where the result is
  another object and the argument has ``ndim`` dimensions).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any, Callable

try:
    from . import _passthrough as _compiled
except ImportError:  # not built: no compiler at install time, another Python (see setup.py)
    _compiled = None  # type: ignore[assignment]

#: The C module's interface this file is written for (``PASSTHROUGH_ABI`` in ``_passthrough.c``): a build older
#: than its source (an in-place build in a development tree, not rebuilt after a pull) is not used.
ABI = 3
#: the interface of the C module found at import (None: none built), whether or not it is used
_BUILT_ABI: int | None = getattr(_compiled, "ABI", None) if _compiled is not None else None
if _compiled is not None and _BUILT_ABI != ABI:
    _compiled = None  # type: ignore[assignment]

__all__ = ["built_abi", "guard", "fork", "grad_read", "attr_write", "mark", "calls", "has_accelerator",
           "is_accelerated", "accelerator"]

#: whether the wrappers built now are the C ones; changed only through accelerator() (tests build both kinds)
_state = {"compiled": _compiled is not None}


def built_abi() -> int | None:
    """The interface version of the C extension found at import (``None``: not built); :data:`ABI` when usable."""
    return _BUILT_ABI


def has_accelerator() -> bool:
    """Tell whether the C extension of the pass-through wrappers was built and imports."""
    return _compiled is not None


def is_accelerated() -> bool:
    """Tell whether :func:`guard`, :func:`grad_read` and :func:`attr_write` build C objects now."""
    return _state["compiled"]


@contextlib.contextmanager
def accelerator(enabled: bool) -> Iterator[None]:
    """Build C wrappers (``True``, where the extension is built) or Python closures inside the block.

    Raises:
        RuntimeError: ``True`` asked where the extension is not built.
    """
    if enabled and _compiled is None:
        raise RuntimeError("mindspeed_ms.engine._passthrough is not built (pip install -e . with a C compiler)")
    previous = _state["compiled"]
    _state["compiled"] = enabled
    try:
        yield
    finally:
        _state["compiled"] = previous


def calls() -> dict[str, int]:
    """Calls the C wrappers of each kind have taken in this process (``{}`` without the extension)."""
    return _compiled.calls() if _compiled is not None else {}


def guard(func: Callable[..., Any], *, catch: type[BaseException] | tuple[type[BaseException], ...] | None = None,
          on_error: Callable[[BaseException], Any] | None = None, check: Callable[[], Any] | None = None,
          fix: Callable[[], Any] | None = None) -> Callable[..., Any]:
    """Return ``func`` wrapped: ``fix()`` first when ``check()`` is false; ``on_error(error)`` when it raises one of
    ``catch`` (it re-raises or raises another; what it returns is the result). The wrapper carries ``func``'s
    name, doc and ``__wrapped__`` (:func:`functools.update_wrapper`) and binds as a method as a function does.

    Raises:
        TypeError: ``catch`` without ``on_error`` (or the reverse), ``check`` without ``fix``, or a non-callable.
    """
    if (catch is None) != (on_error is None) or (check is None) != (fix is None):
        raise TypeError("guard: catch and on_error go together, and so do check and fix")
    if _state["compiled"]:
        wrapper: Any = _compiled.Guard(func, catch, on_error, check, fix)
    else:
        wrapper = _closure(func, catch, on_error, check, fix)
    return functools.update_wrapper(wrapper, func)


def _closure(func: Callable[..., Any], catch: Any, on_error: Any, check: Any, fix: Any) -> Callable[..., Any]:
    """:func:`guard` in Python: the closure for the options given (nothing tested that is not asked for)."""
    if not callable(func):
        raise TypeError("Guard: func must be callable")
    if catch is None:
        def checked(*args: Any, **kwargs: Any) -> Any:
            if not check():
                fix()
            return func(*args, **kwargs)

        return checked if check is not None else _plain(func)
    if check is None:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except catch as error:
                return on_error(error)

        return guarded

    def checked_and_guarded(*args: Any, **kwargs: Any) -> Any:
        if not check():
            fix()
        try:
            return func(*args, **kwargs)
        except catch as error:
            return on_error(error)

    return checked_and_guarded


def fork(func: Callable[..., Any], slow: Callable[..., Any], attr: str | None = None, *, slow_when: Any = None,
         cls: type | None = None, unless: Any = None, test: Callable[[Any], Any] | None = None) -> Callable[..., Any]:
    """Return ``func`` for the common case, ``slow`` (which handles every case itself) for the others.

    With ``attr``, without ``cls``, the common case is ``getattr(args[0], attr, None) is not slow_when``; with
    ``cls``, two positional arguments, both instances of ``cls``, whose ``attr`` is one object, and not ``unless``
    (``None``: no exception). With ``test`` instead of ``attr``: a first positional argument for which
    ``test(args[0])`` is true. Where the extension is not built this returns ``slow`` itself (the same results:
    ``slow`` takes the common case the same way, in Python). The C wrapper carries ``func``'s name, doc and
    ``__wrapped__``.

    Raises:
        TypeError: neither or both of ``attr`` and ``test``.
    """
    if (attr is None) == (test is None):
        raise TypeError("fork: either attr or test")
    if not _state["compiled"]:
        return slow
    wrapper = _compiled.Fork(func, slow, attr, slow_when, cls, unless, test)
    return functools.update_wrapper(wrapper, func)


def _plain(func: Callable[..., Any]) -> Callable[..., Any]:
    def passed(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return passed


def grad_read(value: str, leaf: str, requires: str, retained: str,
              warn: Callable[[int], Any]) -> Callable[[Any], Any]:
    """Return ``read(obj)``: ``obj.<value>``, calling ``warn(frames)`` first when ``not obj.<leaf> and
    obj.<requires> and not getattr(obj, retained, False)`` (``Tensor.grad``'s getter: PyTorch's warning for a
    non-leaf's ``.grad``). ``frames`` is the number of the reader's own Python frames between ``warn`` and the
    code that read the attribute (0 for the C reader, 1 for the Python one): a warning's ``stacklevel``."""
    if _state["compiled"]:
        return _compiled.GradRead(value, leaf, requires, retained, warn)

    def read(obj: Any) -> Any:
        if not getattr(obj, leaf) and getattr(obj, requires) and not getattr(obj, retained, False):
            warn(1)
        return getattr(obj, value)

    return read


def attr_write(name: str) -> Callable[[Any, Any], None]:
    """Return ``write(obj, value)``: ``setattr(obj, name, value)`` (a property's setter)."""
    if _state["compiled"]:
        return _compiled.AttrWrite(name)

    def write(obj: Any, value: Any) -> None:
        setattr(obj, name, value)

    return write


#: :func:`mark`'s default: no value given (the first argument is the value)
_FIRST: Any = object()


def mark(func: Callable[..., Any], name: str, value: Any = _FIRST, *, shape: str | None = None,
         ndim: int | None = None) -> Callable[..., Any]:
    """Return ``func`` wrapped: its result with ``setattr(result, name, value)``; without ``value``, with
    ``shape`` and ``ndim``: ``setattr(result, name, args[0])`` when the result is not ``args[0]`` and
    ``len(args[0].<shape>) == ndim`` (a view naming the tensor it was made from). The wrapper carries ``func``'s
    name, doc and ``__wrapped__`` and binds as a method as a function does.

    Raises:
        TypeError: neither or both of ``value`` and ``shape``/``ndim``, or a non-callable ``func``.
    """
    first = value is _FIRST
    if first != (shape is not None) or first != (ndim is not None) or (ndim is not None and ndim < 0):
        raise TypeError("mark: either value, or shape and ndim (>= 0) for the first argument")
    if _state["compiled"]:
        wrapper: Any = (_compiled.Mark(func, name, shape=shape, ndim=-1 if ndim is None else ndim) if first
                        else _compiled.Mark(func, name, value))
        return functools.update_wrapper(wrapper, func)
    if not callable(func):
        raise TypeError("Mark: func must be callable")
    if not first:
        def marked(*args: Any, **kwargs: Any) -> Any:
            result = func(*args, **kwargs)
            setattr(result, name, value)
            return result

        return functools.update_wrapper(marked, func)
    assert shape is not None

    def marked_by_first(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        if args and result is not args[0] and len(getattr(args[0], shape)) == ndim:
            setattr(result, name, args[0])
        return result

    return functools.update_wrapper(marked_by_first, func)
