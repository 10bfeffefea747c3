"""MoE token permutation with the conventions of the CANN kernels behind ``ops.moe_token_permute``.

``npu_moe_token_permute`` groups the flattened (token, k) routing pairs by expert id, stably;
``sorted_indices`` is the inverse permutation (entry ``i`` is the row pair ``i`` went to).
``npu_moe_token_unpermute`` sums each token's rows back, weighted by ``probs``.
"""

from __future__ import annotations

from collections.abc import Sequence

import mindspore
import numpy as np
from mindspore import Tensor, mint, ops

from mindspeed_ms.ops._dispatch import dispatch_path
from mindspeed_ms.ops._validate import (
    OpArgumentError,
    require_float,
    require_int_tensor,
    require_ndim,
    shape_of,
    upcast,
)

__all__ = ["npu_moe_token_permute", "npu_moe_token_unpermute"]

_PERMUTE = "npu_moe_token_permute"
_UNPERMUTE = "npu_moe_token_unpermute"


def _check_padded(op: str, padded_mode: bool) -> None:
    if padded_mode:
        raise OpArgumentError(op, "padded_mode", "only False is supported (as by the CANN kernel), got True")


def npu_moe_token_permute(
    tokens: Tensor, indices: Tensor, num_out_tokens: int | None = None, padded_mode: bool = False
) -> tuple[Tensor, Tensor]:
    """Permute tokens so that the rows routed to each expert are contiguous, in expert order.

    With ``indices`` of shape ``(t, topk)`` (or ``(t,)`` for topk 1), the ``t*topk`` flattened pairs
    are sorted stably by expert id; row ``r`` of the result is the token of the ``r``-th pair.
    Differentiable with respect to ``tokens``. On Ascend this calls ``ops.moe_token_permute``.

    Args:
        tokens: ``(t, hidden)`` float tensor.
        indices: ``(t, topk)`` or ``(t,)`` int32/int64 expert ids, non-negative.
        num_out_tokens: keep only the first this many permuted rows (capacity dropping);
            ``None`` keeps all ``t*topk``.
        padded_mode: must be False (the CANN kernel supports nothing else).

    Returns:
        ``(permuted_tokens, sorted_indices)``: ``(num_out_tokens, hidden)`` like ``tokens``, and the
        int32 inverse permutation of length ``t*topk``.

    Raises:
        TypeError: on non-float tokens or non-integer indices.
        ValueError: on mismatched shapes, negative expert ids, ``num_out_tokens`` outside
            ``[0, t*topk]`` or ``padded_mode=True``.
    """
    require_float(_PERMUTE, "tokens", tokens)
    require_int_tensor(_PERMUTE, "indices", indices)
    _check_padded(_PERMUTE, padded_mode)
    require_ndim(_PERMUTE, "tokens", tokens, (2,), "a 2-D (num_tokens, hidden) tensor")
    require_ndim(_PERMUTE, "indices", indices, (1, 2), "a (num_tokens,) or (num_tokens, topk) tensor")
    t = shape_of(tokens)[0]
    ishape = shape_of(indices)
    if ishape[0] != t:
        raise OpArgumentError(_PERMUTE, "indices", f"expected ({t},) or ({t}, topk) to match tokens, got {ishape}")
    topk = ishape[1] if len(ishape) == 2 else 1
    n = t * topk
    if num_out_tokens is None:
        keep = n
    elif (
        isinstance(num_out_tokens, bool)
        or not isinstance(num_out_tokens, (int, np.integer))
        or not (0 <= num_out_tokens <= n)
    ):
        raise OpArgumentError(
            _PERMUTE, "num_out_tokens", f"expected None or an int in [0, {n}], got {num_out_tokens!r}"
        )
    else:
        keep = int(num_out_tokens)
    experts = np.asarray(indices.asnumpy()).reshape(-1)
    if n and int(experts.min()) < 0:
        raise OpArgumentError(_PERMUTE, "indices", f"expected non-negative expert ids, got {int(experts.min())}")
    if dispatch_path("moe_token_permute") == "fused" and topk <= 512:
        permuted, sorted_indices = ops.moe_token_permute(tokens, indices, num_out_tokens, False)
        return permuted, sorted_indices
    # The routing (t*topk small ints) is sorted on the host, where a stable sort exists; the
    # tokens themselves are moved on the device by one gather.
    order = np.argsort(experts, kind="stable")
    inverse = np.empty(n, np.int32)
    inverse[order] = np.arange(n, dtype=np.int32)
    source = Tensor((order[:keep] // topk).astype(np.int32))
    # Gather has no bfloat16 CPU kernel; it moves rows, so the float32 round trip is exact.
    src = tokens.astype(mindspore.float32) if tokens.dtype == mindspore.bfloat16 else tokens
    permuted = ops.gather(src, source, 0)
    if permuted.dtype != tokens.dtype:
        permuted = permuted.astype(tokens.dtype)
    return permuted, Tensor(inverse)


def npu_moe_token_unpermute(
    permuted_tokens: Tensor,
    sorted_indices: Tensor,
    probs: Tensor | None = None,
    padded_mode: bool = False,
    restore_shape: Sequence[int] | None = None,
) -> Tensor:
    """Sum each token's rows back: ``out[t] = sum_k probs[t, k] * permuted[s[t*topk + k]]``.

    ``s`` is ``sorted_indices`` from :func:`npu_moe_token_permute`; rows it points past the end of
    ``permuted_tokens`` (dropped by ``num_out_tokens``) contribute zeros. ``probs=None`` means topk 1
    with weight 1. Differentiable with respect to ``permuted_tokens`` and ``probs``. On Ascend this
    calls ``ops.moe_token_unpermute``.

    Args:
        permuted_tokens: ``(rows, hidden)`` float tensor.
        sorted_indices: int32/int64 tensor of ``t*topk`` row indices, a permutation of ``range(t*topk)``.
        probs: optional ``(t, topk)`` float weights.
        padded_mode: must be False.
        restore_shape: optional shape to give the ``(t, hidden)`` output.

    Returns:
        ``(t, hidden)`` tensor (or ``restore_shape``) with ``permuted_tokens``' dtype.

    Raises:
        TypeError: on non-float tokens/probs or non-integer indices.
        ValueError: on mismatched shapes, out-of-range indices, a bad ``restore_shape`` or
            ``padded_mode=True``.
    """
    require_float(_UNPERMUTE, "permuted_tokens", permuted_tokens)
    require_int_tensor(_UNPERMUTE, "sorted_indices", sorted_indices)
    _check_padded(_UNPERMUTE, padded_mode)
    require_ndim(_UNPERMUTE, "permuted_tokens", permuted_tokens, (2,), "a 2-D (rows, hidden) tensor")
    require_ndim(_UNPERMUTE, "sorted_indices", sorted_indices, (1,), "a 1-D tensor")
    rows, hidden = shape_of(permuted_tokens)
    n = shape_of(sorted_indices)[0]
    if probs is not None:
        require_float(_UNPERMUTE, "probs", probs)
        require_ndim(_UNPERMUTE, "probs", probs, (2,), "a 2-D (num_tokens, topk) tensor")
        t, topk = shape_of(probs)
        if t * topk != n:
            raise OpArgumentError(
                _UNPERMUTE,
                "probs",
                f"expected (num_tokens, topk) with num_tokens*topk == {n}, got {(t, topk)}",
            )
    else:
        t, topk = n, 1
    if rows > n:
        raise OpArgumentError(_UNPERMUTE, "permuted_tokens", f"expected at most {n} rows, got {rows}")
    rows_of_pairs = np.asarray(sorted_indices.asnumpy()).reshape(-1)
    if n:
        lo, hi = int(rows_of_pairs.min()), int(rows_of_pairs.max())
        if lo < 0 or hi >= n:
            raise OpArgumentError(
                _UNPERMUTE, "sorted_indices", f"expected values in [0, {n}), got values in [{lo}, {hi}]"
            )
    out_shape: tuple[int, ...] = (t, hidden)
    if restore_shape is not None:
        target = tuple(int(d) for d in restore_shape)
        if int(np.prod(target)) != t * hidden:
            raise OpArgumentError(
                _UNPERMUTE,
                "restore_shape",
                f"expected {t * hidden} elements (num_tokens {t} x hidden {hidden}), got {target}",
            )
        out_shape = target
    if dispatch_path("moe_token_unpermute") == "fused":
        return ops.moe_token_unpermute(permuted_tokens, sorted_indices, probs, False, restore_shape).reshape(out_shape)
    src = upcast(permuted_tokens)
    if rows < n:
        # Dropped pairs point at row >= rows: send them all to one appended zero row.
        src = mint.cat((src, ops.zeros((1, hidden), src.dtype)), 0)
        rows_of_pairs = np.minimum(rows_of_pairs, rows)
    gathered = ops.gather(src, Tensor(rows_of_pairs.astype(np.int32)), 0)
    if probs is None:
        out = gathered
    else:
        weights = upcast(probs).reshape(t, topk, 1)
        out = mint.sum(gathered.reshape(t, topk, hidden) * weights.astype(gathered.dtype), dim=1)
    out = out.reshape(out_shape)
    return out if out.dtype == permuted_tokens.dtype else out.astype(permuted_tokens.dtype)
