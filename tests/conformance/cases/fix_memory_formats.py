"""PyTorch's memory formats (mindspeed_ms.compat.memory_formats): four distinct torch.memory_format objects, named
and pickled as PyTorch's; clone/empty/*_like take them; a channels-last layout is refused (loud), never ignored."""

from __future__ import annotations

import pickle
from typing import Any

from conformance.harness import case, data


def _raised(call: Any) -> str:
    try:
        call()
    except RuntimeError as error:  # PyTorch's class for a wrong rank; the text names the rank and the format
        return f"RuntimeError: {str(error).splitlines()[0]}"
    return "no error"


@case("torch.contiguous_format", "torch.preserve_format", "torch.channels_last")
def formats_are_distinct_named_objects(torch: Any) -> Any:
    formats = [torch.contiguous_format, torch.preserve_format, torch.channels_last, torch.channels_last_3d]
    return {"names": [repr(f) for f in formats], "str": str(torch.preserve_format),
            "distinct": len({id(f) for f in formats}), "equal": torch.contiguous_format == torch.preserve_format,
            "legacy_is_contiguous": torch.legacy_contiguous_format is torch.contiguous_format,
            "instances": all(isinstance(f, torch.memory_format) for f in formats),
            "type": type(torch.channels_last).__name__,
            "pickled": all(pickle.loads(pickle.dumps(f)) is f for f in formats)}


@case("Tensor.clone", "torch.clone", "Tensor.stride")
def clone_to_contiguous_format_is_contiguous(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=95))
    method = x.t().clone(memory_format=torch.contiguous_format)
    function = torch.clone(x.t(), memory_format=torch.legacy_contiguous_format)
    preserve = x.t().clone(memory_format=torch.preserve_format)
    return {"method": [method, tuple(method.stride()), method.is_contiguous()],
            "function": [function, tuple(function.stride())], "preserve": tuple(preserve.stride()),
            "wrong_rank": _raised(lambda: x.clone(memory_format=torch.channels_last))}


@case("torch.empty", "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like")
def factories_take_the_formats(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=96))
    return {"empty": list(torch.empty(2, 3, memory_format=torch.contiguous_format).shape),
            "empty_preserve": _raised(lambda: torch.empty(2, 3, memory_format=torch.preserve_format)),
            "zeros": torch.zeros_like(x, memory_format=torch.contiguous_format),
            "ones": torch.ones_like(x, memory_format=torch.preserve_format),
            "full": torch.full_like(x, 2.5, memory_format=torch.legacy_contiguous_format),
            "empty_like": list(torch.empty_like(x, memory_format=torch.preserve_format).shape),
            "wrong_rank": _raised(lambda: torch.zeros_like(x, memory_format=torch.channels_last)),
            "wrong_rank_3d": _raised(lambda: torch.ones_like(x, memory_format=torch.channels_last_3d))}


@case("torch.empty_like")
def channels_last_layouts_are_refused_not_ignored(torch: Any) -> Any:
    images = torch.tensor(data((1, 2, 3, 4), seed=97))
    made = torch.empty_like(images, memory_format=torch.channels_last)
    return {"shape": list(made.shape), "stride": tuple(made.stride())}
