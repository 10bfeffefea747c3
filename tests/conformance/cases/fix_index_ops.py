"""Index / scatter / random-fill / addcmul ops rebuilt from CPU kernels (mindspeed_ms.compat.index_ops): gradients,
dtypes, refusals (PyTorch's exception kind), torch.manual_seed determinism."""

from __future__ import annotations

from typing import Any, Callable

from conformance.harness import case
from conformance.samples import grad_of, tensor


def _refusal(torch: Any, make: Callable[[], Any], apply: Callable[[Any], Any]) -> str:
    """The kind of exception PyTorch raises. Whether ``self`` changed is not compared: PyTorch's CPU kernels of
    index_put_/index_copy_ write the in-range rows before they meet the bad index; ours check first and write
    nothing (tests/test_compat_index_ops.py)."""
    target = make()
    try:
        apply(target)
    except IndexError:
        kind = "IndexError"
    except RuntimeError:
        kind = "RuntimeError"
    else:
        kind = "none"
    return kind


@case("Tensor.scatter_add", "Tensor.index_put", "Tensor.index_copy", "torch.addcmul")
def index_ops_gradients(torch: Any) -> Any:
    index = torch.tensor([[0, 1, 0, 2], [2, 2, 1, 0]])
    return {
        "scatter_add": grad_of(torch, lambda x, s: x.scatter_add(0, index, s), tensor(torch, (3, 4)),
                               tensor(torch, (2, 4), seed=1)),
        "index_put": grad_of(torch, lambda x, v: x.index_put((torch.tensor([2, 0]),), v), tensor(torch, (3, 4)),
                             tensor(torch, (2, 4), seed=2)),
        "index_put_accumulate": grad_of(torch, lambda x, v: x.index_put((torch.tensor([1, 1]),), v, accumulate=True),
                                        tensor(torch, (3, 4)), tensor(torch, (2, 4), seed=3)),
        "index_copy": grad_of(torch, lambda x, s: x.index_copy(1, torch.tensor([3, 0]), s), tensor(torch, (3, 4)),
                              tensor(torch, (3, 2), seed=4)),
        "addcmul_broadcast": grad_of(torch, lambda a, b, c: torch.addcmul(a, b, c, value=-2.0),
                                     tensor(torch, (3, 4)), tensor(torch, (4,), seed=5), tensor(torch, (3, 1), seed=6)),
    }


@case("Tensor.index_put_", "Tensor.index_copy_", "Tensor.scatter_", "Tensor.scatter_add_")
def index_ops_refusals_raise_pytorchs_exception_kind(torch: Any) -> Any:
    def make() -> Any:
        return tensor(torch, (3, 4), seed=7)

    ones = torch.ones(2, 4)
    return {
        "index_put_out_of_range": _refusal(torch, make, lambda x: x.index_put_((torch.tensor([0, 3]),), ones)),
        "index_put_negative_out_of_range": _refusal(torch, make, lambda x: x.index_put_((torch.tensor([-4]),),
                                                                                       torch.tensor(1.0))),
        "index_put_bad_value_shape": _refusal(torch, make, lambda x: x.index_put_((torch.tensor([0, 1]),),
                                                                                  torch.ones(3, 4))),
        "index_put_dtype_mismatch": _refusal(torch, make, lambda x: x.index_put_((torch.tensor([0]),),
                                                                                 torch.tensor(1, dtype=torch.int64))),
        "index_copy_int32_index": _refusal(torch, make, lambda x: x.index_copy_(
            0, torch.tensor([0, 1], dtype=torch.int32), ones)),
        "index_copy_out_of_range": _refusal(torch, make, lambda x: x.index_copy_(0, torch.tensor([0, 3]), ones)),
        "scatter_out_of_range": _refusal(torch, make, lambda x: x.scatter_(1, torch.tensor([[0, 4]]), 1.0)),
        "scatter_int32_index": _refusal(torch, make, lambda x: x.scatter_(1, torch.tensor([[0]], dtype=torch.int32),
                                                                          1.0)),
        "scatter_int16_index": _refusal(torch, make, lambda x: x.scatter_(1, torch.tensor([[0]], dtype=torch.int16),
                                                                          1.0)),
        "scatter_add_negative_index": _refusal(torch, make, lambda x: x.scatter_add_(1, torch.tensor([[-1]]),
                                                                                     torch.ones(1, 1))),
        "index_put_int16_index": _refusal(torch, make, lambda x: x.index_put_(
            (torch.tensor([1], dtype=torch.int16),), torch.tensor(1.0))),
        "index_put_mask_shape": _refusal(torch, make, lambda x: x.index_put_(
            (torch.tensor([True, False]),), torch.tensor(1.0))),
        "scatter_add_out_of_range": _refusal(torch, make, lambda x: x.scatter_add_(0, torch.tensor([[3, 0]]),
                                                                                   torch.ones(1, 2))),
    }


