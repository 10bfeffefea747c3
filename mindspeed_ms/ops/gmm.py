"""Grouped matmul of expert-sorted tokens: torch_npu's ``npu_gmm`` and MindSpeed's ``npu_gmm_v2``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import (
    OpArgumentError,
    OpDTypeError,
    require_float,
    require_ndim,
    shape_of,
    upcast,
)

__all__ = ["npu_gmm", "npu_gmm_v2", "host_ints"]

GroupList = Union[Tensor, Sequence[int]]


def host_ints(op: str, group_list: Any) -> np.ndarray[Any, Any]:
    if isinstance(group_list, Tensor):
        if group_list.ndim != 1:
            raise OpArgumentError(op, "group_list", f"expected a 1-D tensor, got shape {shape_of(group_list)}")
        arr = np.asarray(group_list.asnumpy())
        if arr.dtype.kind not in "iu":
            raise OpDTypeError(op, "group_list", f"expected an integer tensor, got dtype {group_list.dtype}")
        return arr.astype(np.int64)
    if isinstance(group_list, (list, tuple)) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in group_list
    ):
        return np.asarray(group_list, dtype=np.int64).reshape(-1)
    raise OpDTypeError(op, "group_list", f"expected a list of ints or a 1-D int tensor, got {group_list!r}")


def _grouped(op: str, x: Tensor, weight: Tensor, bias: Tensor | None, ends: np.ndarray[Any, Any],
             group_type: int) -> Tensor:
    require_float(op, "x", x)
    require_float(op, "weight", weight)
    if group_type != 0:
        raise OpArgumentError(op, "group_type", f"only 0 (split the token dimension m) is supported, got {group_type}")
    require_ndim(op, "x", x, (2,), "a 2-D (tokens, k) tensor")
    require_ndim(op, "weight", weight, (3,), "a 3-D (groups, k, n) tensor")
    (m, k), (e, wk, n) = shape_of(x), shape_of(weight)
    if wk != k:
        raise OpArgumentError(op, "weight", f"expected shape ({e}, {k}, n) to match x {(m, k)}, got {(e, wk, n)}")
    if ends.shape != (e,):
        raise OpArgumentError(op, "group_list", f"expected {e} entries (one per group of weight), got {ends.size}")
    if ends.size and (ends[0] < 0 or np.any(np.diff(ends) < 0)):
        raise OpArgumentError(op, "group_list", f"expected non-negative, non-decreasing offsets, got {ends.tolist()}")
    if (int(ends[-1]) if ends.size else 0) != m:
        raise OpArgumentError(op, "group_list", f"expected to end at the token count {m}, got {ends.tolist()}")
    if bias is not None:
        require_float(op, "bias", bias)
        if shape_of(bias) != (e, n):
            raise OpArgumentError(op, "bias", f"expected shape {(e, n)}, got {shape_of(bias)}")
    if dispatch_path("gmm") == "fused" and bias is None and e <= 128:
        from mindspore.ops.function.math_func import gmm

        return gmm([x], [weight], group_list=[int(v) for v in ends], group_type=0, group_list_type=0)[0]
    xf, wf = upcast(x), upcast(weight)
    bf = upcast(bias) if bias is not None else None
    # A loop over groups, not tokens: with ragged group sizes there is no batched matmul that
    # avoids materialising one weight per token; each group is one matmul on a slice.
    parts: list[Tensor] = []
    start = 0
    for g, end in enumerate(int(v) for v in ends):
        if end > start:
            part = mint.matmul(xf[start:end], wf[g])
            parts.append(part + bf[g] if bf is not None else part)
        start = end
    if not parts:
        y = ops.zeros((0, n), xf.dtype)
    else:
        y = parts[0] if len(parts) == 1 else mint.cat(parts, 0)
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def npu_gmm(
    x: Tensor,
    weight: Tensor,
    *,
    bias: Tensor | None = None,
    group_list: GroupList | None = None,
    group_type: int = 0,
    gemm_fusion: bool = False,
    original_weight: Tensor | None = None,
) -> Tensor:
    """Multiply each group of rows of ``x`` by its own weight (tokens sorted by expert).

    Rows ``group_list[g-1]:group_list[g]`` of ``x`` are multiplied by ``weight[g]`` (plus ``bias[g]``).
    Differentiable with respect to ``x``, ``weight`` and ``bias``. On Ascend without bias this calls
    MindSpore's grouped-matmul kernel; elsewhere one ``mint.matmul`` per non-empty group.

    Args:
        x: ``(m, k)`` float tensor, rows sorted by group.
        weight: ``(groups, k, n)`` float tensor.
        bias: optional ``(groups, n)``.
        group_list: cumulative end offsets of the groups (list of ints or 1-D int tensor), ending at ``m``;
            ``None`` means a single group.
        group_type: 0 (groups split ``m``); the only supported value.
        gemm_fusion: accepted for MindSpeed compatibility; it has no effect here.
        original_weight: accepted for MindSpeed compatibility; it has no effect here.

    Returns:
        ``(m, n)`` tensor with ``x``'s dtype.

    Raises:
        TypeError: on non-float inputs or a ``group_list`` that is not a list of ints / int tensor.
        ValueError: on mismatched shapes, an unsupported ``group_type``, or a ``group_list`` that is
            decreasing, has the wrong length or does not end at the token count.
    """
    if group_list is None:
        require_float("npu_gmm", "x", x)
        ends = np.asarray([shape_of(x)[0]], dtype=np.int64)
    else:
        ends = host_ints("npu_gmm", group_list)
    return _grouped("npu_gmm", x, weight, bias, ends, group_type)


def npu_gmm_v2(
    x: Tensor,
    weight: Tensor,
    *,
    bias: Tensor | None = None,
    group_list: GroupList | None = None,
    group_type: int = 0,
    gemm_fusion: bool = False,
    original_weight: Tensor | None = None,
) -> Tensor:
    """Like :func:`npu_gmm`, but ``group_list`` holds the size of each group (MindSpeed's ``npu_gmm_v2``).

    Args:
        x: ``(m, k)`` float tensor, rows sorted by group.
        weight: ``(groups, k, n)`` float tensor.
        bias: optional ``(groups, n)``.
        group_list: per-group row counts summing to ``m``; ``None`` means a single group.
        group_type: 0, the only supported value.
        gemm_fusion: accepted for MindSpeed compatibility; it has no effect here.
        original_weight: accepted for MindSpeed compatibility; it has no effect here.

    Returns:
        ``(m, n)`` tensor with ``x``'s dtype.

    Raises:
        TypeError: as :func:`npu_gmm`.
        ValueError: as :func:`npu_gmm`, and on negative group sizes.
    """
    if group_list is None:
        require_float("npu_gmm_v2", "x", x)
        ends = np.asarray([shape_of(x)[0]], dtype=np.int64)
    else:
        sizes = host_ints("npu_gmm_v2", group_list)
        if np.any(sizes < 0):
            raise OpArgumentError(
                "npu_gmm_v2", "group_list", f"expected non-negative group sizes, got {sizes.tolist()}"
            )
        ends = np.cumsum(sizes)
    return _grouped("npu_gmm_v2", x, weight, bias, ends, group_type)


def grouped_matmul_lists(x: Sequence[Tensor], weight: Sequence[Tensor], bias: Sequence[Tensor] | None = None,
                         group_list: GroupList | None = None, group_type: int = 0,
                         group_list_type: int = 0) -> list[Tensor]:
    """MindSpore's ``ops.function.math_func.gmm`` list form, which MindSpeed's MindSpore op-builder proxy
    (``GMMFunction.builder.load().npu_gmm``, ``--moe-fb-overlap``'s experts) calls: one tensor in each list.

    ``group_type`` 0 splits the rows ``m`` of ``x (m, k)`` over ``weight (groups, k, n)`` (:func:`npu_gmm`);
    ``group_type`` 2 splits the shared dimension of ``x (k, m)`` and ``weight (m, n)``: group ``g`` gives
    ``x[:, s:e] @ weight[s:e]``, stacked ``(groups, k, n)`` (the experts' weight gradients; an empty group gives
    zeros). ``group_list`` holds cumulative ends (``group_list_type`` 0) or sizes (1).

    Returns:
        A one-tensor list, in ``x``'s dtype.

    Raises:
        OpArgumentError: lists of another length, a bias with ``group_type`` 2, another ``group_type`` or
            ``group_list_type``, or shapes and group lists that do not fit.
    """
    op = "gmm"
    for name, given in (("x", x), ("weight", weight)):
        if not isinstance(given, (list, tuple)) or len(given) != 1:
            raise OpArgumentError(op, name, f"expected a list of one tensor, got {given!r}")
    if group_list_type not in (0, 1):
        raise OpArgumentError(op, "group_list_type",
                              f"expected 0 (cumulative ends) or 1 (sizes), got {group_list_type}")
    bias_tensor = None
    if bias:
        if len(bias) != 1 or group_type != 0:
            raise OpArgumentError(op, "bias", f"expected an empty list or one tensor with group_type 0, got {bias!r}")
        bias_tensor = bias[0]
    if group_type == 0:
        grouped = npu_gmm if group_list_type == 0 else npu_gmm_v2
        return [grouped(x[0], weight[0], bias=bias_tensor, group_list=group_list)]
    if group_type != 2:
        raise OpArgumentError(op, "group_type", f"expected 0 (split m) or 2 (split k), got {group_type}")
    a, b = x[0], weight[0]
    require_float(op, "x", a)
    require_float(op, "weight", b)
    require_ndim(op, "x", a, (2,), "a 2-D (k, m) tensor")
    require_ndim(op, "weight", b, (2,), "a 2-D (m, n) tensor")
    (k, m), (bm, n) = shape_of(a), shape_of(b)
    if bm != m:
        raise OpArgumentError(op, "weight", f"expected {m} rows (x's second dimension), got shape {(bm, n)}")
    ends = host_ints(op, group_list) if group_list is not None else np.asarray([m], np.int64)
    if group_list_type == 1:
        ends = np.cumsum(ends)
    if ends.size == 0 or np.any(np.diff(ends) < 0) or ends[0] < 0 or int(ends[-1]) != m:
        raise OpArgumentError(op, "group_list", f"expected non-decreasing ends at {m}, got {ends.tolist()}")
    af, bf = upcast(a), upcast(b)
    parts, start = [], 0
    for end in (int(e) for e in ends):
        part = mint.matmul(af[:, start:end], bf[start:end]) if end > start else ops.zeros((k, n), af.dtype)
        parts.append(part.reshape(1, k, n))
        start = end
    out = mint.cat(parts) if len(parts) > 1 else parts[0]
    return [out if out.dtype == a.dtype else out.astype(a.dtype)]
