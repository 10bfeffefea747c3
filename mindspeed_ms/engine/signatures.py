"""Check that a replacement accepts every call the original accepts.

Plain Python functions are compared through their code objects (a few attribute reads, cheap
enough to run for every patch at apply time); anything else goes through :mod:`inspect`, imported
only then. Callables without a signature (C functions, some builtins) are skipped, not failed.
"""

from __future__ import annotations

from types import FunctionType
from typing import Any

__all__ = ["signature_problems", "unwrap_descriptor"]

_VARARGS = 0x04
_VARKEYWORDS = 0x08

# (positional names, positional-only count, number of required positionals, keyword-only names,
#  required keyword-only names, has *args, has **kwargs)
_Shape = tuple[tuple[str, ...], int, int, tuple[str, ...], tuple[str, ...], bool, bool]


def unwrap_descriptor(obj: Any) -> Any:
    """Return the function inside a staticmethod/classmethod, a property's getter, else ``obj``."""
    if isinstance(obj, (staticmethod, classmethod, property)):
        return obj.fget if isinstance(obj, property) else obj.__func__
    return obj


def _code_shape(func: FunctionType) -> _Shape:
    code = func.__code__
    count = code.co_argcount
    kwonly = code.co_kwonlyargcount
    names = code.co_varnames
    positional = names[:count]
    keyword_only = names[count:count + kwonly]
    defaults = func.__defaults__ or ()
    kwdefaults = func.__kwdefaults__ or {}
    required_kw = tuple(name for name in keyword_only if name not in kwdefaults)
    return (positional, code.co_posonlyargcount, count - len(defaults), keyword_only, required_kw,
            bool(code.co_flags & _VARARGS), bool(code.co_flags & _VARKEYWORDS))


def _inspect_shape(obj: Any) -> _Shape | None:
    import inspect

    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    positional: list[str] = []
    posonly = required = 0
    keyword_only: list[str] = []
    required_kw: list[str] = []
    has_args = has_kwargs = False
    for param in signature.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional.append(param.name)
            if param.kind is param.POSITIONAL_ONLY:
                posonly += 1
            if param.default is param.empty:
                required = len(positional)
        elif param.kind is param.KEYWORD_ONLY:
            keyword_only.append(param.name)
            if param.default is param.empty:
                required_kw.append(param.name)
        elif param.kind is param.VAR_POSITIONAL:
            has_args = True
        else:
            has_kwargs = True
    return (tuple(positional), posonly, required, tuple(keyword_only), tuple(required_kw), has_args,
            has_kwargs)


def _shape(obj: Any) -> _Shape | None:
    obj = unwrap_descriptor(obj)
    if type(obj) is FunctionType and not hasattr(obj, "__wrapped__") and not hasattr(obj, "__signature__"):
        return _code_shape(obj)
    if not callable(obj):
        return None
    return _inspect_shape(obj)


def signature_problems(original: Any, replacement: Any) -> list[str]:
    """List the ways ``replacement`` cannot accept a call that ``original`` accepts.

    Args:
        original: the object being replaced (descriptors are unwrapped).
        replacement: the object installed instead.

    Returns:
        One sentence per problem; empty when compatible or when either signature is unknowable.
    """
    if original is replacement:
        return []
    if _same_plain_shape(original, replacement):
        return []
    return shape_problems(_shape(original), _shape(replacement))