@case("Tensor.index_put_", "Tensor.index_put")
def index_put_forms(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=8)
    mask = torch.tensor([True, False, True])
    return {
        "bool_mask": x.index_put((mask,), torch.tensor(5.0)),
        "two_indices": x.index_put((torch.tensor([0, 2, 2]), torch.tensor([1, -1, 0])), torch.tensor([1.0, 2.0, 3.0])),
        "negative_row": x.index_put((torch.tensor([-1]),), torch.arange(4.0)),
        "accumulate_duplicates_2d": x.index_put((torch.tensor([1, 1, 1]), torch.tensor([2, 2, 0])),
                                                torch.tensor([1.0, 2.0, 4.0]), accumulate=True),
        "int32_index": x.index_put((torch.tensor([2, 1], dtype=torch.int32),), torch.tensor(0.5)),
        "int64_self": tensor(torch, (4,), "int64").index_put_((torch.tensor([1, 3]),), torch.tensor([7, 8])),
    }


@case("Tensor.scatter_", "Tensor.scatter_add_", "Tensor.scatter_add")
def scatter_forms(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=9)
    index = torch.tensor([[2, 0], [1, 1]])
    src = tensor(torch, (3, 3), seed=10)  # larger than index: PyTorch reads only the index-shaped corner
    return {
        "scatter_tensor_src_larger": x.clone().scatter_(1, index, src),
        "scatter_value": x.clone().scatter_(0, index, -3.0),
        "scatter_add_src_larger": x.scatter_add(1, index, src),
        "scatter_add_negative_dim": x.scatter_add(-1, index, src),
        "scatter_add_int64": tensor(torch, (2, 3), "int64").scatter_add_(1, torch.tensor([[0, 0, 2]]),
                                                                          torch.tensor([[1, 2, 3]])),
    }


@case("Tensor.uniform_", "Tensor.exponential_")
def random_fills_follow_manual_seed(torch: Any) -> Any:
    out = {}
    for name, fill in (("uniform_", lambda t: t.uniform_(-1.0, 1.0)), ("exponential_", lambda t: t.exponential_(2.0))):
        torch.manual_seed(1234)
        first = fill(torch.empty(64))
        torch.manual_seed(1234)
        again = fill(torch.empty(64))
        out[name] = {"replays": bool(torch.equal(first, again)), "varied": bool(first.max() > first.min())}
    return out


@case("Tensor.uniform_", "Tensor.exponential_")
def random_fills_keep_dtype_and_range(torch: Any) -> Any:
    out = {}
    for dtype in ("float16", "bfloat16", "float64"):
        x = torch.zeros(200, dtype=getattr(torch, dtype))
        base = torch.zeros(4, 50, dtype=getattr(torch, dtype))
        base[1:3].uniform_(2.0, 3.0)
        x.uniform_(2.0, 3.0)
        wide = x.float()  # comparisons of float16/bfloat16 are not what this case checks
        in_range = bool(((wide >= 2.0) & (wide <= 3.0)).all())
        out[dtype] = {"uniform": in_range, "dtype": x.dtype,
                      "exponential": bool((x.exponential_().float() >= 0).all()), "exp_dtype": x.dtype,
                      "view_rows_written": bool((base[1:3].float() >= 2.0).all()),
                      "other_rows": bool((base[0].float() == 0).all())}
    return out


