"""Calls PyTorch refuses, for the most called ops: ours must refuse too (an error, not a result), and the failure
must leave autograd working (the runner checks after every error)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register, tensor

ERRORS: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "view_wrong_size": (("Tensor.view",), lambda torch: tensor(torch, (2, 3)).view(4, 2)),
    "reshape_wrong_size": (("Tensor.reshape",), lambda torch: tensor(torch, (2, 3)).reshape(5)),
    "view_two_minus_one": (("Tensor.view",), lambda torch: tensor(torch, (2, 3)).view(-1, -1)),
    "size_dim_out_of_range": (("Tensor.size",), lambda torch: tensor(torch, (2, 3)).size(2)),
    "transpose_dim_out_of_range": (("Tensor.transpose",), lambda torch: tensor(torch, (2, 3)).transpose(0, 2)),
    "t_of_3d": (("Tensor.t",), lambda torch: tensor(torch, (2, 3, 4)).t()),
    "permute_wrong_rank": (("Tensor.permute",), lambda torch: tensor(torch, (2, 3)).permute(0, 1, 2)),
    "unsqueeze_out_of_range": (("Tensor.unsqueeze",), lambda torch: tensor(torch, (2, 3)).unsqueeze(4)),
    "cat_mismatched": (("torch.cat",), lambda torch: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)])),
    "cat_empty_list": (("torch.cat",), lambda torch: torch.cat([])),
    "add_not_broadcastable": (("Tensor.__add__",), lambda torch: tensor(torch, (2, 3)) + tensor(torch, (3, 2))),
    "mul_not_broadcastable": (("Tensor.__mul__",), lambda torch: tensor(torch, (4,)) * tensor(torch, (3,))),
    "iadd_would_broadcast_self": (("Tensor.__iadd__",), lambda torch: _iadd_grow(torch)),
    "copy_not_broadcastable": (("Tensor.copy_",), lambda torch: torch.zeros(2, 3).copy_(torch.ones(3, 2))),
    "expand_wrong": (("Tensor.expand",), lambda torch: tensor(torch, (2, 3)).expand(4, 3)),
    "narrow_out_of_range": (("Tensor.narrow",), lambda torch: tensor(torch, (2, 3)).narrow(1, 2, 2)),
    "select_out_of_range": (("Tensor.select",), lambda torch: tensor(torch, (2, 3)).select(0, 2)),
    "split_sizes_wrong": (("torch.split",), lambda torch: torch.split(tensor(torch, (5,)), [2, 2])),
    "chunk_zero": (("torch.chunk",), lambda torch: torch.chunk(tensor(torch, (4,)), 0)),
    "index_select_out_of_range": (("Tensor.index_select",),
                                  lambda torch: tensor(torch, (2, 3)).index_select(0, torch.tensor([2]))),
    "index_select_float_index": (("Tensor.index_select",),
                                 lambda torch: tensor(torch, (2, 3)).index_select(0, torch.tensor([0.0]))),
    "embedding_out_of_range": (("torch.nn.functional.embedding",),
                               lambda torch: torch.nn.functional.embedding(torch.tensor([4]), tensor(torch, (3, 2)))),
    "masked_fill_non_bool_mask": (("Tensor.masked_fill_",),
                                  lambda torch: torch.zeros(3).masked_fill_(torch.tensor([1, 0, 1]), 1.0)),
    "setitem_shape_mismatch": (("Tensor.__setitem__",), lambda torch: _setitem_mismatch(torch)),
    "getitem_too_many_indices": (("Tensor.__getitem__",), lambda torch: tensor(torch, (2, 3))[0, 0, 0]),
    "getitem_index_out_of_range_tensor": (("Tensor.__getitem__",),
                                          lambda torch: tensor(torch, (2, 3))[torch.tensor([3])]),
    "linear_shape_mismatch": (("torch.nn.functional.linear",),
                              lambda torch: torch.nn.functional.linear(tensor(torch, (2, 3)), tensor(torch, (4, 2)))),
    "softmax_dim_out_of_range": (("torch.nn.functional.softmax",),
                                 lambda torch: torch.nn.functional.softmax(tensor(torch, (2, 3)), dim=2)),
    "layer_norm_wrong_shape": (("torch.nn.functional.layer_norm",),
                               lambda torch: torch.nn.functional.layer_norm(tensor(torch, (2, 3)), (4,))),
    "bmm_wrong_rank": (("torch.bmm",), lambda torch: torch.bmm(tensor(torch, (2, 3)), tensor(torch, (3, 2)))),
    "sum_dim_out_of_range": (("Tensor.sum",), lambda torch: tensor(torch, (2, 3)).sum(dim=3)),
    "arange_bad_step": (("torch.arange",), lambda torch: torch.arange(0, 5, 0)),
    "zeros_negative": (("torch.zeros",), lambda torch: torch.zeros(-1)),
    "tensor_ragged": (("torch.tensor",), lambda torch: torch.tensor([[1, 2], [3]])),
    "item_of_empty": (("Tensor.item",), lambda torch: torch.zeros(0).item()),
    "to_bad_dtype_arg": (("Tensor.to",), lambda torch: tensor(torch, (2,)).to("not-a-device")),
}


def _iadd_grow(torch: Any) -> Any:
    x = tensor(torch, (1, 3))
    x += tensor(torch, (2, 3), seed=1)
    return x


def _setitem_mismatch(torch: Any) -> Any:
    x = torch.zeros(2, 3)
    x[0] = torch.ones(4)
    return x


for _name, (_ops, _call) in ERRORS.items():
    register(__name__, _name, _ops, _call)


def _autograd_after_errors(torch: Any) -> Any:
    """Several refused calls in a row, then a backward: it must still work."""
    for bad in (lambda: torch.zeros(2, 3).view(4, 2), lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)]),
                lambda: tensor(torch, (2, 3)) @ tensor(torch, (2, 3))):
        try:
            bad()
        except Exception:  # noqa: BLE001  (the refusal is the point; what follows is checked)
            pass
    x = tensor(torch, (3,), requires_grad=True)
    (x * x).sum().backward()
    return x.grad


register(__name__, "autograd_works_after_refused_calls", ("Tensor.backward",), _autograd_after_errors)


def _autograd_right_after_each_refusal(torch: Any) -> Any:
    """A leaf made before the refused call: the ops right after it (no module call, no new leaf in between) must
    be recorded (MindSpore's executor switches its grad flag off when an op fails)."""
    w = tensor(torch, (2, 3), requires_grad=True)
    grads = {}
    conversions = {"reshape_str": lambda torch: tensor(torch, (3,)).reshape("a"),
                   "unsqueeze_str": lambda torch: tensor(torch, (3,)).unsqueeze("a"),
                   "mul_str": lambda torch: tensor(torch, (3,)) * "a"}
    for name, call in [*((name, call) for name, (_, call) in ERRORS.items()), *conversions.items()]:
        try:
            call(torch)
        except Exception:  # noqa: BLE001  (every refusal of the table, whatever its class)
            y = (w * w).sum()
            y.backward()
            grads[name] = w.grad.clone()
            w.grad = None
    return grads


register(__name__, "autograd_right_after_each_refusal", ("Tensor.backward",), _autograd_right_after_each_refusal)
