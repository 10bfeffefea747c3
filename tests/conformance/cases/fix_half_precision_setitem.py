"""``t[mask, :] = 0.0`` on a half-precision tensor that requires grad: megatron's ``VocabParallelEmbedding`` under
tensor parallelism (``--bf16 --tensor-model-parallel-size 2``) zeroes the rows of tokens outside this rank's part of
the vocabulary in the embedding output, which autograd records. MindSpore's assignment (TensorScatterUpdate) has
no bfloat16 CPU kernel: it raised TypeError in the first forward step.
"""

from __future__ import annotations

from typing import Any

from conformance.samples import register, tensor


def _embedding(dtype_name: str) -> Any:
    def run(torch: Any) -> Any:
        dtype = getattr(torch, dtype_name)
        weight = tensor(torch, (16, 8), seed=1).to(dtype).requires_grad_(True)
        ids = torch.tensor([[0, 3, 9, 15], [4, 12, 2, 7]])
        mask = (ids < 4) | (ids >= 12)
        masked = ids.clone() - 4
        masked[mask] = 0
        out = torch.nn.functional.embedding(masked, weight)
        out[mask, :] = 0.0
        (out.float() * tensor(torch, (2, 4, 8), seed=2)).sum().backward()
        return {"out": out, "dtype": out.dtype, "grad": weight.grad}
    return run


def _scaled(dtype_name: str) -> Any:
    def run(torch: Any) -> Any:
        dtype = getattr(torch, dtype_name)
        x = tensor(torch, (4, 6), seed=3).to(dtype).requires_grad_(True)
        y = x * 2
        y[torch.tensor([True, False, True, False])] = tensor(torch, (6,), seed=4).to(dtype)
        y[1:3, 2] = 5.0
        (y.float() * tensor(torch, (4, 6), seed=5)).sum().backward()
        return {"y": y, "dtype": y.dtype, "grad": x.grad}
    return run


for _dtype in ("bfloat16", "float16"):
    register(__name__, f"masked_embedding_rows_{_dtype}", ("Tensor.__setitem__", "torch.nn.functional.embedding",
                                                           "Tensor.backward"), _embedding(_dtype), exact=True)
    register(__name__, f"setitem_requires_grad_{_dtype}", ("Tensor.__setitem__", "Tensor.backward"), _scaled(_dtype),
             exact=True)


def _leaf(dtype_name: str) -> Any:
    def run(torch: Any) -> Any:
        x = tensor(torch, (4, 6), seed=3).to(getattr(torch, dtype_name)).requires_grad_(True)
        x[0] = 1.0  # PyTorch: RuntimeError (a leaf that requires grad, in place)
        return x
    return run


for _dtype in ("bfloat16", "float16"):
    register(__name__, f"setitem_leaf_requires_grad_{_dtype}", ("Tensor.__setitem__",), _leaf(_dtype), exact=True)


def _view(torch: Any) -> Any:
    x = tensor(torch, (4, 6), seed=3).to(torch.bfloat16).requires_grad_(True)
    y = x * 2
    flat = y.view(24)
    flat[flat > 0] = 0.0  # PyTorch writes through the view into y; ours: InPlaceOnViewError (no silent lost write)
    (y.float() * tensor(torch, (4, 6), seed=5)).sum().backward()
    return {"y": y, "grad": x.grad}


register(__name__, "setitem_view_requires_grad_bfloat16", ("Tensor.__setitem__", "Tensor.backward"), _view, exact=True)
