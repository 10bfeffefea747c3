"""``Tensor.put`` / ``Tensor.put_`` as PyTorch (scripts/opinfo_sweep.py; cases in
tests/conformance/cases/fix_tensor_put.py).

Measured on MindSpore 2.7.1 (CPU) + MSAdapter 0.5.0b1 against torch 2.13: ``x.put(index, source)`` does not exist
(AttributeError) and ``x.put_(index, source)`` raises "There is no branch to go function tensor_put_!" for every
input. PyTorch writes ``source`` into ``x`` seen as flat, at ``index`` (negative counts from the end; ``accumulate``
adds, repeated indices included). Here it is ``index_put`` on ``x.reshape(-1)``, recorded by autograd; an index out
of range raises IndexError, a non-int64 index or a ``source`` of another dtype or size RuntimeError, as PyTorch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["put", "put_"]


def _check(self: Any, index: Any, source: Any) -> Any:
    """``index`` flat, non-negative, checked as PyTorch checks it."""
    import msadapter

    from mindspeed_ms.compat.errors import TorchRefusalError

    if index.dtype != msadapter.int64:
        raise TorchRefusalError("Tensor.put", f"put_(): Expected a long tensor for index, but got {index.dtype}")
    if source.dtype != self.dtype:
        raise TorchRefusalError("Tensor.put", f"put_(): self and source expected to have the same dtype, but got "
                                              f"self.dtype = {self.dtype} and source.dtype = {source.dtype}")
    if index.numel() != source.numel():
        raise TorchRefusalError("Tensor.put", f"put_(): Expected source and index to have the same number of "
                                              f"elements, but got source.numel() = {source.numel()}, "
                                              f"index.numel() = {index.numel()}")
    numel = self.numel()
    flat = index.reshape(-1)
    if flat.numel() == 0:
        return flat
    low, high = int(flat.min().item()), int(flat.max().item())
    for value in (low, high):
        if not -numel <= value < numel:
            raise IndexError(f"out of range: tried to access index {value} on a tensor of {numel} elements.")
    return msadapter.where(flat < 0, flat + numel, flat)


def put(self: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``Tensor.put(index, source, accumulate=False)``: a copy of ``self`` with ``source`` written at ``index``."""
    flat_index = _check(self, index, source)
    if flat_index.numel() == 0:
        return self.clone()
    flat = self.reshape(-1)
    return flat.index_put((flat_index,), source.reshape(-1), bool(accumulate)).reshape(self.shape)


def put_(self: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``Tensor.put_(index, source, accumulate=False)``: ``self`` with ``source`` written at ``index``."""
    result = put(self, index, source, accumulate)
    self.copy_(result)
    return self
