"""Replacements for megatron-core functions that rely on PyTorch memory semantics MindSpore's CPU lacks."""

from __future__ import annotations

from typing import Any

__all__ = ["attention_mask_func", "calculate_gradients", "calculate_predicted_logits",
           "prepare_gradient_calculation_operands"]


def calculate_gradients(grad_2d: Any, arange_1d: Any, masked_target_1d: Any, softmax_update: Any,
                        grad_input: Any, grad_output: Any) -> Any:
    """Compute the vocab-parallel cross entropy's input gradient without writing through a view.

    Replaces ``VocabParallelCrossEntropy.calculate_gradients``, which subtracts the one-hot target
    in place into ``grad_2d`` (a ``view`` of ``grad_input``) and then scales ``grad_input`` in
    place. On MindSpore's CPU backend a write into a view does not reach its base, so the target
    term silently vanished from the gradient. This version builds the result out of place.

    Args:
        grad_2d: the softmax, shaped ``[tokens, partition_vocab]``.
        arange_1d: ``arange(tokens)`` (unused: the one-hot mask replaces the fancy index).
        masked_target_1d: each token's target index within this partition (0 when elsewhere).
        softmax_update: ``1.0`` where the target lies in this partition, else ``0.0``.
        grad_input: the softmax in its original shape ``[..., partition_vocab]``.
        grad_output: the gradient of the per-token loss, shaped like ``grad_input`` minus its last dim.

    Returns:
        The gradient with respect to the vocab-parallel logits, shaped like ``grad_input``.
    """
    del arange_1d  # the one-hot below selects the same elements as grad_2d[arange_1d, target]
    import torch

    one_hot = torch.nn.functional.one_hot(masked_target_1d, grad_2d.shape[-1]).to(grad_2d.dtype)
    grad_2d = grad_2d - one_hot * softmax_update.unsqueeze(-1)
    return grad_2d.reshape(grad_input.shape) * grad_output.unsqueeze(dim=-1)


def calculate_predicted_logits(vocab_parallel_logits: Any, target: Any, logits_max: Any, vocab_start_index: int,
                               vocab_end_index: int) -> tuple[Any, Any, Any, Any, Any]:
    """``VocabParallelCrossEntropy.calculate_predicted_logits`` in fewer MindSpore kernels, the same values.

    Megatron's function picks each token's logit with an advanced index ``logits_2d[arange, target]`` (on
    MSAdapter: an arange, then a Less, a Select, two Casts and an Add wrapping negative indices, then GatherNd:
    7 kernels at ~250 us each on the CPU backend), zeroes the tokens outside this partition with index
    assignments into fresh tensors (a Select and a copy each), and writes the shifted logits and then their
    exponentials into the caller's tensor (a kernel and a copy each). Here MindSpore's element gather picks the
    same elements (the masked targets are in ``[0, partition)``: no negative index to wrap, so not MSAdapter's
    ``gather``, which wraps them in three more kernels), ``masked_fill`` zeroes the same places out of place in
    tensors only this function holds, the target is not shifted by a partition start of 0 (``x - 0`` is
    ``x``); on the CPU backend the mask, the masked targets and the picked logits are computed on the host
    instead (:mod:`~mindspeed_ms.compat.host_indices`: integer arithmetic and copies, exact); and the
    exponentials of the shifted logits are written into the caller's tensor once. What the caller sees is
    megatron's: ``vocab_parallel_logits`` holds ``exp(logits - max)`` (the same subtraction and exponential, so
    the same bits), the returned ``exp_logits`` is that tensor, and the same five results.

    Args:
        vocab_parallel_logits: ``[..., partition_vocab]`` float logits (overwritten, as megatron overwrites them).
        target: the tokens' global vocabulary ids, ``vocab_parallel_logits``'s shape minus the last dim.
        logits_max: the maximum logit of each token (over the whole vocabulary).
        vocab_start_index: the first vocabulary id of this partition.
        vocab_end_index: one past its last.

    Returns:
        ``(target_mask, masked_target_1d, predicted_logits, sum_exp_logits, exp_logits)`` as megatron's.
    """
    import mindspore
    import torch

    from mindspeed_ms.compat.host_indices import picked_logits, target_operands

    shifted = vocab_parallel_logits - logits_max.unsqueeze(dim=-1)
    operands = target_operands(target, vocab_start_index, vocab_end_index)  # on the host, where it applies
    if operands is None:
        target_mask = (target < vocab_start_index) | (target >= vocab_end_index)
        shifted_target = target if vocab_start_index == 0 else target - vocab_start_index
        operands = target_mask, shifted_target.masked_fill(target_mask, 0)
    target_mask, masked_target = operands
    masked_target_1d = masked_target.view(-1)
    logits_2d = shifted.view(-1, shifted.size()[-1])
    picked = picked_logits(logits_2d, masked_target_1d, target_mask)  # on the host, where it applies
    if picked is None:
        picked = mindspore.mint.gather(logits_2d, 1, masked_target_1d.unsqueeze(-1)).masked_fill(
            target_mask.view(-1, 1), 0.0)
    predicted_logits = picked.view_as(target)
    exp_logits = vocab_parallel_logits
    exp_logits.copy_(torch.exp(shifted))  # megatron: ``-=`` then ``torch.exp(x, out=x)``, the same values
    sum_exp_logits = exp_logits.sum(dim=-1)
    return target_mask, masked_target_1d, predicted_logits, sum_exp_logits, exp_logits


def prepare_gradient_calculation_operands(softmax: Any, target_mask: Any) -> tuple[Any, Any, Any, Any]:
    """``VocabParallelCrossEntropy.prepare_gradient_calculation_operands`` with its row operands built on the host.

    Megatron's function returns the softmax as ``grad_input``, its 2-D view ``grad_2d``, ``arange(tokens)`` and
    ``1.0 - target_mask.view(-1).float()``: on MindSpore's CPU backend a Range, a Cast and a Sub kernel each
    backward (~250 us each) for the row numbers and a 1.0 or 0.0 per token. Here the two are written into new
    tensors on the host (:func:`~mindspeed_ms.compat.host_indices.row_operands`): the same dtypes and values.
    Where that does not apply (a mask that is not bool, memory off the host), megatron's two operations.

    Returns:
        ``(grad_2d, arange_1d, softmax_update, grad_input)`` as megatron's.
    """
    from mindspeed_ms.compat.host_indices import row_operands

    grad_input = softmax
    grad_2d = grad_input.view(-1, softmax.size()[-1])
    rows = grad_2d.size()[0]
    operands = row_operands(target_mask, rows)
    if operands is None:
        import torch

        operands = (torch.arange(start=0, end=rows, device=grad_2d.device), 1.0 - target_mask.view(-1).float())
    arange_1d, softmax_update = operands
    return grad_2d, arange_1d, softmax_update, grad_input


def attention_mask_func(attention_scores: Any, attention_mask: Any) -> Any:
    """Mask the attention scores out of place (``megatron.core.transformer.utils.attention_mask_func``).

    Megatron fills ``-10000.0`` into the masked positions with ``masked_fill_`` on a ``view`` of the
    ``baddbmm`` result, and its softmax uses the returned tensor. On MindSpore's CPU backend that
    write cannot reach a view that autograd records, so the mask was silently dropped: every token
    attended to the future. The value and the gradient (zero at masked positions) are PyTorch's.

    Args:
        attention_scores: ``[b, np, sq, sk]`` scores.
        attention_mask: boolean, True where a position must not be attended to; broadcastable.

    Returns:
        The masked scores (a new tensor).
    """
    return attention_scores.masked_fill(attention_mask, -10000.0)
