"""Run every in-place replacement on views of every kind under MSAdapter; print one JSON line per case.

Each case applies the same op through the same view to a MindSpore tensor and to a NumPy array
(whose views really write through) and reports both bases and views. Run in a subprocess:
MSAdapter changes MindSpore's Tensor class for the whole process.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import msadapter  # noqa: F401  (first: `import torch` is MSAdapter's)
import numpy as np
import torch

from mindspeed_ms.compat import inplace, inplace_ops

VIEWS = {
    "view": (lambda t: t.view(2, 12), lambda a: a.reshape(2, 12)),
    "view_of_view": (lambda t: t.view(2, 12).view(24), lambda a: a.reshape(2, 12).reshape(24)),
    "narrow": (lambda t: t.narrow(1, 2, 3), lambda a: a[:, 2:5]),
    "transpose": (lambda t: t.transpose(0, 1), lambda a: a.T),
    "t": (lambda t: t.t(), lambda a: a.T),
    "row_slice": (lambda t: t[1:3], lambda a: a[1:3]),
    "block_slice": (lambda t: t[1:3, 1:4], lambda a: a[1:3, 1:4]),
    "full_slice": (lambda t: t[:], lambda a: a[:]),
    "select": (lambda t: t[2], lambda a: a[2]),
    "narrow_of_transpose": (lambda t: t.transpose(0, 1).narrow(0, 1, 2), lambda a: a.T[1:3]),
    "owner": (lambda t: t, lambda a: a),
}


def _numpy_ops(shape: tuple) -> dict:
    mask = (np.arange(int(np.prod(shape))).reshape(shape) % 3) == 0
    other = (np.arange(int(np.prod(shape))).reshape(shape) % 5 + 1).astype(np.float32)
    return {
        "zero_": (lambda t: inplace_ops.zero_(t), lambda a: a.__setitem__(..., 0)),
        "fill_": (lambda t: inplace_ops.fill_(t, 3.5), lambda a: a.__setitem__(..., 3.5)),
        "masked_fill_": (lambda t: inplace_ops.masked_fill_(t, torch.tensor(mask), -1.0),
                         lambda a: a.__setitem__(mask, -1.0)),
        "add_": (lambda t: inplace_ops.add_(t, torch.tensor(other), alpha=2), lambda a: a.__iadd__(2 * other)),
        # alpha 1, same dtype: contiguous views are summed in host memory (inplace.add_through_view)
        "add_same_dtype": (lambda t: inplace_ops.add_(t, torch.tensor(other)), lambda a: a.__iadd__(other)),
        "sub_": (lambda t: inplace_ops.sub_(t, 1.5), lambda a: a.__isub__(1.5)),
        "mul_": (lambda t: inplace_ops.mul_(t, torch.tensor(other)), lambda a: a.__imul__(other)),
        "div_": (lambda t: inplace_ops.div_(t, torch.tensor(other)), lambda a: a.__itruediv__(other)),
        "exp_": (lambda t: inplace_ops.exp_(t), lambda a: np.exp(a, out=a)),
        "copy_": (lambda t: inplace.write_through_copy(torch.Tensor.copy_)(t, torch.tensor(other * 7)),
                  lambda a: a.__setitem__(..., other * 7)),
    }


def main() -> None:
    for view_name, (make_view, make_numpy_view) in VIEWS.items():
        shape = make_numpy_view(np.zeros((4, 6), np.float32)).shape
        for op_name, (apply, apply_numpy) in _numpy_ops(shape).items():
            start = (np.arange(24, dtype=np.float32).reshape(4, 6) / 10.0)
            base = torch.tensor(start.copy())
            view = make_view(base)
            returned = apply(view)
            expected_base = start.copy()
            apply_numpy(make_numpy_view(expected_base))
            print(json.dumps({
                "view": view_name, "op": op_name, "returned_self": returned is view,
                "base": base.numpy().tolist(), "view_values": view.numpy().tolist(),
                "expected_base": expected_base.tolist(),
                "expected_view": make_numpy_view(expected_base).tolist(),
            }), flush=True)
    _grad_cases()
    _by_one_cases()
    _host_add_cases()
    _view_adder_cases()
    sys.stdout.flush()


def _by_one_cases() -> None:
    """megatron's loss scaling by 1 (``output_tensor *= 1``, ``/= 1``): no kernel, so no new autograd node."""
    weight = torch.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    loss = (weight * 3.0).sum()
    before = repr(loss._grad_node)
    returned = [inplace_ops.mul_(loss, 1) is loss, inplace_ops.div_(loss, 1) is loss,
                inplace_ops.mul_(loss, 1.0) is loss, inplace_ops.div_(loss, 1.0) is loss]
    after_one = repr(loss._grad_node)
    inplace_ops.add_(loss, 0.5)  # the control: a write autograd records adds a node
    print(json.dumps({"case": "by_one", "returned_self": returned, "before": before, "after_one": after_one,
                      "after_add": repr(loss._grad_node), "loss": float(loss.detach().numpy())}), flush=True)


