"""Differential conformance harness: the same case runs on our backend and on real PyTorch.

A *case* is a plain function ``def name(torch) -> object`` in a module of ``conformance/cases``, decorated
with :func:`case`. It builds its inputs itself (deterministically: :func:`data`), calls the op(s) it names, and
returns what PyTorch's semantics fix: tensors (values, dtype, shape), Python scalars, dtypes, and nested
lists/tuples/dicts of them. Aliasing is checked by returning the input, its aliases and the view's base after
an in-place op; gradients by returning ``x.grad``. A case that raises records the error instead.

Case modules must import nothing heavy at module level: they are imported by pytest (to list the cases)
without torch, and by :mod:`conformance.runner` once per side with the side's ``torch`` passed in.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


@dataclass(frozen=True)
class Case:
    """One registered case: its id (``module.function``), the ops it exercises, the function."""

    id: str
    ops: tuple[str, ...]
    function: Callable[[Any], Any]
    rtol: float | None = None
    atol: float | None = None
    exact: bool = False


_CASES: dict[str, Case] = {}


def case(*ops: str, rtol: float | None = None, atol: float | None = None,
         exact: bool = False) -> Callable[[Callable], Callable]:
    """Register a case exercising ``ops`` (canonical names: ``torch.add``, ``torch.nn.functional.softmax``,
    ``torch.distributed.all_reduce``, ``Tensor.add_``, ``Tensor.__iadd__``).

    ``rtol``/``atol`` override the per-dtype tolerances for every float tensor the case returns. ``exact``: float
    tensors must agree bit for bit where PyTorch is exact (nan at the same places, every other value equal, and the
    same sign, so -0.0 vs +0.0 and -inf vs +inf are failures); tolerances are then ignored.
    """
    if not ops:
        raise ValueError("a case names at least one op it exercises")

    def decorate(function: Callable) -> Callable:
        module = function.__module__.rsplit(".", 1)[-1]
        case_id = f"{module}.{function.__name__}"
        if case_id in _CASES:
            raise ValueError(f"conformance case {case_id!r} is defined twice")
        _CASES[case_id] = Case(case_id, tuple(ops), function, rtol, atol, exact)
        return function

    return decorate


def load_cases() -> dict[str, Case]:
    """Import every module of ``conformance.cases`` and return the registered cases by id (sorted)."""
    package = importlib.import_module("conformance.cases")
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"conformance.cases.{info.name}")
    return dict(sorted(_CASES.items()))


def data(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0, low: float = -2.0,
         high: float = 2.0) -> np.ndarray:
    """Return deterministic NumPy input of ``shape`` and ``dtype`` (the same on both sides)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


#: every tensor dtype the harness reports, by PyTorch name (looked up on whichever ``torch`` runs)
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64")
