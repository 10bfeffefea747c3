"""Pieces that are views in PyTorch and copies here: ``y[i]``, slices, ``split``, ``chunk``, ``narrow``, ``select``,
``unbind`` of a bfloat16 tensor that requires grad (StridedSliceGrad has no bfloat16 CPU kernel: taken in float32),
and ``torch.split`` of a large float32 tensor that requires grad (copied on the host for its backward).

Reading the pieces is exact: values and the gradients of the base and of the other inputs. An in-place write into
a piece used to change the copy and never reach ``y`` (PyTorch: the write reaches ``y`` through CopySlices, or is
refused for a piece of split/chunk/unbind), and a write into ``y`` was not seen through a live piece: both silent.
Now they raise (InPlaceOnViewError, a RuntimeError as PyTorch's refusal); under ``torch.no_grad()`` the pieces are
views and writes reach ``y`` as in PyTorch.
"""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor

#: name -> (ops, write into the piece(s) of y)
_WRITES: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "index_add_": (("Tensor.__getitem__", "Tensor.add_"),
                   lambda torch, y: y[1].add_(torch.ones(4, dtype=y.dtype))),
    "index_copy_": (("Tensor.__getitem__", "Tensor.copy_"),
                    lambda torch, y: y[0].copy_(torch.full((4,), 7.0).to(y.dtype))),
    "slice_imul": (("Tensor.__getitem__", "Tensor.__imul__"), lambda torch, y: y[:, :2].__imul__(2)),
    "slice_setitem": (("Tensor.__getitem__", "Tensor.__setitem__"), lambda torch, y: y[1:].__setitem__(0, 5.0)),
    "split_zero_": (("torch.split", "Tensor.zero_"), lambda torch, y: torch.split(y, 2)[0].zero_()),
    "tensor_split_fill_": (("Tensor.split", "Tensor.fill_"), lambda torch, y: y.split(1, dim=1)[3].fill_(1.0)),
    "chunk_zero_": (("torch.chunk", "Tensor.zero_"), lambda torch, y: torch.chunk(y, 3)[0].zero_()),
    "narrow_fill_": (("Tensor.narrow", "Tensor.fill_"), lambda torch, y: y.narrow(1, 1, 2).fill_(3.0)),
    "select_mul_": (("Tensor.select", "Tensor.mul_"), lambda torch, y: y.select(0, 2).mul_(3.0)),
    "unbind_add_": (("torch.unbind", "Tensor.add_"), lambda torch, y: torch.unbind(y)[1].add_(1.0)),
}


def _write(apply: Callable[[Any, Any], Any], dtype_name: str) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        x = tensor(torch, (3, 4), seed=21).to(getattr(torch, dtype_name)).requires_grad_(True)
        y = x * 2
        apply(torch, y)
        (y.float() * tensor(torch, (3, 4), seed=22)).sum().backward()
        return {"y": y, "grad": x.grad, "version": y._version}
    return run


