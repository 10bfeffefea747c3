"""Megatron's rotary position embedding (``apply_rotary_pos_emb``) as one host Function (MindSpore's CPU).

megatron-core's unfused rotary embedding (``_apply_rotary_pos_emb_bshd``, what the field's ``--position-embedding-type
rope`` configs run on CPU) computes ``t * cos(freqs) + rotate_half(t) * sin(freqs)`` with ``rotate_half`` a
``chunk``/``neg``/``cat`` (or ``stack`` of the even/odd elements where ``rotary_interleaved``) and ``cat``s the
result with the untouched part: ~10 kernels forward and ~10 backward per call, twice a layer (query and key), at
PyNative's ~250 us each; and attention then copies the new q and k again.

Here the forward is NumPy over the tensor's host memory into a new tensor of MindSpore's memory: the same float32
products and the one sum, in PyTorch's order (the products rounded, then added: no fused multiply-add), so the same
bits as megatron's code on either framework given the same ``cos``/``sin``. Those are the framework's own
``torch.cos(freqs)``/``torch.sin(freqs)`` (MindSpore's kernels, as megatron's code computes them here: the bits of
the path this replaces), computed once per ``freqs`` tensor (megatron's ``RotaryEmbedding.forward`` is cached: the same
tensor every step) and kept as host arrays. The backward is PyTorch's: ``grad * cos`` plus ``rotate_half``'s
transpose of ``grad * sin``.

The output remembers its input and ``cos``/``sin`` (:func:`rope_of`): :mod:`.host_attention` takes a query and key
that are rotary embeddings of megatron's QKV split's pieces into its fused Function and applies this backward
itself, writing straight into the QKV gradient (neither this Function's backward nor the split's run).

Taken: megatron-core's own ``apply_rotary_pos_emb`` with ``apply_rope_fusion`` off, no packed sequences
(``cu_seqlens``), no multi-latent attention, ``mscale`` 1, a float32 ``t`` of ``[s, b, heads, d]`` and float32
``freqs`` of ``[s, 1, 1, d]`` that requires no gradient (the rotary dimension the whole head: ``rotary_percent``
1). Anything else runs megatron's function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mindspeed_ms.compat.function_grads import own_function
from mindspeed_ms.compat.host_arithmetic import rope_backward, rope_forward

__all__ = ["MODULE", "Rope", "apply_wrapper", "rope_backward", "rope_forward", "rope_of"]

#: the module whose ``apply_rotary_pos_emb`` this computes
MODULE = "megatron.core.models.common.embeddings.rope_utils"
#: the attribute of a result: ``(input, rope, version)``
_ROPED = "_mindspeed_ms_rope"
#: the attribute of a ``freqs`` tensor: ``(version, Rope)``
_TRIG = "_mindspeed_ms_rope_trig"


class Rope:
    """``cos`` and ``sin`` of one ``freqs`` (float32 host arrays ``[s, 1, 1, d]``) and the pairing of the halves."""

    __slots__ = ("cos", "interleaved", "sin")

    def __init__(self, cos: Any, sin: Any, interleaved: bool) -> None:
        self.cos, self.sin, self.interleaved = cos, sin, interleaved


@functools.lru_cache(maxsize=1)
def _function() -> Any:
    from mindspeed_ms.compat.host_memory import host_array
    from mindspeed_ms.compat.host_outputs import new_float32

    class HostRope(own_function()):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """megatron's rotary embedding of ``t`` ``[s, b, heads, d]``."""

        @staticmethod
        def forward(ctx: Any, t: Any, rope: Rope) -> Any:
            shape = tuple(t._shape)
            result, memory = new_float32(shape)
            rope_forward(host_array(t), rope, memory)
            ctx.shape, ctx.rope = shape, rope
            return result

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            result, memory = new_float32(ctx.shape)
            rope_backward(host_array(grad), ctx.rope, memory)
            return result, None

    return HostRope


def _trig(freqs: Any, interleaved: bool) -> Rope:
    """The :class:`Rope` of ``freqs``: the framework's ``cos``/``sin`` (its kernels' bits), once per tensor and
    version, as host copies."""
    import torch  # MSAdapter's, in a MindSpore process

    from mindspeed_ms.compat.host_memory import host_array

    cached = getattr(freqs, _TRIG, None)
    if cached is not None and cached[0] == freqs._version and cached[1].interleaved == interleaved:
        return cached[1]  # type: ignore[no-any-return]
    with torch.no_grad():
        rope = Rope(host_array(torch.cos(freqs)).copy(), host_array(torch.sin(freqs)).copy(), interleaved)
    setattr(freqs, _TRIG, (freqs._version, rope))
    return rope


def _taken(t: Any, freqs: Any, config: Any, cu_seqlens: Any, mscale: Any) -> bool:
    import mindspore

    if (cu_seqlens is not None or mscale != 1.0 or getattr(config, "apply_rope_fusion", True)
            or getattr(config, "multi_latent_attention", True) or not isinstance(config.rotary_interleaved, bool)):
        return False
    shape, freqs_shape = getattr(t, "_shape", None), getattr(freqs, "_shape", None)
    if shape is None or freqs_shape is None or len(shape) != 4 or not all(shape):
        return False
    return (t.dtype is mindspore.float32 and freqs.dtype is mindspore.float32 and not freqs.requires_grad
            and tuple(freqs_shape) == (shape[0], 1, 1, shape[3]) and shape[3] % 2 == 0)


def apply_wrapper(op: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``apply_rotary_pos_emb(t, freqs, config, cu_seqlens=None, mscale=1.0)``: megatron's own only."""
    if getattr(op, "__module__", None) != MODULE or hasattr(op, "__wrapped__"):
        return op

    @functools.wraps(op)
    def apply_rotary_pos_emb(t: Any, freqs: Any, config: Any, cu_seqlens: Any = None, mscale: float = 1.0) -> Any:
        if not _taken(t, freqs, config, cu_seqlens, mscale):
            return op(t, freqs, config, cu_seqlens=cu_seqlens, mscale=mscale)
        rope = _trig(freqs, config.rotary_interleaved)
        result = _function().apply(t, rope)
        setattr(result, _ROPED, (t, rope, result._version))
        return result

    return apply_rotary_pos_emb


def rope_of(tensor: Any) -> tuple[Any, Rope] | None:
    """``(input, rope)`` when ``tensor`` is a result of this Function, not written in place since; else None."""
    found = getattr(tensor, _ROPED, None)
    if found is None or tensor._version != found[2]:
        return None
    return found[0], found[1]
