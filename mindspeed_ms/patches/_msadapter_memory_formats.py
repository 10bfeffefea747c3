"""The msadapter provider's registrations of ``torch.memory_format`` and the ``memory_format=`` arguments.

Not a provider itself (its name starts with ``_``): :func:`mindspeed_ms.patches._msadapter_absent.register_absent`
calls :func:`register_memory_formats`. The replacements live in :mod:`mindspeed_ms.compat.memory_formats`; the
conformance cases tests/conformance/cases/fix_memory_formats.py compare them with PyTorch.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_TENSOR = "mindspore.common.tensor.Tensor"
#: the dtype casts that take ``memory_format=`` in PyTorch
_CASTS = ("float", "half", "bfloat16", "double", "int", "long", "short", "byte", "bool")

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_FORMATS = "mindspeed_ms.compat.memory_formats"


def register_memory_formats(registry: Any) -> None:
    """Register the four memory formats and the calls that take them."""
    from mindspeed_ms.compat import memory_formats

    for name, attribute in memory_formats.FORMATS:
        exists = name not in ("channels_last", "channels_last_3d")
        registry.register(
            f"msadapter.{name}", f"{_FORMATS}:{attribute}",
            create_dummy=not exists, requires=_MSADAPTER,
            purpose=(f"torch.{name} is None under MSAdapter (contiguous, preserve and legacy formats all equal)"
                     if exists else f"torch.{name} does not exist under MSAdapter"))
    for like in ("zeros_like", "ones_like", "empty_like", "full_like"):
        registry.register(
            f"msadapter.ops.creation.{like}", memory_formats.like_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.{like}(memory_format=torch.channels_last) is ignored (a row-major result)")
    for like in ("rand_like", "randn_like"):
        registry.register(
            f"msadapter.ops.random.{like}", memory_formats.like_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.{like}(memory_format=torch.channels_last) is ignored (a row-major result)")
    registry.register(
        "msadapter.ops.creation.empty", memory_formats.empty_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.empty(..., memory_format=...) raises TypeError (no memory_format argument)")
    for method, wrapper in (("contiguous", memory_formats.contiguous_wrapper),
                            ("is_contiguous", memory_formats.is_contiguous_wrapper),
                            ("to", memory_formats.to_format_wrapper)):
        registry.register(
            f"{_TENSOR}.{method}", wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"Tensor.{method}(memory_format=...) raises TypeError (no memory_format argument)")
    for cast in _CASTS:
        registry.register(
            f"{_TENSOR}.{cast}", memory_formats.cast_format_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"Tensor.{cast}(memory_format=...) raises TypeError (no memory_format argument)")