def _write_no_grad(apply: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        y = tensor(torch, (3, 4), seed=21).to(torch.bfloat16).requires_grad_(True)
        with torch.no_grad():
            apply(torch, y)  # PyTorch: a view, written through (multi-output pieces too, grad mode off)
        return y  # not y._version: a write through a view's host memory does not count (ops_inplace: the same)
    return run


for _name, (_ops, _apply) in _WRITES.items():
    register(__name__, f"write_into_piece_{_name}_bfloat16", (*_ops, "Tensor.backward"), _write(_apply, "bfloat16"),
             exact=True)
    register(__name__, f"write_into_piece_{_name}_no_grad_bfloat16", (*_ops, "torch.no_grad"),
             _write_no_grad(_apply), exact=True)


def _reads(torch: Any) -> Any:
    """megatron's QKV split and rotary slices: pieces read, the base used directly too; gradients of every input."""
    x = tensor(torch, (4, 2, 12), seed=23).to(torch.bfloat16).requires_grad_(True)
    w = tensor(torch, (4, 2, 12), seed=24).to(torch.bfloat16).requires_grad_(True)
    y = x * w
    q, k, v = torch.split(y, [4, 4, 4], dim=-1)
    first, rest = y[..., :2], y[..., 2:]
    a, b = torch.chunk(y, 2, dim=0)
    row = y.narrow(0, 1, 2).select(1, 0)
    parts = torch.unbind(y, dim=1)
    out = (q.float() * k.float()).sum() + v.float().exp().sum() + (first.float() * 3).sum() + rest.float().sum()
    out = out + (a.float() - b.float()).square().sum() + row.float().sum() + (parts[0].float() * parts[1].float()).sum()
    out = out + y.float().sum()
    out.backward()
    return {"pieces": [q, k, v, first, rest, a, b, row, *parts], "grad_x": x.grad, "grad_w": w.grad,
            "versions": [y._version, q._version, row._version]}


register(__name__, "read_pieces_bfloat16", ("torch.split", "Tensor.__getitem__", "torch.chunk", "Tensor.narrow",
                                            "Tensor.select", "torch.unbind", "Tensor.backward"), _reads, exact=True)


def _advanced_index(torch: Any) -> Any:
    """An index tensor copies in PyTorch too: a write into the copy leaves y unchanged, no error."""
    x = tensor(torch, (3, 4), seed=21).to(torch.bfloat16).requires_grad_(True)
    y = x * 2
    picked = y[torch.tensor([0, 2])]
    picked.add_(1.0)
    (y.float().sum() + picked.float().sum()).backward()
    return {"y": y, "picked": picked, "grad": x.grad}


register(__name__, "write_into_advanced_index_copy_bfloat16", ("Tensor.__getitem__", "Tensor.add_"),
         _advanced_index, exact=True)


def _base_write(take: Callable[[Any, Any], Any], dtype_name: str, rows: int) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        x = tensor(torch, (rows, 4), seed=25).to(getattr(torch, dtype_name)).requires_grad_(True)
        y = x * 2
        piece = take(torch, y)
        y.mul_(3)  # PyTorch: the view sees it (a split's piece: its next use raises)
        (piece.float() * 5).sum().backward()
        return {"piece": piece, "grad": x.grad}
    return run


register(__name__, "write_into_base_after_index_bfloat16", ("Tensor.__getitem__", "Tensor.mul_"),
         _base_write(lambda torch, y: y[1], "bfloat16", 3), exact=True)
register(__name__, "write_into_base_after_split_bfloat16", ("torch.split", "Tensor.mul_"),
         _base_write(lambda torch, y: torch.split(y, 2, dim=1)[1], "bfloat16", 3), exact=True)
# float32 torch.split of >= 4096 elements that requires grad: compat/host_split.py's copies
register(__name__, "write_into_base_after_host_split_float32", ("torch.split", "Tensor.mul_"),
         _base_write(lambda torch, y: torch.split(y, 2, dim=1)[1], "float32", 1024), exact=True)


def _host_split_piece_write(torch: Any) -> Any:
    x = tensor(torch, (1024, 4), seed=26).requires_grad_(True)
    y = x * 2
    torch.split(y, [1, 3], dim=1)[0].zero_()  # PyTorch: refused (one of several views)
    y.sum().backward()
    return {"y": y, "grad": x.grad}


register(__name__, "write_into_host_split_piece_float32", ("torch.split", "Tensor.zero_"), _host_split_piece_write,
         exact=True)


def _select_grad(dtype_name: str) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        # Tensor.select's own backward failed on CPU for a 3-d input (InplaceCopy; bfloat16: Zeros): now indexed
        x = tensor(torch, (4, 2, 6), seed=27).to(getattr(torch, dtype_name)).requires_grad_(True)
        y = x * 3
        out = y.select(1, 0).float() * tensor(torch, (4, 6), seed=28) + y.select(-1, 5).float().sum()
        out.sum().backward()
        return {"out": out, "grad": x.grad}
    return run


for _dtype in ("float32", "bfloat16"):
    register(__name__, f"select_backward_3d_{_dtype}", ("Tensor.select", "Tensor.backward"), _select_grad(_dtype),
             exact=True)


def _advanced_without_grad(no_grad: bool) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        # MindSpore's gather kernels have no bfloat16 CPU kernel either: taken in float32 (a copy in PyTorch too)
        x = tensor(torch, (3, 4), seed=29).to(torch.bfloat16).requires_grad_(no_grad)
        indices = (torch.tensor([0, 2]), [2, 0], torch.tensor([True, False, True]), (slice(None), torch.tensor([1, 3])))
        if no_grad:
            with torch.no_grad():
                return [x[index] for index in indices]
        return [x[index] for index in indices]
    return run


register(__name__, "advanced_index_without_grad_bfloat16", ("Tensor.__getitem__",), _advanced_without_grad(False),
         exact=True)
register(__name__, "advanced_index_no_grad_bfloat16", ("Tensor.__getitem__", "torch.no_grad"),
         _advanced_without_grad(True), exact=True)
