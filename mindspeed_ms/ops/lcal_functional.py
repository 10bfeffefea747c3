"""MindSpore versions of the methods of MindSpeed's ``mindspeed.ops.lcal_functional.CoCOperations``.

Each function takes the ``CoCOperations`` instance as ``self`` (unused) so that it can replace the
method directly. ``input2`` is the weight, used transposed when ``input1.shape[-1] != input2.shape[0]``.
The result is written into ``output`` (with ``copy_``) and returned. The collective runs over the
tensor-parallel group: an explicit ``group=`` keyword, else megatron-core's when initialised, else
the world (see :mod:`mindspeed_ms.ops.comm`). Bias, when given, is added once, after the collective.
These ops are forward-only, as the LCAL kernels are (MindSpeed calls them inside its own autograd
functions).
"""

from __future__ import annotations

from typing import Any

from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import OpArgumentError, is_half, require_float, require_ndim, shape_of
from mindspeed_ms.ops.comm import CommGroup, all_gather_rows, all_reduce, reduce_scatter_rows, resolve_group

__all__ = [
    "matmul_all_reduce",
    "all_gather_matmul",
    "all_gather_matmul_v2",
    "matmul_reduce_scatter",
    "pure_matmul",
]


def _prepare(
    op: str, input1: Tensor, input2: Tensor, bias: Tensor | None, group: Any, with_comm: bool = True
) -> tuple[bool, int, int, int, CommGroup]:
    """Validate and return (transpose_weight, m, k, n, group)."""
    require_float(op, "input1", input1)
    require_float(op, "input2", input2)
    require_ndim(op, "input1", input1, (2,), "a 2-D (m, k) tensor")
    require_ndim(op, "input2", input2, (2,), "a 2-D (k, n) or (n, k) weight")
    (m, k), ws = shape_of(input1), shape_of(input2)
    if ws[0] == k:
        transpose, n = False, ws[1]
    elif ws[1] == k:
        transpose, n = True, ws[0]
    else:
        raise OpArgumentError(op, "input2", f"expected shape ({k}, n) or (n, {k}) to match input1 {(m, k)}, got {ws}")
    if bias is not None:
        require_float(op, "bias", bias)
        if shape_of(bias) != (n,):
            raise OpArgumentError(op, "bias", f"expected shape ({n},), got {shape_of(bias)}")
    comm = resolve_group(op, group) if with_comm else CommGroup(None, 1, 0)
    return transpose, m, k, n, comm


def _check_out(op: str, name: str, out: Any, shape: tuple[int, ...]) -> None:
    require_float(op, name, out)
    if shape_of(out) != shape:
        raise OpArgumentError(op, name, f"expected shape {shape}, got {shape_of(out)}")


def _matmul(a: Tensor, w: Tensor, transpose: bool) -> Tensor:
    return mint.matmul(a, ops.transpose(w, (1, 0)) if transpose else w)


def _finish(y: Tensor, bias: Tensor | None, output: Tensor) -> Tensor:
    if bias is not None:
        y = y + bias.astype(y.dtype)
    output.copy_(y if y.dtype == output.dtype else y.astype(output.dtype))
    return output


def _fused_ok(input1: Tensor, k: int, comm: CommGroup) -> bool:
    return comm.name is not None and is_half(input1) and comm.size in (2, 4, 8) and 256 <= k < 65535


def matmul_all_reduce(
    self: Any,
    input1: Tensor,
    input2: Tensor,
    output: Tensor,
    bias: Tensor | None = None,
    *,
    group: Any = None,
) -> Tensor:
    """Write ``all_reduce(input1 @ W) + bias`` into ``output``.

    MindSpore has no standalone fused matmul+all-reduce kernel, so this is a matmul followed by an
    all-reduce on every device.

    Args:
        self: the ``CoCOperations`` instance (unused).
        input1: ``(m, k)`` activations (this rank's partial sums).
        input2: weight ``(k, n)``, or ``(n, k)`` used transposed.
        output: ``(m, n)`` tensor that receives the result.
        bias: optional ``(n,)``, added once after the reduction.
        group: explicit group (MindSpore group name or MSAdapter ProcessGroup).

    Returns:
        ``output``.

    Raises:
        TypeError: on non-float tensors or a bad ``group`` type.
        ValueError: on shapes that do not fit.
    """
    op = "matmul_all_reduce"
    transpose, m, _, n, comm = _prepare(op, input1, input2, bias, group)
    _check_out(op, "output", output, (m, n))
    return _finish(all_reduce(_matmul(input1, input2, transpose), comm), bias, output)


def _gather_matmul(
    op: str, input1: Tensor, input2: Tensor, bias: Tensor | None, group: Any, output: Tensor, comm_out: Any
) -> tuple[Tensor, Tensor | None]:
    transpose, m, k, n, comm = _prepare(op, input1, input2, bias, group)
    _check_out(op, "output", output, (m * comm.size, n))
    if comm_out is not None:
        _check_out(op, "comm_output", comm_out, (m * comm.size, k))
    if dispatch_path(op) == "fused" and _fused_ok(input1, k, comm) and input1.dtype == input2.dtype:
        y, gathered = ops.all_gather_matmul(
            input1, input2, comm.name, comm.size, gather_output=comm_out is not None, trans_x2=transpose
        )
    else:
        gathered = all_gather_rows(input1, comm)
        y = _matmul(gathered, input2, transpose)
    _finish(y, bias, output)
    if comm_out is not None:
        comm_out.copy_(gathered if gathered.dtype == comm_out.dtype else gathered.astype(comm_out.dtype))
    return output, comm_out


