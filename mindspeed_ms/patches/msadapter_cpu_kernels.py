"""Built-in provider: faster paths around MindSpore CPU kernels far slower than PyTorch's at megatron's shapes.

Each replacement computes what PyTorch computes (the conformance cases and tests/test_compat_*.py compare it with
real PyTorch); only the kernels differ. Registered only when MindSpore computes on the CPU (see
:mod:`mindspeed_ms.device`). Its name sorts right after ``msadapter_cpu``, so its wraps stack over that provider's
as they did when both were one file. ``MINDSPEED_MS_DISABLE=msadapter_cpu_kernels`` turns the faster paths off and
keeps every correctness fix: MSAdapter's own kernels then run.
"""

from __future__ import annotations

import os
from typing import Any

from mindspeed_ms.versions import MEGATRON_CORE_REQUIREMENT, MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "msadapter_cpu_kernels"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
#: megatron's MLP block, bias-dropout-add and adds of two operands that record a gradient as one host Function
#: each (compat/host_mlp.py, compat/host_bda.py: tiny step after/before 0.836; compat/host_add.py): on unless this is
#: a yes/no value that says no (``0``/``false``/``no``/``off``; not a yes/no value: a SettingError). Opt-in in round
#: 19 until their effect on MindSpore's crash at exit was measured: none (README, round 20).
HOST_BLOCKS = "MINDSPEED_MS_HOST_BLOCKS"
_TENSOR = "mindspore.common.tensor.Tensor"


