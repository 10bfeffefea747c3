"""``memory_format=`` on ``contiguous``, ``is_contiguous``, ``to`` and the dtype casts
(mindspeed_ms.compat.memory_formats): MSAdapter's took no such argument (TypeError); PyTorch's checks it, answers
``is_contiguous`` per format from the strides, and refuses a format of the wrong rank."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _raised(call: Any) -> str:
    try:
        call()
    except (RuntimeError, TypeError) as error:  # PyTorch's classes: a wrong rank / format, a wrong argument type
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return "no error"


@case("Tensor.contiguous", "Tensor.stride")
def contiguous_takes_a_memory_format(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=98)).t()
    made = x.contiguous(memory_format=torch.contiguous_format)
    legacy = x.contiguous(memory_format=torch.legacy_contiguous_format)
    return {"made": [made, tuple(made.stride()), made.is_contiguous()], "legacy": tuple(legacy.stride()),
            "preserve": _raised(lambda: x.contiguous(memory_format=torch.preserve_format)),
            "none": _raised(lambda: x.contiguous(memory_format=None)),
            "wrong_rank": _raised(lambda: x.contiguous(memory_format=torch.channels_last))}


@case("Tensor.is_contiguous")
def is_contiguous_per_memory_format(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=99))
    images = torch.tensor(data((2, 3, 4, 5), seed=100))
    return {"contiguous": [x.is_contiguous(memory_format=torch.contiguous_format),
                           x.t().is_contiguous(memory_format=torch.contiguous_format)],
            "preserve": x.is_contiguous(memory_format=torch.preserve_format),
            "channels_last_2d": x.is_contiguous(memory_format=torch.channels_last),
            "channels_last_4d": images.is_contiguous(memory_format=torch.channels_last),
            "channels_last_of_channels_last_strides": images.permute(0, 2, 3, 1).permute(0, 3, 1, 2).is_contiguous(
                memory_format=torch.channels_last),
            "channels_last_size_one": torch.zeros(2, 1, 1, 1).is_contiguous(memory_format=torch.channels_last),
            "channels_last_3d": torch.zeros(2, 1, 1, 1, 1).is_contiguous(memory_format=torch.channels_last_3d),
            "none": _raised(lambda: x.is_contiguous(memory_format=None))}


@case("Tensor.to")
def to_takes_a_memory_format(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=101))
    half = x.to(torch.float16, memory_format=torch.preserve_format)
    same = x.to(torch.float32, memory_format=torch.contiguous_format)
    return {"half": half, "same_is_input": same is x,
            "keyword_dtype": x.to(dtype=torch.float64, memory_format=torch.contiguous_format),
            "wrong_type": _raised(lambda: x.to(torch.float16, memory_format=1)).split(":")[0],  # texts differ
            "wrong_rank": _raised(lambda: x.to(torch.float16, memory_format=torch.channels_last))}


@case("Tensor.float", "Tensor.half", "Tensor.bfloat16", "Tensor.double", "Tensor.int", "Tensor.long", "Tensor.bool")
def casts_take_a_memory_format(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=102))
    keep = torch.preserve_format
    return {"float": x.float(memory_format=keep), "half": x.half(memory_format=torch.contiguous_format),
            "bfloat16": x.bfloat16(memory_format=keep).float(), "double": x.double(memory_format=keep),
            "int": x.int(memory_format=keep), "long": x.long(memory_format=keep), "bool": x.bool(memory_format=keep),
            "wrong_type": _raised(lambda: x.float(memory_format=3)),
            "wrong_rank": _raised(lambda: x.half(memory_format=torch.channels_last_3d))}
