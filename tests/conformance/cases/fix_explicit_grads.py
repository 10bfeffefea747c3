"""PyTorch's explicit gradient functions MindSpeed-LLM's Mamba context-parallel backward calls
(mindspeed_ms.compat.explicit_grads): torch.ops.aten.silu_backward, torch.nn.grad.conv1d_input / conv1d_weight."""

from __future__ import annotations

from typing import Any

from conformance.harness import case, data


@case("torch.ops.aten.silu_backward")
def silu_backward_values(torch: Any) -> Any:
    x = torch.tensor(data((2, 5, 3), seed=130, low=-6.0, high=6.0))
    grad = torch.tensor(data((2, 5, 3), seed=131))
    return {"float32": torch.ops.aten.silu_backward(grad, x), "first": torch.ops.aten.silu_backward(grad, x)[0],
            "bf16": torch.ops.aten.silu_backward(grad.bfloat16(), x.bfloat16()),
            "float16": torch.ops.aten.silu_backward(grad.half(), x.half())}


@case("torch.nn.grad.conv1d_input", "torch.nn.grad.conv1d_weight")
def conv1d_grads_of_the_mamba_convolution(torch: Any) -> Any:
    # the Mamba conv: depthwise (groups = channels), kernel 4, padding 3, as the field's backward calls it
    x = torch.tensor(data((2, 6, 9), seed=132))
    weight = torch.tensor(data((6, 1, 4), seed=133))
    grad = torch.tensor(data((2, 6, 12), seed=134))
    return {"input": torch.nn.grad.conv1d_input(input_size=x.shape, weight=weight, grad_output=grad, stride=1,
                                                padding=3, dilation=1, groups=6),
            "weight": torch.nn.grad.conv1d_weight(input=x, weight_size=weight.shape, grad_output=grad, stride=1,
                                                  padding=3, dilation=1, groups=6)}


@case("torch.nn.grad.conv1d_input", "torch.nn.grad.conv1d_weight", atol=1e-5)
def conv1d_grads_strided_dilated_grouped(torch: Any) -> Any:
    out = {}
    for name, (channels, out_channels, taps, stride, padding, dilation, groups) in {
            "plain": (4, 6, 3, 1, 0, 1, 1), "strided": (4, 6, 3, 2, 1, 1, 2), "dilated": (6, 3, 2, 1, 2, 2, 3),
            "stride_dilation": (2, 4, 3, 3, 2, 2, 1)}.items():
        x = torch.tensor(data((2, channels, 11), seed=135))
        weight = torch.tensor(data((out_channels, channels // groups, taps), seed=136))
        length = (11 + 2 * padding - dilation * (taps - 1) - 1) // stride + 1
        grad = torch.tensor(data((2, out_channels, length), seed=137))
        out[name] = [torch.nn.grad.conv1d_input(x.shape, weight, grad, stride, padding, dilation, groups),
                     torch.nn.grad.conv1d_weight(x, weight.shape, grad, stride, padding, dilation, groups)]
    half = torch.tensor(data((1, 2, 5), seed=138)).bfloat16()
    out["bf16"] = torch.nn.grad.conv1d_weight(half, (2, 1, 2), torch.ones(1, 2, 4, dtype=torch.bfloat16), groups=2)
    return out