@case("Tensor.bitwise_not_")
def bitwise_not_integers_on_views(torch: Any) -> Any:
    out = {}
    for dtype in ("int64", "int32", "uint8", "int8"):
        base = tensor(torch, (2, 3), dtype, low=0, high=9)
        view = base[:, 1]
        returned = view.bitwise_not_()
        out[dtype] = {"base": base, "returns_self": returned is view}
    return out


@case("Tensor.erfinv_")
def erfinv_on_views(torch: Any) -> Any:
    """``torch.nn.init.trunc_normal_`` calls it; floats in (-1, 1), written through a view."""
    out = {}
    for dtype in ("float32", "float64"):
        base = tensor(torch, (3, 4), dtype, low=-0.9, high=0.9)
        view = base[:, 1:3]
        returned = view.erfinv_()
        out[dtype] = {"base": base, "returns_self": returned is view}
    return out


@case("torch.addcmul")
def addcmul_dtypes(torch: Any) -> Any:
    a, b, c = tensor(torch, (3,)), tensor(torch, (3,), seed=1), tensor(torch, (3,), seed=2)
    i = tensor(torch, (3,), "int64")
    return {"default_value": torch.addcmul(a, b, c), "int64": torch.addcmul(i, i, i, value=3),
            "float_int_mixed": torch.addcmul(a, i, c, value=2), "float64": torch.addcmul(a.double(), b.double(),
                                                                                        c.double(), value=0.25)}


@case("Tensor.scatter_add_", "Tensor.index_copy_", "Tensor.scatter_")
def moe_unpermute_patterns_with_gradients(torch: Any) -> Any:
    """megatron's unpermute (scatter_add_ of an expanded index into zeros), MindSpeed's index_copy_ variant, the
    group-limited router's mask (scatter_ of an int value)."""
    sorted_indices = torch.tensor([2, 0, 2, 1, 0])
    weights = tensor(torch, (3, 4), seed=11)

    def unpermute(tokens: Any) -> Any:
        out = torch.zeros(3, 4, dtype=tokens.dtype)
        out.scatter_add_(0, sorted_indices.unsqueeze(1).expand(-1, 4), tokens)
        return out

    def index_copy(tokens: Any) -> Any:
        out = torch.zeros(5, 4, dtype=tokens.dtype)
        out.index_copy_(0, torch.tensor([4, 0, 3, 1, 2]), tokens)
        return out * 1.0

    group_mask = torch.zeros(3, 4)
    group_mask.scatter_(1, torch.tensor([[1], [3], [0]]), 1)
    return {"unpermute": grad_of(torch, unpermute, tensor(torch, (5, 4), seed=12)),
            "index_copy": grad_of(torch, index_copy, tensor(torch, (5, 4), seed=13)),
            "weighted": grad_of(torch, lambda t: unpermute(t) * weights, tensor(torch, (5, 4), seed=14)),
            "group_mask": group_mask}


@case("torch.addcdiv", "Tensor.addcdiv_")
def addcdiv_values_views_and_gradients(torch: Any) -> Any:
    a, b, c = tensor(torch, (3, 4)), tensor(torch, (3, 4), seed=1), tensor(torch, (3, 4), seed=2, low=0.5, high=2.0)
    base = a.clone()
    view = base[1:, :2]
    returned = view.addcdiv_(b[1:, :2], c[1:, :2], value=-0.3)
    return {"out": torch.addcdiv(a, b, c, value=0.5), "float16": torch.addcdiv(a.half(), b.half(), c.half()),
            "broadcast": torch.addcdiv(a, b[0], c[:, :1]), "base": base, "returns_self": returned is view,
            "grad": grad_of(torch, lambda x, y, z: torch.addcdiv(x, y, z, value=2.0), a, b, c),
            "int_raises": _refusal(torch, lambda: tensor(torch, (3,), "int64"),
                                   lambda x: torch.addcdiv(x, x, x + 5))}
