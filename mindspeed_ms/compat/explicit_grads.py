"""PyTorch's explicit gradient functions that MSAdapter lacks: ``torch.ops.aten.silu_backward``,
``torch.nn.grad.conv1d_input`` and ``torch.nn.grad.conv1d_weight``.

MindSpeed-LLM's Mamba context-parallel convolution (``tasks/models/ssm/state_space_context_parallel.py``) calls the
three in its ``backward``; under MSAdapter ``torch.ops.aten`` is None and ``torch.nn.grad`` does not exist
(AttributeError). Each is written out from the convolution's definition with matmuls over the kernel taps (no
nested autograd inside a backward), for any stride, padding, dilation and groups; compared with real PyTorch by
tests/conformance/cases/fix_explicit_grads.py. float16/bfloat16 are computed in float32 and rounded once.
"""

from __future__ import annotations

from typing import Any

__all__ = ["silu_backward", "conv1d_input", "conv1d_weight", "AtenFunctions", "NnGrad"]


def _single(value: Any) -> int:
    return int(value[0] if isinstance(value, (tuple, list)) else value)


def _widened(*tensors: Any) -> tuple[Any, ...]:
    import mindspore

    half = (mindspore.float16, mindspore.bfloat16)
    return tuple(t.float() if t.dtype in half else t for t in tensors)


def silu_backward(grad_output: Any, self: Any) -> Any:
    """``aten.silu_backward``: ``grad_output * s * (1 + x * (1 - s))`` with ``s = sigmoid(x)``."""
    import msadapter

    grad, x = _widened(grad_output, self)
    s = msadapter.sigmoid(x)
    result = grad * s * (1.0 + x * (1.0 - s))
    return result.to(grad_output.dtype) if result.dtype != grad_output.dtype else result


def _check(name: str, grad_output: Any, channels: int, out_channels: int, groups: int) -> None:
    if len(grad_output.shape) != 3:
        raise RuntimeError(f"{name}: expected a 3-d grad_output (batch, channels, length), got {len(grad_output.shape)}"
                           f" dims")
    if groups < 1 or channels % groups or out_channels % groups:
        raise RuntimeError(f"{name}: groups={groups} must divide the input channels ({channels}) and the output "
                           f"channels ({out_channels})")


def _spread(values: Any, stride: int, length: int, offset: int, total: int) -> Any:
    """``values`` (..., L) placed at ``offset + t * stride`` of a zero row of ``total`` (the rest zeros)."""
    import msadapter
    import msadapter.nn.functional as F

    if stride > 1:
        zeros = msadapter.zeros(*values.shape, stride - 1, dtype=values.dtype)
        values = msadapter.cat((values.unsqueeze(-1), zeros), -1).reshape(*values.shape[:-1], length * stride)
        values = values.narrow(-1, 0, (length - 1) * stride + 1)
    width = int(values.shape[-1])
    return F.pad(values, (offset, total - offset - width))


def conv1d_input(input_size: Any, weight: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1) -> Any:
    """``torch.nn.grad.conv1d_input``: the gradient of ``conv1d`` with respect to an input of ``input_size``."""
    import msadapter

    stride, padding, dilation = _single(stride), _single(padding), _single(dilation)
    batch, channels, length = (int(n) for n in input_size)
    out_channels, per_group, taps = (int(n) for n in weight.shape)
    _check("conv1d_input", grad_output, channels, out_channels, groups)
    grad, kernel = _widened(grad_output, weight)
    out_length, padded = int(grad.shape[-1]), length + 2 * padding
    grad = grad.reshape(batch, groups, out_channels // groups, out_length)
    kernel = kernel.reshape(groups, out_channels // groups, per_group, taps)
    total = msadapter.zeros(batch, groups, per_group, padded, dtype=grad.dtype)
    for tap in range(taps):
        # contribution[b, g, i, t] = sum_o kernel[g, o, i, tap] * grad[b, g, o, t]
        contribution = msadapter.matmul(kernel[..., tap].transpose(-2, -1), grad)
        total = total + _spread(contribution, stride, out_length, tap * dilation, padded)
    result = total.reshape(batch, channels, padded).narrow(-1, padding, length)
    return result.to(grad_output.dtype) if result.dtype != grad_output.dtype else result


def conv1d_weight(input: Any, weight_size: Any, grad_output: Any, stride: Any = 1, padding: Any = 0,
                  dilation: Any = 1, groups: int = 1) -> Any:
    """``torch.nn.grad.conv1d_weight``: the gradient of ``conv1d`` with respect to a weight of ``weight_size``."""
    import msadapter
    import msadapter.nn.functional as F

    stride, padding, dilation = _single(stride), _single(padding), _single(dilation)
    out_channels, per_group, taps = (int(n) for n in weight_size)
    batch, channels = int(input.shape[0]), int(input.shape[1])
    _check("conv1d_weight", grad_output, channels, out_channels, groups)
    x, grad = _widened(input, grad_output)
    out_length = int(grad.shape[-1])
    x = F.pad(x, (padding, padding)) if padding else x
    grad = grad.reshape(batch, groups, out_channels // groups, out_length)
    span = (out_length - 1) * stride + 1
    columns = []
    for tap in range(taps):
        window = x.narrow(-1, tap * dilation, span)
        if stride > 1:
            window = F.pad(window, (0, out_length * stride - span)).reshape(batch, channels, out_length, stride)
            window = window[..., 0]
        window = window.reshape(batch, groups, per_group, out_length)
        # column[g, o, i] = sum_{b, t} grad[b, g, o, t] * window[b, g, i, t]
        columns.append(msadapter.matmul(grad, window.transpose(-2, -1)).sum(0).reshape(out_channels, per_group))
    result = msadapter.stack(columns, -1)
    return result.to(grad_output.dtype) if result.dtype != grad_output.dtype else result


class AtenFunctions:
    """``torch.ops.aten`` under MSAdapter (None there): the aten functions the field calls."""

    silu_backward = staticmethod(silu_backward)


class NnGrad:
    """``torch.nn.grad`` (absent under MSAdapter)."""

    conv1d_input = staticmethod(conv1d_input)
    conv1d_weight = staticmethod(conv1d_weight)
