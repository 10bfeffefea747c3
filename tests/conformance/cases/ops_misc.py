"""Storage, serialisation, RNG state and flattening helpers megatron and MindSpeed call: what they report and
whether they round-trip (random values themselves differ between backends and are not compared)."""

from __future__ import annotations

import io
from typing import Any

from conformance.samples import register, tensor


def _untyped_storage(torch: Any) -> Any:
    x = tensor(torch, (2, 3))
    v = x[1]
    return {"nbytes": x.untyped_storage().nbytes(), "view_shares": v.untyped_storage().nbytes(),
            "same_ptr": x.untyped_storage().data_ptr() == v.untyped_storage().data_ptr(),
            "size": x.untyped_storage().size()}


def _storage_resize_frees(torch: Any) -> Any:
    x = tensor(torch, (4,))
    x.untyped_storage().resize_(0)
    return {"nbytes": x.untyped_storage().nbytes(), "shape": tuple(x.shape)}


def _storage_legacy(torch: Any) -> Any:
    x = tensor(torch, (2, 3))
    return {"size": x.storage().size(), "element_size": x.storage().element_size()}


def _data_ptr(torch: Any) -> Any:
    x = tensor(torch, (2, 3))
    return {"view_same": x.view(6).data_ptr() == x.data_ptr(), "row_offset": x[1].data_ptr() - x.data_ptr(),
            "clone_differs": x.clone().data_ptr() != x.data_ptr()}


def _resize_(torch: Any) -> Any:
    x = tensor(torch, (2, 3))
    x.resize_(3, 2)
    y = tensor(torch, (2, 3))
    y.resize_(0)
    return {"x": x, "y_shape": tuple(y.shape)}