def all_gather_matmul(
    self: Any,
    input1: Tensor,
    input2: Tensor,
    output: Tensor,
    bias: Tensor | None = None,
    *,
    group: Any = None,
) -> Tensor:
    """Write ``all_gather(input1) @ W + bias`` into ``output`` (ranks' rows concatenated in rank order).

    On Ascend, float16/bfloat16 inputs with ``256 <= k < 65535`` on 2, 4 or 8 ranks use
    ``ops.all_gather_matmul``; otherwise an ``AllGather`` followed by a matmul.

    Args:
        self: the ``CoCOperations`` instance (unused).
        input1: ``(m, k)`` this rank's rows.
        input2: weight ``(k, n)``, or ``(n, k)`` used transposed.
        output: ``(m * world_size, n)`` tensor that receives the result.
        bias: optional ``(n,)``.
        group: explicit group (MindSpore group name or MSAdapter ProcessGroup).

    Returns:
        ``output``.

    Raises:
        TypeError: on non-float tensors or a bad ``group`` type.
        ValueError: on shapes that do not fit.
    """
    return _gather_matmul("all_gather_matmul", input1, input2, bias, group, output, None)[0]


def all_gather_matmul_v2(
    self: Any,
    input1: Tensor,
    input2: Tensor,
    output: Tensor,
    comm_output: Tensor,
    bias: Tensor | None = None,
    *,
    group: Any = None,
) -> tuple[Tensor, Tensor]:
    """Like :func:`all_gather_matmul`, and also write the gathered ``input1`` into ``comm_output``.

    Args:
        self: the ``CoCOperations`` instance (unused).
        input1: ``(m, k)`` this rank's rows.
        input2: weight ``(k, n)``, or ``(n, k)`` used transposed.
        output: ``(m * world_size, n)`` tensor that receives the result.
        comm_output: ``(m * world_size, k)`` tensor that receives the gathered input.
        bias: optional ``(n,)``.
        group: explicit group (MindSpore group name or MSAdapter ProcessGroup).

    Returns:
        ``(output, comm_output)``.

    Raises:
        TypeError: on non-float tensors or a bad ``group`` type.
        ValueError: on shapes that do not fit.
    """
    out, comm = _gather_matmul("all_gather_matmul_v2", input1, input2, bias, group, output, comm_output)
    return out, comm_output


def matmul_reduce_scatter(
    self: Any,
    input1: Tensor,
    input2: Tensor,
    output: Tensor,
    bias: Tensor | None = None,
    *,
    group: Any = None,
) -> Tensor:
    """Write this rank's rows of ``reduce_scatter(input1 @ W) + bias`` into ``output``.

    On Ascend, float16/bfloat16 inputs with ``256 <= k < 65535`` on 2, 4 or 8 ranks use
    ``ops.matmul_reduce_scatter``, other Ascend inputs a matmul and ``ReduceScatter``. MindSpore's CPU
    backend has no reduce-scatter kernel: there the sum is an all-reduce and each rank keeps its block
    of ``m / world_size`` rows (same result, ``world_size`` times the traffic).

    Args:
        self: the ``CoCOperations`` instance (unused).
        input1: ``(m, k)`` activations (this rank's partial sums), ``m`` divisible by the world size.
        input2: weight ``(k, n)``, or ``(n, k)`` used transposed.
        output: ``(m / world_size, n)`` tensor that receives this rank's rows.
        bias: optional ``(n,)``, added once after the reduction.
        group: explicit group (MindSpore group name or MSAdapter ProcessGroup).

    Returns:
        ``output``.

    Raises:
        TypeError: on non-float tensors or a bad ``group`` type.
        ValueError: on shapes that do not fit or ``m`` not divisible by the world size.
    """
    op = "matmul_reduce_scatter"
    transpose, m, k, n, comm = _prepare(op, input1, input2, bias, group)
    if m % comm.size:
        raise OpArgumentError(op, "input1", f"expected a row count divisible by the world size {comm.size}, got {m}")
    _check_out(op, "output", output, (m // comm.size, n))
    if dispatch_path(op) == "fused" and _fused_ok(input1, k, comm) and input1.dtype == input2.dtype:
        y = ops.matmul_reduce_scatter(input1, input2, comm.name, comm.size, trans_x2=transpose)
    else:
        y = reduce_scatter_rows(_matmul(input1, input2, transpose), comm)
    return _finish(y, bias, output)


def pure_matmul(self: Any, input1: Tensor, input2: Tensor, output: Tensor, bias: Tensor | None = None) -> Tensor:
    """Write ``input1 @ W + bias`` into ``output``; no communication.

    Args:
        self: the ``CoCOperations`` instance (unused).
        input1: ``(m, k)`` activations.
        input2: weight ``(k, n)``, or ``(n, k)`` used transposed.
        output: ``(m, n)`` tensor that receives the result.
        bias: optional ``(n,)``.

    Returns:
        ``output``.

    Raises:
        TypeError: on non-float tensors.
        ValueError: on shapes that do not fit.
    """
    op = "pure_matmul"
    transpose, m, _, n, _ = _prepare(op, input1, input2, bias, None, with_comm=False)
    _check_out(op, "output", output, (m, n))
    return _finish(_matmul(input1, input2, transpose), bias, output)
