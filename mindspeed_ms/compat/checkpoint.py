"""Replacements that let megatron-core's ``dist_checkpointing`` (``torch_dist``) run on MSAdapter and on PyTorch 2.13.

* ``Module._save_to_state_dict``: MSAdapter ignores ``keep_vars`` and stores ``param.cpu()`` (a new tensor),
  so megatron's optimizer cannot find its parameters in the model's sharded state dict (it matches them by
  identity). PyTorch's rule is kept: the parameter itself with ``keep_vars=True``, else ``detach()``.
* The device a tensor reports on MindSpore's CPU backend (the project's rule, see the README): ``cpu``,
  ``is_cpu`` true, ``is_cuda`` false. MSAdapter reports ``Ascend`` and ``is_cuda`` for every tensor, so
  megatron's filesystem writer (``assert tensor.is_cpu``) refuses to write.
* ``torch.distributed.scatter_object_list`` fails under MSAdapter (``'NoneType' object has no attribute
  'item'``: the scatter of the sizes returns nothing); ``torch.distributed.checkpoint`` scatters the load
  and save plans with it. It becomes one ``broadcast_object_list`` of the whole list (which works).
* MSAdapter's ``FileSystemReader._slice_file`` returns a view that seeks and reads past its item, so a
  tensor record (a zip archive inside a ``.distcp`` file) is read with the last archive's directory.
* Megatron-LM core_v0.12.1's ``load_checkpoint`` asks ``is_te_min_version("2.0")`` on every ``torch_dist``
  resume, which imports Transformer Engine: ``ModuleNotFoundError`` without it (a CPU, MindSpore, Ascend). Without
  TE no parameter is a ``Float8Tensor``, so the fix it guards has nothing to do.
* megatron-core 0.12.1's filesystem writer calls ``torch.distributed.checkpoint.filesystem._write_item``
  without the ``serialization_format`` argument that PyTorch 2.13 requires (the reference interpreter).
"""

from __future__ import annotations

import functools
import inspect
import io
from typing import Any, Callable

