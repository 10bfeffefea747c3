"""F.scaled_dot_product_attention (mindspeed_ms.compat.attention_function): masks (bool, float, broadcast),
is_causal (alone, with a mask, fewer queries than keys), scale, enable_gqa, fully masked rows, half precision,
empty sequences, dropout at 0 and 1, gradients, PyTorch's refusals."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


def _qkv(torch: Any, heads: tuple[int, int] = (2, 2), length: int = 3, source: int = 5, seed: int = 70) -> Any:
    query = torch.tensor(data((2, heads[0], length, 4), seed=seed))
    key = torch.tensor(data((2, heads[1], source, 4), seed=seed + 1))
    value = torch.tensor(data((2, heads[1], source, 4), seed=seed + 2))
    return query, key, value


def _bool_mask(torch: Any, shape: tuple[int, ...], seed: int) -> Any:
    mask = torch.tensor(data(shape, "bool", seed=seed))
    mask[..., 0] = True
    return mask


def _error(call: Any) -> Any:
    try:
        call()
    except Exception as error:  # noqa: BLE001  (an error is an outcome to compare)
        return [klass.__name__ for klass in type(error).__mro__ if klass.__module__ == "builtins"][0]
    return None


@case("torch.nn.functional.scaled_dot_product_attention")
def sdpa_masks_causal_and_scale(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = _qkv(torch)
    mask = _bool_mask(torch, (3, 5), 72)
    additive = torch.tensor(data((2, 1, 3, 5), seed=73))
    return {"plain": attention(query, key, value), "bool_mask": attention(query, key, value, attn_mask=mask),
            "float_mask": attention(query, key, value, additive),
            "causal": attention(query, key, value, is_causal=True),
            "causal_and_mask": attention(query, key, value, attn_mask=mask, is_causal=True),
            "causal_and_float_mask": attention(query, key, value, additive, 0.0, True),
            "scale": attention(query, key, value, scale=0.125), "zero_scale": attention(query, key, value, scale=0.0),
            "three_dims": attention(query[0], key[0], value[0]), "value_width": attention(query, key, key[..., :3]),
            "dropout_zero": attention(query, key, value, dropout_p=0.0),
            "dropout_one": attention(query, key, value, dropout_p=1.0)}


@case("torch.nn.functional.scaled_dot_product_attention")
def sdpa_rows_that_see_nothing_give_zeros(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = _qkv(torch, seed=74)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    additive = torch.zeros(3, 5)
    additive[2] = float("-inf")
    return {"bool": attention(query, key, value, attn_mask=mask), "float": attention(query, key, value, additive),
            "no_keys": attention(query, key[:, :, :0], value[:, :, :0]),
            "no_queries": attention(query[:, :, :0], key, value)}


@case("torch.nn.functional.scaled_dot_product_attention")
def sdpa_grouped_query_heads(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = _qkv(torch, heads=(4, 2), seed=75)
    _, one_key, one_value = _qkv(torch, heads=(4, 1), seed=76)
    return {"gqa": attention(query, key, value, enable_gqa=True),
            "gqa_causal": attention(query, key, value, is_causal=True, enable_gqa=True),
            "one_head_broadcasts": attention(query, one_key, one_value),
            "indivisible": _error(lambda: attention(query, *_qkv(torch, heads=(4, 3))[1:], enable_gqa=True))}


@case("torch.nn.functional.scaled_dot_product_attention", rtol=2e-2, atol=2e-2)
def sdpa_half_precision(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = _qkv(torch, seed=77)
    mask = _bool_mask(torch, (3, 5), 78)
    additive = torch.tensor(data((3, 5), seed=79))
    out = {}
    for dtype in (torch.bfloat16, torch.float16):
        q, k, v = query.to(dtype), key.to(dtype), value.to(dtype)
        name = str(dtype).rsplit(".", 1)[-1].lower()
        out[name] = [attention(q, k, v, attn_mask=mask), attention(q, k, v, is_causal=True),
                     attention(q, k, v, additive), attention(q, k, v, additive.to(dtype))]
    out["float64"] = attention(query.double(), key.double(), value.double(), attn_mask=mask)
    return out


@case("torch.nn.functional.scaled_dot_product_attention", rtol=1e-4, atol=1e-5)
def sdpa_gradients(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = (t.requires_grad_(True) for t in _qkv(torch, heads=(4, 2), seed=80))
    mask = _bool_mask(torch, (3, 5), 81)
    mask[1] = False  # a row that sees nothing: zero gradients, not nan
    additive = torch.tensor(data((3, 5), seed=82)).requires_grad_(True)
    weights = torch.tensor(data((2, 4, 3, 4), seed=83))
    grads = {}
    for name, heads, kwargs in (("bool_causal", 2, {"attn_mask": mask, "is_causal": True}),
                                ("float", 2, {"attn_mask": additive}),
                                ("gqa_scale", 4, {"enable_gqa": True, "scale": 0.3}),
                                ("gqa_causal_mask", 4, {"enable_gqa": True, "attn_mask": mask, "is_causal": True})):
        (attention(query[:, :heads], key, value, **kwargs) * weights[:, :heads]).sum().backward()
        grads[name] = [query.grad, key.grad, value.grad]
        query.grad = key.grad = value.grad = None
    grads["mask"] = additive.grad
    return grads


@case("torch.nn.functional.scaled_dot_product_attention", rtol=2e-2, atol=2e-2)
def sdpa_bfloat16_gradients(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = (t.bfloat16().requires_grad_(True) for t in _qkv(torch, seed=84))
    attention(query, key, value, is_causal=True).float().pow(2).sum().backward()
    return [query.grad, key.grad, value.grad]


@case("torch.nn.functional.scaled_dot_product_attention")
def sdpa_refusals(torch: Any) -> Any:
    attention = torch.nn.functional.scaled_dot_product_attention
    query, key, value = _qkv(torch, seed=85)
    return {"dtypes": _error(lambda: attention(query, key.double(), value)),
            "one_dim": _error(lambda: attention(query[0, 0, 0], key[0, 0, 0], value[0, 0, 0])),
            "int": _error(lambda: attention(query.int(), key.int(), value.int())),
            "int_mask": _error(lambda: attention(query, key, value, attn_mask=torch.ones(3, 5, dtype=torch.int64))),
            "double_mask": _error(lambda: attention(query, key, value, attn_mask=torch.ones(3, 5).double())),
            "mask_shape": _error(lambda: attention(query, key, value, attn_mask=torch.ones(4, 5))),
            "heads": _error(lambda: attention(torch.cat([query, query], 1), key, value)),
            "causal_mask_3d": _error(lambda: attention(query[0], key[0], value[0], torch.ones(3, 5) > 0, 0.0, True)),
            "causal_mask_dropout": _error(lambda: attention(query, key, value, torch.ones(3, 5) > 0, 0.5, True)),
            "causal_mask_batch": _error(lambda: attention(query, key[:1], value[:1], torch.ones(3, 5) > 0, 0.0, True))}