def _host_add_cases() -> None:
    """DDP's main_grad.add_(grad) shape: views of one buffer added in host memory, and PyTorch's refusals kept."""
    buffer = torch.tensor(np.arange(12, dtype=np.float32))
    same = buffer[0:6].view(2, 3)
    inplace_ops.add_(same, buffer[0:6].view(2, 3))  # the same memory, the same layout: PyTorch doubles it
    try:
        inplace_ops.add_(buffer[0:6].view(2, 3), buffer[3:9].view(2, 3))
    except inplace_ops.InPlaceWriteError as exc:
        overlap = exc.rule
    else:
        overlap = None
    grads = torch.tensor(np.full(6, 0.25, np.float32))
    inplace_ops.add_(buffer[6:12].view(2, 3), grads.view(2, 3))
    print(json.dumps({"case": "host_add", "buffer": buffer.numpy().tolist(), "overlap_rule": overlap}), flush=True)
    # what the host add leaves to the general path: another dtype, integers, a view autograd records
    mixed = torch.tensor(np.arange(6, dtype=np.float32))
    inplace_ops.add_(mixed[0:3], torch.tensor(np.array([0.1, 0.2, 0.3])))  # float64 into float32: rounded once
    integers = torch.tensor(np.arange(6, dtype=np.int32))
    inplace_ops.add_(integers[2:5], torch.tensor(np.array([7, 8, 9], np.int32)))
    leaf = torch.zeros(6, requires_grad=True)
    try:
        inplace_ops.add_(leaf[0:3], torch.ones(3))
    except RuntimeError as exc:
        refused = type(exc).__name__
    else:
        refused = None
    print(json.dumps({"case": "host_add_fallbacks", "mixed": mixed.numpy().tolist(),
                      "integers": integers.numpy().tolist(), "leaf_view": refused,
                      "leaf": leaf.detach().numpy().tolist()}), flush=True)


def _edge_values(n: int, dtype: type, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, n).astype(dtype)
    values = (rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 3, n)).astype(dtype)
    edges = [0.0, -0.0, 1e-45, -1e-45, 3e-39, 1e30, -1e30, np.inf, -np.inf, np.nan, 3.4e38]
    with np.errstate(over="ignore"):  # float16: the huge values are inf
        values[:min(n, len(edges))] = np.array(edges[:n]).astype(dtype)
    return values


def _view_adder_pairs(dtype: type, seed: int) -> dict:
    """name -> a function building (base, tensor, other) afresh: DDP's add and every way around it."""
    def fresh(n: int = 24, kind: type = dtype) -> tuple:
        base = torch.tensor(_edge_values(n, kind, seed))
        return base, base

    def pair(view: Any, other_of: Any) -> Any:  # view(base) -> tensor, other_of(base) -> other
        def build() -> tuple:
            base, _ = fresh()
            return base, view(base), other_of(base)
        return build

    def grads(shape: tuple) -> Any:
        return lambda base: torch.tensor(_edge_values(int(np.prod(shape)), dtype, seed + 1).reshape(shape))

    return {
        "ddp_view": pair(lambda b: b[6:12].view(2, 3), grads((2, 3))),
        "offset_slice": pair(lambda b: b[6:12], grads((6,))),
        "offset_zero_view": pair(lambda b: b.view(4, 6), grads((4, 6))),
        "owner": pair(lambda b: b, grads((24,))),
        "same_memory": pair(lambda b: b[0:6].view(2, 3), lambda b: b[0:6].view(2, 3)),
        "partial_overlap": pair(lambda b: b[0:6].view(2, 3), lambda b: b[3:9].view(2, 3)),
        "apart_views": pair(lambda b: b[0:6], lambda b: b[12:18]),
        "transposed": pair(lambda b: b.view(4, 6).t(), grads((6, 4))),
        "transposed_other": pair(lambda b: b[0:24].view(6, 4), lambda b: torch.tensor(
            _edge_values(24, dtype, seed + 2).reshape(4, 6)).t()),
        "broadcast": pair(lambda b: b[0:6].view(2, 3), grads((3,))),
        "other_dims": pair(lambda b: b[0:6].view(2, 3), grads((6,))),
        "ones_dims": pair(lambda b: b[6:12].view(1, 6, 1), grads((1, 6, 1))),
        "empty": pair(lambda b: b[6:6], grads((0,))),
        "other_dtype": pair(lambda b: b[6:12], lambda b: torch.tensor(np.ones(6, np.float16))),
        "integers": pair(lambda b: b[6:12], lambda b: torch.tensor(np.arange(6, dtype=np.int32))),
        "not_a_tensor": pair(lambda b: b[6:12], lambda b: np.ones(6, dtype)),
        "python_number": pair(lambda b: b[6:12], lambda b: 1.5),
        "long_tail": lambda: (lambda base: (base, base[5:1008], torch.tensor(_edge_values(1003, dtype, seed + 3))))(
            torch.tensor(_edge_values(1013, dtype, seed))),
    }


