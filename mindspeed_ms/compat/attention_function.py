"""``F.scaled_dot_product_attention`` as PyTorch 2.13 computes it, composed of MSAdapter ops.

MSAdapter 0.5.0b1's takes ``attn_mask``, ``dropout_p`` and ``is_causal`` as required positional arguments (a call
with the query, key and value alone raises TypeError), has no ``scale`` or ``enable_gqa``, and its causal branch
does not run (a tuple assignment error). Measured against torch 2.13 on the CPU
(tests/conformance/cases/fix_attention_function.py), PyTorch's:

- ``softmax(q @ k^T * scale + bias) @ v`` with ``scale = 1 / sqrt(E)`` unless given; a bool ``attn_mask`` keeps
  the True positions, a float one (float32 or the query's dtype) is added; ``is_causal`` keeps the lower triangle
  aligned at the top left (row i sees keys 0..i); together with ``attn_mask`` both apply where PyTorch's fused CPU
  kernel takes the call (4-d, one batch size and head size, the same heads unless ``enable_gqa``, no dropout), and
  the pair is refused (RuntimeError) where its math path does;
- a row that sees no key gives zeros (and zero gradients), not nan;
- batch dims broadcast (one key head serves every query head), ``enable_gqa`` repeats key/value heads by groups;
- float16/bfloat16 inputs are computed in float32 and rounded once (as PyTorch's CPU kernel accumulates).

``dropout_p > 0`` drops attention weights with MindSpore's random stream: the same distribution as PyTorch's, never
the same draws (PyTorch's generator cannot be reproduced); ``dropout_p=0`` (inference, and megatron's default) and
``dropout_p=1`` are exact. Gradients flow through the composed ops (PyTorch's, to rounding).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["scaled_dot_product_attention"]


def _check(query: Any, key: Any, value: Any, attn_mask: Any, dropout_p: float, enable_gqa: bool) -> None:
    import mindspore

    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if min(len(query.shape), len(key.shape), len(value.shape)) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{len(query.shape)} key.dim: {len(key.shape)} and value.dim: {len(value.shape)} "
                           f"instead.")
    floating = (mindspore.float16, mindspore.bfloat16, mindspore.float32, mindspore.float64)
    if query.dtype not in floating:
        raise RuntimeError(f"expected scalar type Float but found {query.dtype}")
    if attn_mask is not None and attn_mask.dtype not in (mindspore.bool_, mindspore.float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and len(query.shape) >= 3:
        heads, key_heads, value_heads = int(query.shape[-3]), int(key.shape[-3]), int(value.shape[-3])
        if key_heads == 0 or value_heads == 0 or heads % key_heads or heads % value_heads:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")


def _combines_mask_and_causal(query: Any, key: Any, value: Any, dropout_p: float, enable_gqa: bool) -> bool:
    """Whether PyTorch's CPU dispatch takes an ``attn_mask`` together with ``is_causal`` (its fused CPU kernel's
    conditions: 4-d inputs of one batch size, the same heads unless ``enable_gqa``, one head size, no dropout, the
    last dim dense); otherwise its math path refuses the pair."""
    if not len(query.shape) == len(key.shape) == len(value.shape) == 4 or dropout_p > 0.0:
        return False
    if not int(query.shape[0]) == int(key.shape[0]) == int(value.shape[0]):
        return False
    if not int(query.shape[-1]) == int(key.shape[-1]) == int(value.shape[-1]):
        return False
    if not enable_gqa and not int(query.shape[1]) == int(key.shape[1]) == int(value.shape[1]):
        return False
    return all(int(t.stride()[-1]) == 1 for t in (query, key, value))


def _check_batch(left: tuple[int, ...], right: tuple[int, ...]) -> None:
    """PyTorch's refusal of shapes that do not broadcast (checked before MindSpore's kernels raise their own)."""
    for offset in range(1, min(len(left), len(right)) + 1):
        a, b = int(left[-offset]), int(right[-offset])
        if a != b and 1 not in (a, b):
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {max(len(left), len(right)) - offset}")


def _repeat_heads(tensor: Any, heads: int) -> Any:
    groups = heads // int(tensor.shape[-3])
    return tensor if groups == 1 else tensor.repeat_interleave(groups, dim=-3)


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Any:
    """``F.scaled_dot_product_attention``: PyTorch 2.13's attention (see the module's docstring for the rules)."""
    import mindspore
    import msadapter
    import msadapter.nn.functional as F

    _check(query, key, value, attn_mask, dropout_p, enable_gqa)
    if is_causal and attn_mask is not None and not _combines_mask_and_causal(query, key, value, dropout_p,
                                                                             enable_gqa):
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    dtype = query.dtype
    if enable_gqa and len(query.shape) >= 3:
        key, value = _repeat_heads(key, int(query.shape[-3])), _repeat_heads(value, int(query.shape[-3]))
    _check_batch(tuple(query.shape[:-2]), tuple(key.shape[:-2]))
    _check_batch(tuple(query.shape[:-2]), tuple(value.shape[:-2]))
    if attn_mask is not None:
        _check_batch((*query.shape[:-1], key.shape[-2]), tuple(attn_mask.shape))
    if dtype in (mindspore.float16, mindspore.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    length, source = int(query.shape[-2]), int(key.shape[-2])
    factor = 1.0 / math.sqrt(int(query.shape[-1])) if scale is None else float(scale)
    scores = msadapter.matmul(query, key.transpose(-2, -1)) * factor
    keep = None
    if is_causal:
        keep = msadapter.ones(length, source, dtype=msadapter.bool).tril()
    if attn_mask is not None and attn_mask.dtype == mindspore.bool_:
        keep = attn_mask if keep is None else msadapter.logical_and(keep, attn_mask)
    elif attn_mask is not None:
        scores = scores + attn_mask.to(scores.dtype)
    if keep is not None:
        scores = scores.masked_fill(msadapter.logical_not(keep), float("-inf"))
    # PyTorch's safe softmax: a row with every score -inf (nothing to attend to) gives zeros, not nan; its scores
    # are replaced before the softmax too, so its gradient is zero rather than nan
    if source:
        unseen = (scores == float("-inf")).all(dim=-1, keepdim=True)
        zero = msadapter.zeros((), dtype=scores.dtype)
        weights = msadapter.where(unseen, zero, F.softmax(msadapter.where(unseen, zero, scores), dim=-1))
    else:
        weights = scores
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)
    output = msadapter.matmul(weights, value)
    return output.to(dtype) if output.dtype != dtype else output
