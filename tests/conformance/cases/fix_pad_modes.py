"""F.pad's reflect, replicate and circular modes (mindspeed_ms.compat.pad_modes): replicate always raised, reflect of
a 5-d input raised, PyTorch's refusals came as MindSpore's ValueError; values and gradients as PyTorch's."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _refusal(call: Any) -> str:
    try:
        call()
    except NotImplementedError as error:  # before RuntimeError: PyTorch's class for an unsupported rank
        return f"NotImplementedError: {str(error).splitlines()[0]}"
    except RuntimeError as error:
        return f"RuntimeError: {str(error).splitlines()[0]}"
    return "no error"


@case("torch.nn.functional.pad")
def replicate_reflect_and_circular_over_one_two_and_three_dims(torch: Any) -> Any:
    F = torch.nn.functional
    out = {}
    for name, shape, pad in (("1d", (2, 3, 5), (2, 1)), ("1d_unbatched", (3, 5), (1, 2)),
                             ("2d", (1, 2, 3, 4), (1, 2, 2, 1)), ("3d", (1, 1, 3, 3, 4), (1, 1, 2, 1, 1, 0)),
                             ("crop", (2, 3, 5), (-1, 2))):
        x = torch.tensor(data(shape, seed=len(out) + 100))
        for mode in ("reflect", "replicate", "circular"):
            out[f"{name}_{mode}"] = F.pad(x, pad, mode=mode)
    return out


@case("torch.nn.functional.pad", "Tensor.backward")
def padding_gradients_sum_over_the_positions_read(torch: Any) -> Any:
    F = torch.nn.functional
    grads = {}
    for mode in ("reflect", "replicate", "circular"):
        x = torch.tensor(data((1, 2, 3, 4), seed=110), requires_grad=True)
        weight = torch.tensor(data((1, 2, 6, 7), seed=111))
        (F.pad(x, (1, 2, 2, 1), mode=mode) * weight).sum().backward()
        grads[mode] = x.grad
    return grads


@case("torch.nn.functional.pad")
def padding_refusals_are_pytorchs(torch: Any) -> Any:
    F = torch.nn.functional
    x = torch.tensor(data((2, 3, 5), seed=112))
    return {"rank": _refusal(lambda: F.pad(torch.tensor(data((1, 2, 3, 4), seed=113)), (1, 1), mode="reflect")),
            "too_large": _refusal(lambda: F.pad(x, (5, 1), mode="reflect")),
            "wraps_twice": _refusal(lambda: F.pad(x, (6, 1), mode="circular")),
            "odd": _refusal(lambda: F.pad(x, (1,), mode="replicate")),
            "value": _refusal(lambda: F.pad(x, (1, 1), mode="reflect", value=1.0)),
            "mode": _refusal(lambda: F.pad(x, (1, 1), mode="bogus")),
            "value_zero": list(F.pad(x, (1, 1), mode="reflect", value=0.0).shape),
            "constant_none": F.pad(x, (1, 1), value=None)}