__all__ = ["save_to_state_dict", "device", "is_cpu", "is_cuda", "write_item_wrapper", "scatter_object_list",
           "slice_file", "distributed_optimizer_state_dict_wrapper",
           "set_states_keeping_step_wrapper", "SET_STATES_PURPOSE", "fp8_fix_without_te_wrapper", "FP8_FIX_PURPOSE"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"
SET_STATES_PURPOSE = ("megatron-core 0.12.1 leaves 'step' out of the distributed optimizer's torch_dist parameter "
                      "state but, without Apex/TE, copies it back from there: KeyError 'step' on every resume; its "
                      "torch-format load copies into views of fp32 parameters with grad on (in-place on a leaf's "
                      "view: RuntimeError on PyTorch, InPlaceOnViewError on MindSpore)")

FP8_FIX_PURPOSE = ("Megatron-LM's load_checkpoint calls is_te_min_version('2.0') on every torch_dist resume, which "
                   "imports transformer_engine: ModuleNotFoundError without it (every --load failed); without TE no "
                   "parameter is a Float8Tensor and the fix has nothing to do")


def fp8_fix_without_te_wrapper(fix: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fix_fp8_params_lose_precision_when_loading_dist_ckpt`` as a no-op where Transformer Engine is missing.

    Args:
        fix: ``megatron.training.checkpointing.fix_fp8_params_lose_precision_when_loading_dist_ckpt``.

    Returns:
        ``fix``, except that its import of ``transformer_engine`` failing (its first statement, before it changes
        anything) returns None: without TE ``is_float8tensor`` is false for every tensor, so there is nothing to fix.
        Any other error propagates.
    """

    @functools.wraps(fix)
    def fix_when_te_is_installed(state_dict: Any) -> None:
        try:
            return fix(state_dict)
        except ImportError as error:
            if (error.name or "").split(".", 1)[0] != "transformer_engine":
                raise
            return None

    return fix_when_te_is_installed


def save_to_state_dict(self: Any, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
    """Put this module's parameters and persistent buffers into ``destination`` as PyTorch does.

    Replaces MSAdapter's ``Module._save_to_state_dict``.
    """
    for name, param in self._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buf in self._buffers.items():
        if buf is not None and name not in self._non_persistent_buffers_set:
            destination[prefix + name] = buf if keep_vars else buf.detach()
    from torch.nn import Module  # MSAdapter's

    if getattr(type(self), "get_extra_state", Module.get_extra_state) is not Module.get_extra_state:
        destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()


@functools.cache
def _cpu() -> Any:
    import torch  # MSAdapter's

    return torch.device("cpu")


def _device(self: Any) -> Any:
    return _cpu()


#: ``Tensor.device`` on MindSpore's CPU backend: every tensor is in host memory.
device = property(_device, doc="The device the tensor is on: the CPU (MindSpore's CPU backend).")
#: ``Tensor.is_cpu`` on MindSpore's CPU backend.
is_cpu = property(lambda self: True, doc="True: the tensor is in host memory (MindSpore's CPU backend).")
#: ``Tensor.is_cuda`` on MindSpore's CPU backend.
is_cuda = property(lambda self: False, doc="False: the tensor is not on an accelerator (MindSpore's CPU backend).")


def write_item_wrapper(write_item: Callable[..., Any]) -> Callable[..., Any]:
    """Give PyTorch's ``_write_item`` the ``serialization_format`` megatron-core 0.12.1 does not pass.

    Args:
        write_item: ``torch.distributed.checkpoint.filesystem._write_item`` as megatron imported it.

    Returns:
        ``write_item`` itself when it takes no ``serialization_format`` (PyTorch before 2.7), else a function
        that passes ``SerializationFormat.TORCH_SAVE`` (what megatron's files hold: one ``torch.save`` per tensor).
    """
    if "serialization_format" not in inspect.signature(write_item).parameters:
        return write_item
    from torch.distributed.checkpoint.filesystem import SerializationFormat

    @functools.wraps(write_item)
    def write_item_as_torch_save(*args: Any, **kwargs: Any) -> Any:
        if len(args) < 6 and "serialization_format" not in kwargs:
            kwargs["serialization_format"] = SerializationFormat.TORCH_SAVE
        return write_item(*args, **kwargs)

    return write_item_as_torch_save


def scatter_object_list(scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: Any = None, group_src: int | None = None) -> None:
    """Give each rank of ``group`` its element of ``src``'s list, as ``torch.distributed.scatter_object_list``.

    Replaces MSAdapter's. ``src`` is a global rank, ``group_src`` a rank in ``group`` (one of the two).
    """
    import torch.distributed as dist  # MSAdapter's

    if src is None and group_src is None:
        src = 0
    if src is None:
        src = dist.get_global_rank(group, group_src) if group is not None else group_src
    if not scatter_object_output_list:
        raise ValueError("scatter_object_list: scatter_object_output_list must hold at least one element")
    payload = [scatter_object_input_list if dist.get_rank() == src else None]
    dist.broadcast_object_list(payload, src=src, group=group)
    scattered = payload[0]
    if scattered is None:
        raise ValueError(f"scatter_object_list: the source rank {src} passed no scatter_object_input_list")
    scatter_object_output_list[0] = scattered[dist.get_rank(group) if group is not None else dist.get_rank()]


def slice_file(self: Any, file: Any, sinfo: Any) -> io.BytesIO:
    """Return exactly the bytes of one stored item; replaces MSAdapter's ``FileSystemReader._slice_file``."""
    del self
    file.seek(sinfo.offset)
    return io.BytesIO(file.read(sinfo.length))


def distributed_optimizer_state_dict_wrapper(state_dict: Callable[..., Any]) -> Callable[..., Any]:
    """Let a fresh ``DistributedOptimizer`` (no step taken yet) describe itself without Apex/TE.

    Without Apex or Transformer Engine megatron-core 0.12.1 reads the iteration from the inner optimizer's
    per-parameter ``step`` and asserts there is exactly one, which fails before the first step: exactly when
    a run builds the sharded state dict it loads a checkpoint into. Then the state dict is built as megatron
    builds it, with step 0 (the loaded checkpoint's param groups bring the real one).
    """

    @functools.wraps(state_dict)
    def state_dict_before_first_step(self: Any) -> Any:
        from megatron.core.optimizer import distrib_optimizer

        if distrib_optimizer.HAVE_APEX_OR_TE or len(self.optimizer.state) != 0:
            return state_dict(self)
        inner = self.optimizer.state_dict()
        described: dict[str, Any] = {"optimizer": {key: value for key, value in inner.items() if key != "state"}}
        for param_group in described["optimizer"]["param_groups"]:
            del param_group["params"]
            param_group["step"] = 0
        if self.grad_scaler:
            described["grad_scaler"] = self.grad_scaler.state_dict()
        return described

    return state_dict_before_first_step


def set_states_keeping_step_wrapper(set_states: Callable[..., Any]) -> Callable[..., Any]:
    """Keep the optimizer's ``step`` when a torch_dist checkpoint's parameter state has none.

    megatron-core 0.12.1 leaves ``step`` out of the distributed optimizer's sharded parameter state (it is
    read from the param groups) but, without Apex/TE, copies every key of the allocated state, ``step``
    included, from the loaded tensors: ``KeyError: 'step'`` on every resume. The step the param groups
    brought is kept. The copies run without autograd, as the ``torch_dist`` path's do (the legacy ``torch``
    format's path, ``load_parameter_state_from_dp_zero``, copied into views of fp32 parameters with grad on).
    """

    @functools.wraps(set_states)
    def set_states_keeping_step(self: Any, model_param: Any, tensors: dict[str, Any]) -> Any:
        if "step" not in tensors and not self.ddp_config.use_custom_fsdp \
                and not self.config.use_precision_aware_optimizer:
            group_index, group_order = self.model_param_group_index_map[model_param]
            main_param = self.optimizer.param_groups[group_index]["params"][group_order]
            state = self.optimizer.state[main_param]
            if state.get("step") is not None:
                # megatron's load_state_dict gave every parameter the same step tensor; PyTorch's Adam
                # increments it in place once per parameter, so each parameter gets its own
                state["step"] = state["step"].detach().clone()
                tensors = {**tensors, "step": state["step"]}
        import torch

        # a load writes state, it records no autograd: megatron's torch_dist path calls this under no_grad, its
        # legacy torch-format path (load_parameter_state_from_dp_zero) does not, and with fp32 parameters the main
        # param is a view of the model parameter (a leaf that requires grad): PyTorch raised "a view of a leaf
        # Variable that requires grad is being used in an in-place operation" on every resume
        with torch.no_grad():
            return set_states(self, model_param, tensors)

    return set_states_keeping_step
