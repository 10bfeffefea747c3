"""Shape and view ops: values, shapes, and whether the result shares memory with its input exactly when PyTorch's
does (a view: writing it reaches the input; a copy: it does not); metadata queries; dtype conversions."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import noncontiguous, register, tensor

# name -> (ops, make(torch, x) -> result); x is a contiguous float32 (2, 3, 4) tensor
SHAPE: dict[str, tuple[tuple[str, ...], Callable[[Any, Any], Any]]] = {
    "view": (("Tensor.view",), lambda torch, x: x.view(6, 4)),
    "view_minus_one": (("Tensor.view",), lambda torch, x: x.view(-1, 2)),
    "view_dtype_size": (("Tensor.view",), lambda torch, x: x.view(torch.Size([4, 6]))),
    "reshape": (("Tensor.reshape",), lambda torch, x: x.reshape(3, 8)),
    "reshape_fn": (("torch.reshape",), lambda torch, x: torch.reshape(x, (-1,))),
    "contiguous": (("Tensor.contiguous",), lambda torch, x: x.contiguous()),
    "t": (("Tensor.t",), lambda torch, x: x[0].t()),
    "transpose": (("Tensor.transpose",), lambda torch, x: x.transpose(0, 2)),
    "transpose_fn": (("torch.transpose",), lambda torch, x: torch.transpose(x, 1, 2)),
    "permute": (("Tensor.permute",), lambda torch, x: x.permute(2, 0, 1)),
    "permute_fn": (("torch.permute",), lambda torch, x: torch.permute(x, (1, 2, 0))),
    "unsqueeze": (("Tensor.unsqueeze",), lambda torch, x: x.unsqueeze(1)),
    "unsqueeze_negative": (("torch.unsqueeze",), lambda torch, x: torch.unsqueeze(x, -1)),
    "squeeze": (("Tensor.squeeze",), lambda torch, x: x[:, :1].squeeze()),
    "squeeze_dim": (("torch.squeeze",), lambda torch, x: torch.squeeze(x[:1], 0)),
    "flatten": (("Tensor.flatten",), lambda torch, x: x.flatten()),
    "flatten_range": (("torch.flatten",), lambda torch, x: torch.flatten(x, 1)),
    "ravel": (("Tensor.ravel",), lambda torch, x: x.ravel()),
    "expand": (("Tensor.expand",), lambda torch, x: x[:, :1].expand(2, 5, 4)),
    "expand_minus_one": (("Tensor.expand",), lambda torch, x: x[:1].expand(3, -1, -1)),
    "expand_as": (("Tensor.expand_as",), lambda torch, x: x[:1].expand_as(x)),
    "view_as": (("Tensor.view_as",), lambda torch, x: x.view_as(torch.empty(4, 6))),
    "narrow": (("Tensor.narrow",), lambda torch, x: x.narrow(2, 1, 2)),
    "select": (("Tensor.select",), lambda torch, x: x.select(1, 2)),
    "split_int": (("Tensor.split",), lambda torch, x: x.split(2, dim=2)),
    "split_sizes": (("torch.split",), lambda torch, x: torch.split(x, [1, 3], dim=2)),
    "split_uneven": (("torch.split",), lambda torch, x: torch.split(x, 2, dim=1)),
    "chunk": (("torch.chunk",), lambda torch, x: torch.chunk(x, 2, dim=-1)),
    "chunk_method_uneven": (("Tensor.chunk",), lambda torch, x: x.chunk(2, dim=1)),
    "unbind": (("torch.unbind",), lambda torch, x: torch.unbind(x, 1)),
    "detach": (("Tensor.detach",), lambda torch, x: x.detach()),
    "clone": (("Tensor.clone",), lambda torch, x: x.clone()),
    "clone_fn": (("torch.clone",), lambda torch, x: torch.clone(x)),
    "repeat": (("Tensor.repeat",), lambda torch, x: x.repeat(2, 1, 1)),
    "tile": (("Tensor.tile",), lambda torch, x: x.tile((1, 2))),
    "repeat_interleave": (("Tensor.repeat_interleave",), lambda torch, x: x.repeat_interleave(2, dim=1)),
    "repeat_interleave_fn": (("torch.repeat_interleave",),
                             lambda torch, x: torch.repeat_interleave(x, torch.tensor([1, 0, 2]), dim=1)),
    "roll": (("torch.roll",), lambda torch, x: torch.roll(x, 1, dims=2)),
    "roll_method": (("Tensor.roll",), lambda torch, x: x.roll(-1, 0)),
    "flip": (("torch.flip",), lambda torch, x: torch.flip(x, [0, 2])),
    "tril": (("torch.tril",), lambda torch, x: torch.tril(x)),
    "tril_method": (("Tensor.tril",), lambda torch, x: x.tril(-1)),
    "triu": (("torch.triu",), lambda torch, x: torch.triu(x, 1)),
    "to_same_dtype": (("Tensor.to",), lambda torch, x: x.to(torch.float32)),
    "to_dtype": (("Tensor.to",), lambda torch, x: x.to(torch.float16)),
    "to_device_cpu": (("Tensor.to",), lambda torch, x: x.to("cpu")),
    "to_other_tensor": (("Tensor.to",), lambda torch, x: x.to(torch.zeros(1, dtype=torch.int64))),
    "float_self": (("Tensor.float",), lambda torch, x: x.float()),
    "cpu": (("Tensor.cpu",), lambda torch, x: x.cpu()),
    "type_as": (("Tensor.type_as",), lambda torch, x: x.type_as(torch.zeros(1, dtype=torch.float16))),
    "as_strided": (("torch.as_strided",), lambda torch, x: torch.as_strided(x, (3, 2), (1, 4))),
    "as_strided_method": (("Tensor.as_strided",), lambda torch, x: x.as_strided((2, 2), (4, 1), 1)),
}


def _make(name: str, ops: tuple[str, ...], make: Callable[[Any, Any], Any]) -> None:
    def run(torch: Any) -> Any:
        x = tensor(torch, (2, 3, 4), seed=21)
        out = make(torch, x)
        pieces = list(out) if isinstance(out, (tuple, list)) else [out]
        result = {"values": [piece.clone() for piece in pieces], "shapes": [tuple(p.shape) for p in pieces],
                  "is_input": [piece is x for piece in pieces],
                  "contiguous": [piece.is_contiguous() for piece in pieces]}
        x.add_(100.0)  # a view sees its input's change; a copy does not
        result["after_input_write"] = [piece.clone() for piece in pieces]
        if "expand" not in name and pieces[0].numel():
            pieces[0].fill_(-1.0)  # a view's write reaches its input (expanded memory refuses writes)
            result["input_after_write"] = x
        return result

    register(__name__, name, ops, run)


for _name, (_ops, _make_fn) in SHAPE.items():
    _make(_name, _ops, _make_fn)


def _noncontiguous_view_raises(torch: Any) -> Any:
    return noncontiguous(torch, (3, 4)).t().view(12)


def _noncontiguous_reshape_copies(torch: Any) -> Any:
    x = tensor(torch, (3, 4), seed=22)
    y = x.t().reshape(12)
    y[0] = 50.0
    return {"y": y, "x": x}


def _metadata(torch: Any) -> Any:
    x = tensor(torch, (2, 3, 4), seed=23)
    v = x.transpose(0, 2)[1:]
    s = x[:, 1]
    return {"size": x.size(), "size_dim": x.size(1), "size_neg": x.size(-1), "dim": v.dim(), "numel": v.numel(),
            "nelement": v.nelement(), "stride": v.stride(), "stride_dim": x.stride(0),
            "storage_offset": s.storage_offset(), "v_offset": v.storage_offset(),
            "is_contiguous": [x.is_contiguous(), v.is_contiguous(), s.is_contiguous()],
            "is_floating_point": [x.is_floating_point(), torch.is_floating_point(x.long())],
            "torch_numel": torch.numel(x), "is_tensor": [torch.is_tensor(x), torch.is_tensor(3)]}


def _element_size(dtype: str) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        return torch.tensor([1, 0]).to(getattr(torch, dtype)).element_size()
    return run


def _item_tolist(torch: Any) -> Any:
    f = tensor(torch, (2, 3), seed=24)
    i = tensor(torch, (3,), "int64", seed=24, low=-9, high=9)
    return {"item_float": f[1, 2].item(), "item_int": i[0].item(), "item_bool": torch.tensor(True).item(),
            "item_int64_large": torch.tensor(2**40 + 7).item(), "tolist_f": f.tolist(), "tolist_i": i.tolist(),
            "tolist_0d": torch.tensor(3).tolist(), "float16_item": f.half()[0, 0].item()}


def _item_many_raises(torch: Any) -> Any:
    return torch.ones(2).item()


def _numpy(torch: Any) -> Any:
    x = tensor(torch, (2, 3), seed=25)
    array = x.numpy()
    array[0, 0] = 42.0  # numpy() shares memory with the tensor
    return {"x": x, "dtype": str(array.dtype), "int": str(torch.zeros(1, dtype=torch.int64).numpy().dtype)}


def _conversions(dtype_method: str, source: str) -> Callable[[Any], Any]:
    def run(torch: Any) -> Any:
        x = tensor(torch, (2, 3), source, seed=26, low=-3, high=3)
        return getattr(x, dtype_method)()
    return run


def _type_string(torch: Any) -> Any:
    x = tensor(torch, (2, 3), seed=27)
    return {"type": x.type(), "long": x.type(torch.int64), "str": x.type("torch.HalfTensor")}


def _to_bfloat16_back(torch: Any) -> Any:
    x = tensor(torch, (2, 3), seed=28)
    return {"bf16": x.bfloat16(), "back": x.to(torch.bfloat16).float(), "via_to": x.to(dtype=torch.bfloat16)}


register(__name__, "view_of_noncontiguous_raises", ("Tensor.view",), _noncontiguous_view_raises)
register(__name__, "reshape_of_noncontiguous_copies", ("Tensor.reshape",), _noncontiguous_reshape_copies)
register(__name__, "metadata", ("Tensor.size", "Tensor.dim", "Tensor.numel", "Tensor.nelement", "Tensor.stride",
                                "Tensor.storage_offset", "Tensor.is_contiguous",
                                "Tensor.is_floating_point", "torch.is_floating_point", "torch.numel",
                                "torch.is_tensor"), _metadata)
for _dtype in ("float32", "float16", "bfloat16", "int64", "int32", "bool", "uint8"):
    register(__name__, f"element_size__{_dtype}", ("Tensor.element_size",), _element_size(_dtype))
register(__name__, "item_tolist", ("Tensor.item", "Tensor.tolist"), _item_tolist)
register(__name__, "item_of_many_raises", ("Tensor.item",), _item_many_raises)
register(__name__, "numpy_shares_memory", ("Tensor.numpy",), _numpy)
for _method, _sources in {"float": ("int64", "float16", "bool"), "long": ("float32", "bool"), "int": ("float32",),
                          "bool": ("float32", "int64"), "half": ("float32",), "double": ("float32",),
                          "byte": ("int64",), "bfloat16": ("float32",)}.items():
    for _source in _sources:
        register(__name__, f"{_method}__from_{_source}", (f"Tensor.{_method}",), _conversions(_method, _source))
register(__name__, "type_strings", ("Tensor.type",), _type_string)
register(__name__, "bfloat16_round_trip", ("Tensor.bfloat16", "Tensor.to"), _to_bfloat16_back)


def _stride_is_a_tuple(torch: Any) -> Any:
    x = torch.arange(6.0).reshape(2, 3)
    return {"type": type(x.stride()).__name__, "equals_tuple": x.stride() == (3, 1),
            "transposed": x.t().stride() == (1, 3), "dim": x.stride(-1), "hashable": {x.stride(): 1}[(3, 1)]}


register(__name__, "stride_is_a_tuple", ("Tensor.stride",), _stride_is_a_tuple)
