"""Built-in provider: MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

from ._msadapter_absent import register_absent
from ._msadapter_conformance import register_conformance, register_refusal_classes
from ._msadapter_integer_results import register_integer_results

name = "msadapter"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)

#: Where the grad flag a failing op cleared is switched back on (mindspeed_ms.compat.msadapter.restore_grad_flag).
_GRAD_FLAG_ENTRIES = (
    "msadapter.nn.modules.module.Module.__call__",
    "msadapter.autograd.backward",
    "msadapter.autograd.grad",
    "msadapter.autograd.grad_mode.enable_grad.__enter__",
    "msadapter.autograd.grad_mode.set_grad_enabled.__init__",
    "msadapter._C.is_grad_enabled",
)


def register(registry: Any, args: Any) -> None:
    """Register the device-independent MSAdapter patches.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    register_conformance(registry)
    register_integer_results(registry)
    _register_grad_dtype(registry)
    _register_function_grads(registry)
    _register_autograd_graph(registry)
    register_refusal_classes(registry)
    register_absent(registry)
    from mindspeed_ms.compat import msadapter as compat
    from mindspeed_ms.compat import optim, sgd, zero_grad

    registry.register(
        "msadapter.nn.RMSNorm", "mindspeed_ms.compat.msadapter_nn:RMSNorm", create_dummy=True, requires=_MSADAPTER,
        purpose="torch.nn.RMSNorm is missing from MSAdapter: megatron's WrappedTorchNorm builds it for --normalization "
                "RMSNorm with the local layer spec (Megatron-LM's pretrain_gpt.py stopped at model construction)")
    registry.register(
        "msadapter.set_flush_denormal", "mindspeed_ms.compat.fp_mode:set_flush_denormal", create_dummy=True,
        requires=_MSADAPTER,
        purpose="torch.set_flush_denormal is missing from MSAdapter (AttributeError); PyTorch's sets or clears "
                "flush-to-zero and denormals-are-zero on the calling thread and returns True on x86_64")
    registry.register(
        "msadapter._amp_foreach_non_finite_check_and_unscale_",
        "mindspeed_ms.compat.amp_scaling:foreach_non_finite_check_and_unscale_", requires=_MSADAPTER,
        purpose="never reports an inf/nan gradient (it rebinds its local found_inf): megatron's --fp16 optimizer "
                "stepped with inf/nan gradients on an overflow and never lowered the loss scale, silently")
    registry.register(
        "msadapter._amp_update_scale_", "mindspeed_ms.compat.amp_scaling:update_scale_", create_dummy=True,
        requires=_MSADAPTER,
        purpose="torch._amp_update_scale_ is missing (torch.cuda.amp.GradScaler.update raised AttributeError)")
    registry.register(
        "msadapter.random.manual_seed", compat.seed_mindspore_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.manual_seed leaves nn.init (NumPy) and CPU random ops (MindSpore seed) unseeded, "
                "so ranks and runs build different models")
    registry.register(
        "msadapter.ops.creation.full", compat.full_dtype_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.full((2,), 7.0) is int64 under MSAdapter (PyTorch: float32; True gives bool): values are "
                "truncated and a float32 receive of it fails")
    for target in ("msadapter.ops.blas.baddbmm", "mindspore.common.tensor.Tensor.baddbmm"):
        registry.register(
            target, compat.baddbmm_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="baddbmm(input, a, b, beta=0) propagates NaN/Inf from input (0 * nan), PyTorch ignores input: "
                    "megatron's DotProductAttention passes an uninitialised torch.empty buffer (silent NaN loss)")
    for method in ("run_op_async", "real_run_op"):
        registry.register(
            f"mindspore.common.api._PyNativeExecutor.{method}", compat.grad_flag_restoring_wrapper, kind="wrap",
            requires=_MSADAPTER,
            purpose="a primitive failing in MindSpore's PyNative executor (index_add with int64 indices) clears "
                    "the grad flag MSAdapter set: autograd stays off for the rest of the process and "
                    "torch.enable_grad() does not bring it back; restore the flag")
    for entry in _GRAD_FLAG_ENTRIES:
        registry.register(
            entry, compat.grad_flag_entry_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="a C++ op or Tensor method failing on its arguments (x.flip(0), x.reshape('a')) clears the "
                    "grad flag MSAdapter set, so nothing is recorded any more; switch it back on where autograd "
                    "matters next")
    registry.register(
        "msadapter.optim.optimizer.Optimizer.zero_grad", zero_grad.optimizer_zero_grad, requires=_MSADAPTER,
        purpose="Optimizer.zero_grad(set_to_none=False) does nothing: the next step reuses stale gradients")
    registry.register(
        "msadapter.nn.modules.module.Module.zero_grad", zero_grad.module_zero_grad, requires=_MSADAPTER,
        purpose="Module.zero_grad(set_to_none=False) sets the gradients to None instead of zeroing them")
    registry.register(
        "mindspore.common.tensor.Tensor.flip", compat.flip_dims_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.flip(0) raises (MindSpore's Tensor.flip takes one tuple), and the failure switched autograd off")
    registry.register(
        "mindspore.common.tensor.Tensor.requires_grad", compat.requires_grad_property,
        requires=_MSADAPTER,
        purpose="a failing C++ op clears the grad flag MSAdapter set; making a tensor require grad switches it "
                "back on (else that tensor's ops are not recorded)")
    registry.register(
        "msadapter.optim.sgd.SGD.step", sgd.sgd_step, requires=_MSADAPTER,
        purpose="torch.optim.SGD creates its momentum accumulator afresh at every step (momentum has no effect, "
                "no momentum_buffer in state): Megatron-LM's --optimizer sgd trained differently from PyTorch from "
                "the second iteration; follow PyTorch's update rule")
    for module, cls, init, step in (("adam", "Adam", optim.adam_init, optim.adam_step),
                                    ("adamw", "AdamW", optim.adamw_init, optim.adamw_step)):
        target = f"msadapter.optim.{module}.{cls}"
        registry.register(
            f"{target}.step", step, requires=_MSADAPTER,
            purpose=f"torch.optim.{cls} calls MindSpore's ApplyAdam, which adds eps before the bias correction "
                    f"(effective eps ~3.2e-7, not 1e-8): weights drift ~1e-5 per step from PyTorch; "
                    f"follow PyTorch's update rule")
        registry.register(
            f"{target}.__init__", init, requires=_MSADAPTER,
            purpose=f"torch.optim.{cls}() rejects PyTorch's foreach/capturable/differentiable/fused arguments")
        registry.register(
            f"{target}.__setstate__", optim.adam_setstate, requires=_MSADAPTER,
            purpose=f"torch.optim.{cls}.load_state_dict raises KeyError 'capturable' on a state dict that "
                    f"MSAdapter saved; keep PyTorch's state layout (a step tensor per parameter, updated in place)")


_TENSOR = "mindspore.common.tensor.Tensor"


def _register_function_grads(registry: Any) -> None:
    """Register PyTorch's handling of a custom Function's gradients and ctx
    (tests/conformance/cases/ops_autograd_function.py)."""
    from mindspeed_ms.compat import function_grads

    registry.register(
        "msadapter.autograd.function.Function.apply", function_grads.apply_wrapper, kind="wrap",
        requires=_MSADAPTER,
        purpose="a custom Function's gradient of a broadcast shape is reduced without PyTorch's sum_to ((3, 4) for "
                "a (1, 4) input gave a (4,) gradient), extra non-None gradients are accepted, a saved tensor "
                "modified in place gives a wrong gradient silently, setup_context and keyword arguments are "
                "refused")


def _register_autograd_graph(registry: Any) -> None:
    """Register the autograd graph API the field calls (tests/conformance/cases/ops_autograd_graph.py)."""
    from mindspeed_ms.compat import autograd_graph as graph

    engine = "msadapter.autograd.variable.ImperativeEngine"
    for target, wrapper in (("msadapter.autograd._engine_run_backward", graph.engine_wrapper),
                            (f"{engine}.run_backward", graph.static_engine_wrapper)):
        registry.register(
            target, wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="runs the callbacks queue_callback queued during the backward pass once the engine returned")
    registry.register(
        f"{engine}.queue_callback", graph.queue_callback, create_dummy=True, requires=_MSADAPTER,
        purpose="Variable._execution_engine.queue_callback is missing (AttributeError): megatron's custom FSDP and "
                "MindSpeed's layerzero queue their post-backward callback with it")
    registry.register(
        f"{_TENSOR}.register_post_accumulate_grad_hook", graph.register_post_accumulate_grad_hook,
        create_dummy=True, requires=_MSADAPTER,
        purpose="Tensor.register_post_accumulate_grad_hook is missing (AttributeError)")
    registry.register(
        "msadapter.autograd.graph.register_multi_grad_hook", graph.register_multi_grad_hook, requires=_MSADAPTER,
        purpose="torch.autograd.graph.register_multi_grad_hook is a stub taking no arguments (TypeError; MindSpeed's "
                "layerzero registers its post-backward reshard with it)")
    registry.register(
        "msadapter.autograd.graph.saved_tensors_hooks.__enter__", graph.saved_tensors_hooks_enter, kind="wrap",
        requires=_MSADAPTER,
        purpose="torch.autograd.graph.saved_tensors_hooks never calls its pack / unpack hooks (a placeholder): "
                "MindSpeed's activation swapping silently did nothing; refused loudly")


def _register_grad_dtype(registry: Any) -> None:
    """Register PyTorch's refusal of gradients on integer tensors (tests/conformance/cases/ops_autograd.py)."""
    from mindspeed_ms.compat import grad_clone

    registry.register(
        f"{_TENSOR}.requires_grad_", grad_clone.requires_grad_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.requires_grad_() of an integer or bool tensor succeeds; PyTorch raises RuntimeError (only "
                "floating point tensors can require gradients)")