def _save_load(torch: Any) -> Any:
    buffer = io.BytesIO()
    state = {"w": tensor(torch, (2, 3)), "i": torch.tensor([2**40, 3]), "step": 7, "h": tensor(torch, (2,)).half()}
    torch.save(state, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    return loaded


def _rng_state_round_trip(torch: Any) -> Any:
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    first = torch.rand(4)
    torch.set_rng_state(state)
    again = torch.rand(4)
    torch.manual_seed(1234)
    seeded = torch.rand(4)
    return {"replays": bool(torch.equal(first, again)), "seed_replays": bool(torch.equal(first, seeded)),
            "state_dtype": state.dtype, "initial_seed": torch.random.initial_seed()}


def _random_manual_seed(torch: Any) -> Any:
    torch.random.manual_seed(5)
    a = torch.randn(3)
    torch.random.manual_seed(5)
    return bool(torch.equal(a, torch.randn(3)))


def _flatten_dense(torch: Any) -> Any:
    from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

    parts = [tensor(torch, (2, 2)), tensor(torch, (3,), seed=1)]
    flat = _flatten_dense_tensors(parts)
    back = _unflatten_dense_tensors(flat * 2, parts)
    return {"flat": flat, "back": list(back)}


def _multinomial_facts(torch: Any) -> Any:
    probs = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    return torch.multinomial(probs, 1)


def _use_deterministic(torch: Any) -> Any:
    torch.use_deterministic_algorithms(False)
    return torch.are_deterministic_algorithms_enabled()


def _tree_flatten(torch: Any) -> Any:
    from torch.utils._pytree import tree_flatten, tree_unflatten

    leaves, spec = tree_flatten({"a": [1, 2], "b": (3, {"c": 4})})
    return {"leaves": leaves, "back": tree_unflatten([x * 10 for x in leaves], spec)}


def _exponential_facts(torch: Any) -> Any:
    x = torch.empty(100).exponential_()
    return {"positive": bool((x >= 0).all()), "dtype": x.dtype}


def _bitwise_not_(torch: Any) -> Any:
    base = torch.tensor([[True, False], [False, False]])
    view = base[0]
    view.bitwise_not_()
    return {"base": base, "view": view}


def _dequantize(torch: Any) -> Any:
    return tensor(torch, (2,)).dequantize()


def _to_dense(torch: Any) -> Any:
    x = tensor(torch, (2, 2))
    return {"values": x.to_dense(), "is_self": x.to_dense() is x}


register(__name__, "untyped_storage", ("Tensor.untyped_storage",), _untyped_storage)
register(__name__, "untyped_storage_resize_frees", ("Tensor.untyped_storage", "Tensor.resize_"), _storage_resize_frees)
register(__name__, "storage_legacy", ("Tensor.storage",), _storage_legacy)
register(__name__, "data_ptr", ("Tensor.data_ptr",), _data_ptr)
register(__name__, "tensor_resize_", ("Tensor.resize_",), _resize_)
register(__name__, "save_load_round_trip", ("torch.save", "torch.load"), _save_load)
register(__name__, "rng_state_round_trip", ("torch.get_rng_state", "torch.set_rng_state", "torch.manual_seed",
                                            "torch.random.initial_seed"), _rng_state_round_trip)
register(__name__, "random_manual_seed", ("torch.random.manual_seed",), _random_manual_seed)
register(__name__, "flatten_unflatten_dense", ("torch._utils._flatten_dense_tensors",
                                               "torch._utils._unflatten_dense_tensors"), _flatten_dense)
register(__name__, "multinomial_certain", ("torch.multinomial",), _multinomial_facts)
register(__name__, "use_deterministic_algorithms", ("torch.use_deterministic_algorithms",), _use_deterministic)
register(__name__, "pytree_flatten", ("torch.utils._pytree.tree_flatten", "torch.utils._pytree.tree_unflatten"),
         _tree_flatten)
register(__name__, "exponential_facts", ("Tensor.exponential_",), _exponential_facts)
register(__name__, "bitwise_not__on_view", ("Tensor.bitwise_not_",), _bitwise_not_)
register(__name__, "dequantize_float", ("Tensor.dequantize",), _dequantize)
register(__name__, "to_dense", ("Tensor.to_dense",), _to_dense)


def _logical(torch: Any) -> Any:
    a, b = tensor(torch, (2, 3), "bool", seed=1), tensor(torch, (2, 3), "bool", seed=2)
    f = tensor(torch, (2, 3))
    return {"or": torch.logical_or(a, b), "and": torch.logical_and(a, b), "not": torch.logical_not(a),
            "or_float": torch.logical_or(f > 0, f), "and_int": torch.logical_and(a, tensor(torch, (2, 3), "int64"))}


def _absolute(torch: Any) -> Any:
    return tensor(torch, (2, 3)).absolute()


def _init_deterministic(torch: Any) -> Any:
    w = torch.empty(2, 3)
    a = torch.nn.init.zeros_(w)
    z = w.clone()
    torch.nn.init.ones_(w)
    return {"zeros": z, "ones": w, "returns_self": a is w}


def _init_random_facts(torch: Any) -> Any:
    w = torch.empty(50, 40)
    out = {}
    for name, init in {"normal_": lambda: torch.nn.init.normal_(w, 0.0, 0.02),
                       "uniform_": lambda: torch.nn.init.uniform_(w, -0.1, 0.1),
                       "xavier_uniform_": lambda: torch.nn.init.xavier_uniform_(w),
                       "kaiming_uniform_": lambda: torch.nn.init.kaiming_uniform_(w, a=5 ** 0.5)}.items():
        returned = init()
        bound = {"normal_": 0.2, "uniform_": 0.1, "xavier_uniform_": (6 / 90) ** 0.5,
                 "kaiming_uniform_": (1 / 40) ** 0.5}[name]
        out[name] = {"returns_self": returned is w, "within": bool((w.abs() <= bound + 1e-6).all()),
                     "varied": bool(w.max() > w.min())}
    return out


def _is_checkpoint_valid(torch: Any) -> Any:
    return torch.autograd._is_checkpoint_valid()


register(__name__, "logical_ops", ("torch.logical_or", "torch.logical_and", "torch.logical_not"), _logical)
register(__name__, "absolute", ("Tensor.absolute",), _absolute)
register(__name__, "nn_init_zeros_ones", ("torch.nn.init.zeros_", "torch.nn.init.ones_"), _init_deterministic)
register(__name__, "nn_init_random_facts", ("torch.nn.init.normal_", "torch.nn.init.uniform_",
                                            "torch.nn.init.xavier_uniform_", "torch.nn.init.kaiming_uniform_"),
         _init_random_facts)
register(__name__, "autograd_is_checkpoint_valid", ("torch.autograd._is_checkpoint_valid",), _is_checkpoint_valid)


def _storage_free_and_restore(torch: Any) -> Any:
    """megatron's distributed optimizer and MindSpeed free a buffer's memory and bring it back this way."""
    x = tensor(torch, (2, 3))
    storage = x.untyped_storage()
    size = storage.size()
    storage.resize_(0)
    freed = x.untyped_storage().size()
    x.untyped_storage().resize_(size)
    x.copy_(tensor(torch, (2, 3), seed=7))
    return {"size": size, "freed": freed, "restored": x.untyped_storage().size(), "x": x}


def _storage_shared_by_views(torch: Any) -> Any:
    x = tensor(torch, (4, 3))
    return {"view_same_storage": x[1:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr(),
            "clone_other_storage": x.clone().untyped_storage().data_ptr() != x.untyped_storage().data_ptr(),
            "storage_nbytes_of_view": x[1:].untyped_storage().nbytes()}


register(__name__, "untyped_storage_free_and_restore", ("Tensor.untyped_storage", "Tensor.resize_"),
         _storage_free_and_restore)
register(__name__, "untyped_storage_shared_by_views", ("Tensor.untyped_storage",), _storage_shared_by_views)
