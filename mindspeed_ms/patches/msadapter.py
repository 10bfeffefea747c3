"""Built-in provider: MSAdapter behaviour that differs from PyTorch on every MindSpore device."""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

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
    from mindspeed_ms.compat import msadapter as compat
    from mindspeed_ms.compat import optim

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
        "msadapter.optim.optimizer.Optimizer.zero_grad", optim.optimizer_zero_grad, requires=_MSADAPTER,
        purpose="Optimizer.zero_grad(set_to_none=False) does nothing: the next step reuses stale gradients")
    registry.register(
        "msadapter.nn.modules.module.Module.zero_grad", optim.module_zero_grad, requires=_MSADAPTER,
        purpose="Module.zero_grad(set_to_none=False) sets the gradients to None instead of zeroing them")
    registry.register(
        "mindspore.common.tensor.Tensor.flip", compat.flip_dims_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.flip(0) raises (MindSpore's Tensor.flip takes one tuple), and the failure switched autograd off")
    registry.register(
        "mindspore.common.tensor.Tensor.requires_grad", compat.requires_grad_property,
        requires=_MSADAPTER,
        purpose="a failing C++ op clears the grad flag MSAdapter set; making a tensor require grad switches it "
                "back on (else that tensor's ops are not recorded)")
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
