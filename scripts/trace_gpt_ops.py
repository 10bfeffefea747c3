"""Record which torch ops megatron-core's GPT example calls on real PyTorch (the GPT path of the inventory).

Run with the reference interpreter under torchrun (one worker is enough; more add the parallel paths)::

    PYTHONPATH=$PWD .venv-ref/bin/python -m torch.distributed.run --nproc-per-node 1 \\
        scripts/trace_gpt_ops.py gpt_trace.json examples/pretrain_gpt.py --train-iters 2

A ``torch.overrides.TorchFunctionMode`` sees every ``torch.*`` function, ``torch.nn.functional.*`` function and
``Tensor`` method/operator called from Python (only the outermost call: what the script and megatron call, not
what PyTorch calls inside them); ``torch.distributed`` functions, which do not dispatch through
``__torch_function__``, are wrapped. Rank 0 writes the sorted JSON list of canonical names
(``torch.cat``, ``torch.nn.functional.softmax``, ``torch.distributed.all_reduce``, ``Tensor.__iadd__``).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed
import torch.nn.functional
from torch.overrides import TorchFunctionMode


def _names() -> dict[int, set[str]]:
    names: dict[int, set[str]] = {}
    for name in dir(torch.Tensor):
        names.setdefault(id(getattr(torch.Tensor, name)), set()).add(f"Tensor.{name}")
    for prefix, module in (("torch", torch), ("torch.nn.functional", torch.nn.functional)):
        for name in dir(module):
            obj = getattr(module, name, None)
            if callable(obj) and not inspect.isclass(obj):
                names.setdefault(id(obj), set()).add(f"{prefix}.{name}")
    return names


#: an operator dispatches under the name of the method it calls: ``a + b`` reaches the mode as ``Tensor.add``,
#: ``a += b`` as ``Tensor.add_``. The trace cannot tell them apart, so a method marks its operators too.
OPERATORS = {"add": ("__add__", "__radd__"), "add_": ("__iadd__",), "sub": ("__sub__",), "sub_": ("__isub__",),
             "mul": ("__mul__", "__rmul__"), "mul_": ("__imul__",), "div": ("__truediv__",),
             "div_": ("__itruediv__",), "floor_divide_": ("__ifloordiv__",), "pow": ("__pow__",),
             "pow_": ("__ipow__",), "remainder": ("__mod__",), "neg": ("__neg__",), "matmul": ("__matmul__",),
             "lt": ("__lt__",), "le": ("__le__",), "gt": ("__gt__",), "ge": ("__ge__",), "ne": ("__ne__",),
             "eq": ("__eq__",)}


class Recorder(TorchFunctionMode):
    """Adds the names of every function dispatched through ``__torch_function__`` to ``seen``."""

    def __init__(self, seen: set[str]) -> None:
        super().__init__()
        self.seen = seen
        self.names = _names()

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        found = self.names.get(id(func))
        if found:
            self.seen.update(found)
            for name in found:
                if name.startswith("Tensor."):
                    self.seen.update(f"Tensor.{op}" for op in OPERATORS.get(name[len("Tensor."):], ()))
        elif getattr(func, "__name__", None):
            self.seen.add(f"{getattr(func, '__module__', None) or 'Tensor'}.{func.__name__}")
        kwargs = kwargs or {}
        if func in (torch.autograd.backward, torch.Tensor.backward) and not kwargs.get("inputs"):
            return self._backward(func, args, kwargs)
        return func(*args, **kwargs)

    def _backward(self, func: Any, args: tuple, kwargs: dict) -> None:
        """Run a backward pass with this mode active: the mode is off inside its own handler, and everything
        autograd runs (Functions' backward, gradient hooks: megatron's DDP) would go unseen."""
        from torch.autograd import _make_grads, _tensor_or_tensors_to_tuple
        from torch.autograd.graph import _engine_run_backward

        names = ("tensors", "grad_tensors", "retain_graph", "create_graph")
        bound = dict(zip(names, args))
        bound.update({"grad_tensors": kwargs.get("gradient", kwargs.get("grad_tensors", bound.get("grad_tensors"))),
                      **{k: kwargs[k] for k in ("retain_graph", "create_graph") if k in kwargs}})
        tensors = bound["tensors"]
        tensors = (tensors,) if isinstance(tensors, torch.Tensor) else tuple(tensors)
        create_graph = bool(bound.get("create_graph", False))
        retain_graph = bound.get("retain_graph")
        with self:
            grads = _make_grads(tensors, _tensor_or_tensors_to_tuple(bound.get("grad_tensors"), len(tensors)),
                                is_grads_batched=False)
            _engine_run_backward(tensors, grads, create_graph if retain_graph is None else retain_graph,
                                 create_graph, (), allow_unreachable=True, accumulate_grad=True)


def _wrap_distributed(seen: set[str]) -> None:
    for name in dir(torch.distributed):
        obj = getattr(torch.distributed, name)
        if name.startswith("__") or not inspect.isfunction(obj):
            continue

        def wrapper(*args: Any, _obj: Any = obj, _name: str = name, **kwargs: Any) -> Any:
            seen.add(f"torch.distributed.{_name}")
            return _obj(*args, **kwargs)

        setattr(torch.distributed, name, functools.wraps(obj)(wrapper))


def main() -> None:
    out, script, *script_args = sys.argv[1:]
    seen: set[str] = set()
    _wrap_distributed(seen)
    sys.argv = [script, *script_args]
    try:
        with Recorder(seen):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    finally:
        if os.environ.get("RANK", "0") == "0":
            Path(out).write_text(json.dumps(sorted(seen), indent=0) + "\n")


if __name__ == "__main__":
    main()