def _same_plain_shape(original: Any, replacement: Any) -> bool:
    """Tell quickly whether a plain function replacement takes every call a plain function original takes.

    The common case at apply time (a replacement written with the original's parameters, perhaps
    more of them with defaults), decided from the code objects without building the shapes: the
    original's positional names are a prefix of the replacement's, the keyword-only names are the
    same, the replacement requires no more than the original and has ``*args``/``**kwargs`` where the
    original has them. Anything else goes the long way (:func:`shape_problems`).
    """
    if type(original) is not FunctionType or type(replacement) is not FunctionType:
        return False
    old, new = original.__code__, replacement.__code__
    old_count, new_count, kwonly = old.co_argcount, new.co_argcount, old.co_kwonlyargcount
    if (new_count < old_count or kwonly != new.co_kwonlyargcount or old.co_posonlyargcount != new.co_posonlyargcount
            or old.co_flags & ~new.co_flags & (_VARARGS | _VARKEYWORDS)):
        return False
    old_defaults, new_defaults = original.__defaults__, replacement.__defaults__
    if new_count - (len(new_defaults) if new_defaults else 0) > old_count - (len(old_defaults) if old_defaults else 0):
        return False
    # co_varnames is built anew at each read (CPython 3.11+): read once per code object
    old_names, new_names = old.co_varnames, new.co_varnames
    if old_names[:old_count] != new_names[:old_count] or (
            kwonly and old_names[old_count:old_count + kwonly] != new_names[new_count:new_count + kwonly]):
        return False
    old_kwdefaults = original.__kwdefaults__
    if old_kwdefaults and not old_kwdefaults.keys() <= (replacement.__kwdefaults__ or {}).keys():
        return False
    # a decorated function may carry another signature than its code says
    return _SIGNATURE_CARRIERS.isdisjoint(original.__dict__) and _SIGNATURE_CARRIERS.isdisjoint(replacement.__dict__)


_SIGNATURE_CARRIERS = frozenset({"__wrapped__", "__signature__"})


def ast_shape(node: Any) -> _Shape | None:
    """Return the call shape of an ``ast.FunctionDef`` as read from source, or None when it can't be known.

    A decorator other than ``staticmethod``/``classmethod`` may change the signature: None then.
    """
    import ast

    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for decorator in node.decorator_list:
        if not (isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod")):
            return None
    arguments = node.args
    positional = tuple(arg.arg for arg in arguments.posonlyargs + arguments.args)
    keyword_only = tuple(arg.arg for arg in arguments.kwonlyargs)
    required_kw = tuple(arg.arg for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults)
                        if default is None)
    return (positional, len(arguments.posonlyargs), len(positional) - len(arguments.defaults), keyword_only,
            required_kw, arguments.vararg is not None, arguments.kwarg is not None)


def object_shape(obj: Any) -> _Shape | None:
    """Return the call shape of a live object (descriptors unwrapped), or None when it can't be known."""
    return _shape(obj)


def shape_problems(old: _Shape | None, new: _Shape | None) -> list[str]:
    """List the ways a callable of shape ``new`` cannot accept a call that one of shape ``old`` accepts.

    Returns:
        One sentence per problem; empty when compatible or when either shape is unknown (None).
    """
    if old is None or new is None:
        return []
    old_pos, old_posonly, old_required, old_kwonly, old_required_kw, old_args, old_kwargs = old
    new_pos, new_posonly, new_required, new_kwonly, new_required_kw, new_args, new_kwargs = new
    problems: list[str] = []
    if len(old_pos) > len(new_pos) and not new_args:
        problems.append(f"takes at most {len(new_pos)} positional arguments where the original takes "
                        f"{len(old_pos)} and has no *args")
    new_keywords = set(new_pos[new_posonly:]) | set(new_kwonly)
    for name in tuple(old_pos[old_posonly:]) + old_kwonly:
        if name not in new_keywords and not new_kwargs:
            problems.append(f"does not accept the original's parameter {name!r} by keyword")
    if old_args and not new_args:
        problems.append("has no *args where the original has *args")
    if old_kwargs and not new_kwargs:
        problems.append("has no **kwargs where the original has **kwargs")
    old_keywords = set(old_pos[old_posonly:]) | set(old_kwonly)
    for index, name in enumerate(new_pos[:new_required]):
        if index >= len(old_pos) and not old_args and not (name in old_keywords or old_kwargs):
            problems.append(f"requires parameter {name!r}, which calls of the original never pass")
    for index, name in enumerate(new_pos[:new_required]):
        if old_required <= index < len(old_pos) and old_pos[index] == name:
            problems.append(f"requires parameter {name!r}, which the original gives a default (calls may omit it)")
    for name in new_required_kw:
        if name not in old_keywords and not old_kwargs:
            problems.append(f"requires keyword-only parameter {name!r}, which calls of the original never pass")
        elif name in old_kwonly and name not in old_required_kw:
            problems.append(f"requires keyword-only parameter {name!r}, which the original gives a default "
                            f"(calls may omit it)")
    return problems