def register(registry: Any, args: Any) -> None:
    """Register the faster paths, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    host_blocks = host_blocks_on()
    from mindspeed_ms.compat import fast_matmul

    for target in ("msadapter.ops.blas.matmul", f"{_TENSOR}.matmul", f"{_TENSOR}.__matmul__"):
        registry.register(
            target, fast_matmul.transposed_operand_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="megatron's linear GEMMs (input @ weight.t(), grad_output @ weight, grad_output.t() @ input): "
                    "MindSpore's CPU MatMul runs them 2-3x slower than PyTorch in a training step (218 vs 82 ms a "
                    "step at hidden 512), and copies a transposed operand first; float32 products autograd does "
                    "not record go to NumPy's matmul (OpenBLAS) over the memory in place, the others to MatMul "
                    "with its transpose flags")
    registry.register(
        f"{_TENSOR}.t", fast_matmul.transposed_view_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="the matmul above takes MatMul's transpose flag over operand.t(), a second view op (~40 us a "
                "call, two per linear layer and step at the tiny size); the view made by weight.t() names its "
                "tensor, which MatMul reads as it is")
    from mindspeed_ms.compat import bias_add

    for target in (f"{_TENSOR}.__add__", f"{_TENSOR}.add", "msadapter.ops.pointwise.add"):
        registry.register(
            target, bias_add.bias_add_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="activation + bias (megatron's linear and MLP biases) broadcasts through AddExt, 8-25 ms per "
                    "million floats on CPU, and its gradient is a ReduceSum over the leading dimensions (~10 ms); "
                    "BiasAdd over the activation viewed as 2-D adds the same values in ~1.7 ms")
    from mindspeed_ms.compat import fast_contiguous

    registry.register(
        f"{_TENSOR}.contiguous", fast_contiguous.contiguous_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.contiguous of a strided view copies slowly on CPU (3.7 ms for megatron's 32x128x64 query "
                "transpose, 22 ms per million floats of a transposed matrix); NumPy copies the host memory "
                "(~0.4 ms), the gradient passes through")
    for target, first in (("msadapter.ops.blas.bmm", 0), (f"{_TENSOR}.bmm", 0), ("msadapter.ops.blas.baddbmm", 1),
                          (f"{_TENSOR}.baddbmm", 1)):
        registry.register(
            target, fast_contiguous.batched_operands_wrapper(first), kind="wrap", requires=_MSADAPTER,
            purpose="bmm/baddbmm of transposed views (megatron's attention scores and context) make the operands "
                    "contiguous with the slow CPU copy first (~10 ms per call at the mid size, ~1 ms with "
                    "contiguous operands); NumPy copies them")
    from mindspeed_ms.compat import fast_masked_fill

    for target in (f"{_TENSOR}.masked_fill", "msadapter.ops.other.masked_fill"):
        registry.register(
            target, fast_masked_fill.masked_fill_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="masked_fill's gradient is grad * (1 - mask) with the mask broadcast (Cast, Sub, Mul: ~10 ms "
                    "for megatron's causal mask over the mid-size scores); PyTorch's gradient, "
                    "grad.masked_fill(mask, 0), is one MaskedFill")
    _register_norm_kernels(registry)  # after fast_contiguous: its bmm/baddbmm wraps stack over those
    from mindspeed_ms.compat import gelu

    registry.register(
        "msadapter.nn.functional.gelu", gelu.erf_gelu_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.gelu divides by sqrt(2) with a Div kernel and adds a 0-d tensor (broadcast AddExt), each ~10 ms "
                "per million floats on CPU, and autograd differentiates every step: scalar multiplications around "
                "the Erf kernel, PyTorch's backward formula as the gradient (float16/bfloat16 via float32)")
    _register_mlp_kernels(registry)
    _register_special_values(registry)
    _register_backward_kernels(registry)
    _register_attention(registry)
    _register_linear(registry)
    if host_blocks:
        _register_mlp(registry)
        _register_bias_dropout_add(registry)
        _register_two_gradient_add(registry)
    _register_detached_aliases(registry)


def host_blocks_on(environ: Any = None) -> bool:
    """Whether megatron's MLP block, bias-dropout-add and two-gradient adds run as one host Function each
    (:data:`HOST_BLOCKS`, a yes/no variable: unset or empty means yes).

    Raises:
        SettingError: the variable is not a yes/no value (a ``ValueError``).
    """
    from mindspeed_ms.engine.environment import parse_switch

    env = os.environ if environ is None else environ
    return parse_switch(HOST_BLOCKS, env.get(HOST_BLOCKS)) is not False


def _register_special_values(registry: Any) -> None:
    """isnan/isinf/isfinite of a float32 tensor on the host (megatron's loss and gradient-norm checks)."""
    from mindspeed_ms.compat import host_special_values

    for predicate in host_special_values.PREDICATES:
        for target in (f"msadapter.ops.comparison.{predicate}", f"{_TENSOR}.{predicate}"):
            registry.register(
                target, host_special_values.special_value_wrapper(predicate), kind="wrap", requires=_MSADAPTER,
                purpose="megatron checks its loss and each gradient bucket's norm for NaN and infinity every "
                        "micro-batch (validate_result(torch.isnan), torch.isinf): an IsNan/IsInf kernel and our "
                        "conformance wrappers, ~180-240 us a call in a step; NumPy's IEEE predicate over the host "
                        "memory into a new bool tensor, ~40 us")


def _register_linear(registry: Any) -> None:
    """megatron's linear layers' plain case as one host Function."""
    from mindspeed_ms.compat import host_linear

    registry.register(
        host_linear.TARGET, host_linear.linear_wrapper, kind="wrap", requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="megatron's linear Function goes through ~30 torch calls of wrappers a layer (the host GEMM, "
                "contiguous, view, t, bias add, column sum, custom_fwd/bwd, the Function checks); its plain case "
                "(no sequence parallel, no dgrad all-reduce, no fusion, no deferral, float32) computes the same "
                "GEMMs in one Function of ours")


def _register_mlp(registry: Any) -> None:
    """megatron's MLP block (fc1, bias, gelu, fc2) as one host Function."""
    from mindspeed_ms.compat import host_mlp

    registry.register(
        f"{host_mlp.MODULE}.MLP.forward", host_mlp.forward_wrapper, kind="wrap",
        requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="megatron's MLP is four autograd nodes a layer on MindSpore's CPU backend (fc1, the bias add, gelu, "
                "fc2), each with its forward and backward dispatch (~1.5 ms forward and backward at the tiny size, "
                "the arithmetic ~0.2 ms); its plain case (erf gelu, no fusion, no gated unit, tensor-parallel size "
                "1, float32) computes the same host GEMMs and gelu kernels in one Function of ours")


def _register_bias_dropout_add(registry: Any) -> None:
    """megatron's bias-dropout-add with dropout off as one host Function."""
    from mindspeed_ms.compat import host_bda

    registry.register(
        host_bda.TARGET, host_bda.bias_dropout_add_wrapper, kind="wrap",
        requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="megatron's residual adds (x + bias, dropout, residual + out; twice a layer) are four autograd nodes "
                "a call on MindSpore's CPU backend with dropout off (the bias add, the add's two views, the add); "
                "one Function of ours computes the same float32 additions over the host memory")


def _register_two_gradient_add(registry: Any) -> None:
    """``a + b`` where both operands record a gradient as one host Function (after :mod:`.bias_add`'s wrap: over it)."""
    from mindspeed_ms.compat import host_add

    for target in (f"{_TENSOR}.__add__", f"{_TENSOR}.add", "msadapter.ops.pointwise.add"):
        registry.register(
            target, host_add.add_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="an add whose operands both require a gradient (megatron's word + position embeddings) is "
                    "three autograd nodes on MindSpore's CPU backend (each operand's view, so that the engine does "
                    "not clone the gradient with a kernel the CPU lacks, and the add); one Function of ours computes "
                    "the same float32 sum over the host memory and hands each operand a copy of the gradient")


def _register_attention(registry: Any) -> None:
    """megatron's core attention (local spec) as one host Function."""
    from mindspeed_ms.compat import host_attention

    registry.register(
        f"{host_attention.MODULE}.DotProductAttention.forward", host_attention.forward_wrapper, kind="wrap",
        requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="megatron's core attention (baddbmm, masked_fill, softmax, dropout off, bmm, the reshapes and the "
                "context's permute) is ~10 kernels and ~15 view ops forward and ~25 kernels backward per layer on "
                "CPU (PyNative's ~250 us each at the tiny size; BatchMatMul ~12 ms a step at the mid size, "
                "PyTorch's bmm ~5 ms); one Function computing PyTorch's arithmetic in NumPy/OpenBLAS over the host "
                "memory, forward and backward")
    from mindspeed_ms.compat import host_rope

    # megatron's attention module imported the function by name: both names
    for target in (host_rope.MODULE, "megatron.core.transformer.attention"):
        registry.register(
            f"{target}.apply_rotary_pos_emb", host_rope.apply_wrapper, kind="wrap",
            requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
            purpose="megatron's unfused rotary embedding (the field's rope configs) is ~10 kernels forward and ~10 "
                    "backward per call, twice a layer, and gave attention new q and k to copy; one host Function "
                    "(PyTorch's float32 products and sum, the framework's cos/sin once per freqs) whose results "
                    "attention's fused Function takes, applying its backward into the QKV gradient")


def _register_mlp_kernels(registry: Any) -> None:
    """The mid size's linear/MLP side, gradient norm and optimizer arithmetic (host paths over NumPy)."""
    from mindspeed_ms.compat import host_norm

    registry.register(
        "msadapter.ops.reduction.norm", host_norm.norm_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.norm over a DDP bucket (megatron's gradient norm) runs Mul + ReduceSum + Sqrt over a "
                "temporary of the bucket's size, 15-23 ms for 6.4M floats on CPU (PyTorch ~4 ms); float32 rows "
                "summed in float64 on the host: ~3 ms, never further from the exact norm than PyTorch's")
    registry.register(
        "megatron.core.optimizer.clip_grads.l2_norm_impl", host_norm.l2_norm_wrapper, kind="wrap",
        requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="megatron's local grad norm (no Apex) builds a 0-d tensor per norm and a tensor of them, which "
                "MindSpore fills by reading each back; the same float32 norms computed on the host as plain values, "
                "one tensor for the result")
    from mindspeed_ms.compat import bias_add

    registry.register(
        f"{_TENSOR}.sum", bias_add.column_sum_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="grad_output.sum(dim=0), megatron's bias gradient in its linear layers' backward, is a ReduceSum over "
                "the rows: 1-16 ms for [512, 2048] on CPU; NumPy sums the columns of the host memory in float64 "
                "(~0.6 ms), rounded once")


def _register_norm_kernels(registry: Any) -> None:
    """Layer norm and the attention softmax on the host (NumPy), forward and backward."""
    from mindspeed_ms.compat import host_layer_norm

    registry.register(
        "msadapter.nn.functional.layer_norm", host_layer_norm.layer_norm_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="LayerNormGrad takes ~7 ms on CPU for megatron's [128, 4, 512] activations (PyTorch: 0.3 ms forward "
                "and backward); PyTorch's layer-norm arithmetic in NumPy over the host memory takes ~1 ms forward, "
                "~2-3 ms backward (weight and bias gradient sums in float64)")
    registry.register(  # named, not imported: the module is a target (imported when msadapter_nn needs it)
        "mindspeed_ms.compat.host_rms_norm.on_host", "mindspeed_ms.compat.host_rms_norm:always", requires=_MSADAPTER,
        purpose="torch.nn.RMSNorm (ours, compat/msadapter_nn.py: MSAdapter has none) of float32 is six MindSpore "
                "kernels forward (pow, mean, add, rsqrt, mul, mul) and their gradients backward: 27% of the forward of "
                "Megatron-LM's pretrain_gpt.py at the tiny llama layout; one host Function (compat/host_rms_norm.py)")
    from mindspeed_ms.compat import host_silu

    registry.register(
        "msadapter.nn.functional.silu", host_silu.silu_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.silu on CPU is input * sigmoid(input), two MindSpore kernels rounded twice, and their gradients' "
                "kernels backward (megatron's SwiGLU: with its mul 21% of Megatron-LM's tiny llama forward); "
                "PyTorch's x / (1 + exp(-x)) and its backward formula over the host memory, one Function")
    from mindspeed_ms.compat import host_softmax

    for target in ("msadapter.nn.functional.softmax", "msadapter.ops.pointwise.softmax", f"{_TENSOR}.softmax"):
        registry.register(
            target, host_softmax.softmax_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="the attention softmax over megatron's [4, 8, 128, 128] scores: MindSpore's CPU Softmax ~3-8 ms "
                    "and SoftmaxGrad ~6-14 ms (a broadcasting Sub), PyTorch ~1 ms for both; PyTorch's arithmetic "
                    "in NumPy over the host memory, ~1-2 ms each")


def _register_backward_kernels(registry: Any) -> None:
    """The mid size's backward: gradients MindSpore's bprops assemble from full-size pieces, placed on the host."""
    from mindspeed_ms.compat import host_split

    for target in ("msadapter.ops.array.split", f"{_TENSOR}.split"):
        registry.register(
            target, host_split.split_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="the gradient of torch.split's pieces (megatron's query/key/value out of the fused QKV output) "
                    "is one StridedSliceGrad per piece, a zero tensor of the whole input's size each, added by "
                    "the autograd engine: ~25 ms per layer at the mid size on CPU (PyTorch's cat: ~1 ms); the "
                    "pieces' gradients written side by side into one tensor on the host")
    from mindspeed_ms.compat import host_cross_entropy

    registry.register(
        "megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.calculate_gradients",
        host_cross_entropy.calculate_gradients_wrapper, kind="wrap",
        requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
        purpose="the vocab-parallel cross entropy's input gradient (megatron_core's out-of-place replacement: "
                "one_hot, a cast and three broadcasting kernels, ~2-3 ms each for the mid size's [512, 128] "
                "logits on CPU); PyTorch's subtraction at the targets and multiplication in NumPy, the same bits")
    for method, wrapper, what in (
            ("calculate_logits_max", host_cross_entropy.logits_max_wrapper, "the row maxima (a ReduceMax kernel)"),
            ("calculate_predicted_logits", host_cross_entropy.predicted_logits_wrapper,
             "the maximum subtracted, the target logits picked, the exponentials written in place and summed "
             "(Sub, Exp, a copy and ReduceSum kernels; MindSpore's CPU Exp up to 103 ulps from PyTorch's)"),
            ("calculate_cross_entropy_loss", host_cross_entropy.cross_entropy_loss_wrapper,
             "log(sum) - picked and the in-place division by the sums (Log and Sub kernels)")):
        registry.register(
            f"megatron.core.tensor_parallel.cross_entropy.VocabParallelCrossEntropy.{method}", wrapper, kind="wrap",
            requires=(MEGATRON_CORE_REQUIREMENT, *_MSADAPTER),
            purpose=f"the vocab-parallel cross entropy's forward of float32 logits: {what}, ~4.5 ms a micro-batch "
                    "at the field's [32, 2, 4096] logits on CPU in all; PyTorch's float32 steps in NumPy (exp and "
                    "log within 2 ulps of PyTorch's), ~0.35 ms")
    from mindspeed_ms.compat import host_cast

    registry.register(
        f"{_TENSOR}.to", host_cast.to_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="MindSpore's CPU Cast costs ~360 us a call at any size (its Mul ~25 us): megatron's loss_func casts "
                "every micro-batch (loss[1].clone().detach().to(torch.int)); t.to(dtype) outside autograd's record "
                "as NumPy's C conversion into a new tensor, PyTorch's values")
    registry.register(  # named, not imported: the switch's module is a target
        "mindspeed_ms.compat.host_cast_switch.on_host", "mindspeed_ms.compat.host_cast_switch:always",
        requires=_MSADAPTER,
        purpose="x /= n with n an integer tensor (megatron's output_tensor /= num_tokens, every micro-batch): "
                "MindSpore's Div casts n with its ~360 us Cast kernel; n converted on the host first, as PyTorch's "
                "type promotion converts it (compat/inplace_ops.div_)")
    from mindspeed_ms.compat import host_seed

    registry.register(
        "msadapter.autograd._make_grads", host_seed.make_grads_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="loss.backward() seeds the backward with ones_like(loss): a OnesLike kernel every backward on CPU; "
                "a scalar float32 loss's 1.0 written on the host instead")


def _register_detached_aliases(registry: Any) -> None:
    """Mark what ``Tensor.data``/``detach()`` return (mindspeed_ms.compat.inplace: a value that requires grad written
    into such an alias of a view is PyTorch's host write, not the InPlaceOnViewError of a view of a buffer)."""
    from mindspeed_ms.compat import inplace

    registry.register(
        f"{_TENSOR}.data", inplace.data_property(), requires=_MSADAPTER,
        purpose="Tensor.data is MindSpore's getter; its result is marked as an alias outside autograd, so writing a "
                "value that requires grad into it (megatron's distributed optimizer reloading its main params) is "
                "the host write PyTorch's result calls for")
    registry.register(
        f"{_TENSOR}.detach", inplace.detach_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.detach()'s result is marked as an alias outside autograd (see Tensor.data)")