def _view_adder_cases() -> None:
    """inplace.view_adder in C and in Python over the same cases: the same answer and the same bits."""
    results = {"accelerated": inplace.has_view_adder(),
               "c_object": type(inplace.view_adder(True)).__name__, "py_object": inplace.view_adder(False).__name__}
    for dtype in (np.float32, np.float64, np.float16, np.int32):
        for name, build in _view_adder_pairs(dtype, 7).items():
            outcome = {}
            for compiled in (True, False):
                try:
                    base, tensor, other = build()
                except Exception as exc:  # a case MSAdapter cannot build for this dtype: both sides skip it
                    outcome[compiled] = ("unbuilt", type(exc).__name__)
                    continue
                try:
                    done = inplace.view_adder(compiled)(tensor, other)
                except Exception as exc:
                    done = type(exc).__name__
                outcome[compiled] = (done, base.numpy().view(f"u{base.numpy().itemsize}").tolist())
            results[f"{np.dtype(dtype).name}/{name}"] = {"c": outcome[True], "python": outcome[False]}
    leaf = torch.zeros(6, requires_grad=True)
    for grad_mode in (True, False):
        with torch.set_grad_enabled(grad_mode):
            answers = [inplace.view_adder(compiled)(leaf[0:3], torch.ones(3)) for compiled in (True, False)]
        results[f"leaf_view_grad_{grad_mode}"] = {"answers": answers, "leaf": leaf.detach().numpy().tolist()}
    results["profiled_reads"] = {str(compiled): _profiled_reads(inplace.view_adder(compiled))
                                 for compiled in (True, False)}
    print(json.dumps({"case": "view_adder", **results}), flush=True)


def _profiled_reads(adder: Any) -> dict:
    """Calls of MindSpore's address and stride readers a profile sees in 5 adds (booked to them, not the caller)."""
    import cProfile
    import pstats

    buffer = torch.tensor(np.zeros(12, np.float32))
    view, grad = buffer[6:12], torch.tensor(np.ones(6, np.float32))
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(5):
        adder(view, grad)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    reads = {"_data_ptr": 0, "stride": 0}
    sums: dict[str, int] = {}  # the sum's own entry (the C object's host_add, the Python host kernel's add)
    for (filename, _, name), (_, calls, *_rest) in stats.items():
        for read in reads:
            if f".{read}" in name:
                reads[read] += calls
        if name.endswith("host_add>") or (filename.endswith("host_kernels.py") and name == "add"):
            sums[name] = sums.get(name, 0) + calls
    return {"reads": reads, "sums": sums, "values": buffer.numpy().tolist()}


def _grad_cases() -> None:
    mask = torch.tensor((np.arange(24).reshape(4, 6) % 3) == 0)
    leaf = torch.ones(4, 6, requires_grad=True)
    scores = leaf * 2
    view = scores.view(4, 6)
    try:
        inplace_ops.masked_fill_(view, mask, -5.0)
    except inplace.InPlaceOnViewError as exc:
        error = {"type": type(exc).__name__, "op": exc.op, "call_site": exc.call_site, "message": str(exc),
                 "is_runtime_error": isinstance(exc, RuntimeError)}
    else:
        error = None
    print(json.dumps({"case": "grad_view_raises", "error": error,
                      "scores": scores.detach().numpy().tolist()}), flush=True)

    with torch.no_grad():
        scores = torch.ones(4, 6) * 2
        inplace_ops.masked_fill_(scores.view(24), mask.view(24), -5.0)
    print(json.dumps({"case": "no_grad_view_writes", "scores": scores.numpy().tolist()}), flush=True)

    leaf = torch.ones(4, 6, requires_grad=True)
    owner = leaf * 2
    returned = inplace_ops.masked_fill_(owner, mask, -5.0)
    (owner * owner).sum().backward()
    print(json.dumps({"case": "grad_owner", "returned_self": returned is owner,
                      "values": owner.detach().numpy().tolist(), "grad": leaf.grad.numpy().tolist()}), flush=True)


if __name__ == "__main__":
    main()
