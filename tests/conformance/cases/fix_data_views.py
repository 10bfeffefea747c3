"""``Tensor.data = view``: host reads of a tensor set to a view of a buffer (mindspeed_ms.compat.inplace's
``data_property``). megatron's distributed optimizer and DDP map every parameter into a flat buffer so
(``param.data = buffer[start:end].view(shape)``); MindSpore's setter kept the view for kernels, but ``tolist()``,
``numpy()``, ``item()``, pickling, ``deepcopy`` and ``torch.save`` of the tensor read the buffer from offset 0 (and
densely: a transposed view read untransposed)."""

from __future__ import annotations

import copy
import io
import pickle
from typing import Any

from conformance.harness import case


def _mapped(torch: Any) -> tuple[Any, Any]:
    buffer = torch.arange(12, dtype=torch.float32) / 4
    param = torch.nn.Parameter(torch.zeros(2, 2))
    param.data = buffer[4:8].view(2, 2)
    return buffer, param


@case("Tensor.data", exact=True)
def parameter_set_to_a_view_reads_the_view(torch: Any) -> Any:
    _, param = _mapped(torch)
    saved = io.BytesIO()
    torch.save({"p": param.detach()}, saved)
    saved.seek(0)
    return {"tolist": param.tolist(), "data_tolist": param.data.tolist(), "numpy": param.detach().numpy().tolist(),
            "item": param.data[1, 0].item(), "float": float(param.data[0, 1]), "cpu": param.data.cpu().tolist(),
            "equal": torch.equal(param.data, torch.tensor([[1.0, 1.25], [1.5, 1.75]])),
            "pickle": pickle.loads(pickle.dumps(param.data)).tolist(), "deepcopy": copy.deepcopy(param).tolist(),
            "saved": torch.load(saved, weights_only=False)["p"].tolist(), "kernel": param * 1,
            "offset": param.storage_offset(), "requires_grad": param.requires_grad,
            "is_parameter": isinstance(param, torch.nn.Parameter)}


@case("Tensor.data", exact=True)
def tensor_set_to_a_view_aliases_both_ways(torch: Any) -> Any:
    buffer, param = _mapped(torch)
    buffer.copy_(torch.arange(12, dtype=torch.float32) * 10)  # a write to the buffer is seen through the parameter
    seen = param.tolist()
    with torch.no_grad():
        param.mul_(2)  # and a write through the parameter lands in the buffer
    transposed = torch.zeros(2, 2)
    transposed.data = torch.arange(4, dtype=torch.float32).view(2, 2).t()  # offset 0, not contiguous
    strided = torch.zeros(2)
    strided.data = torch.arange(8, dtype=torch.float32).view(4, 2)[1:3, 1]  # offset 3, stride 2
    reshaped = torch.nn.Parameter(torch.zeros(2, 2))
    reshaped.data = torch.ones(3, dtype=torch.float64)  # a whole tensor of another shape and dtype
    return {"seen": seen, "buffer": buffer.tolist(), "transposed": transposed.tolist(),
            "transposed_kernel": transposed * 1, "strided": strided.tolist(), "strided_kernel": strided + 0,
            "reshaped": [reshaped.tolist(), list(reshaped.shape), reshaped.dtype == torch.float64]}
