"""Replacements that let Megatron-LM's training entry (``megatron.training``) start on a CPU.

Megatron-LM's ``pretrain_gpt.py`` (and MindSpeed-LLM's, which runs on it) assumes CUDA before the first
step: ``initialize_megatron`` asserts ``torch.cuda.is_available()``, validation insists on
``CUDA_DEVICE_MAX_CONNECTIONS=1`` for tensor parallelism, ``_compile_dependencies`` runs ``make`` for the
dataset helpers and compiles the fused CUDA kernels, ``set_jit_fusion_options`` warms JIT fusions up
with tensors on ``device="cuda"``, ``get_model`` calls ``Module.cuda()``. Here each of those does on a
machine without CUDA what it is for: the dataset helpers come from the megatron-core wheel (which ships
``helpers_cpp`` prebuilt), a CUDA-only kernel build or warm-up is skipped (nothing computes through
it on a CPU), a module stays where it computes.

Used by the ``megatron_training`` provider (MindSpore's CPU backend) and the ``pytorch_cpu`` provider
(the CPU PyTorch reference of ``mindspeed-ms parity``); nothing here imports torch at import time.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable

from mindspeed_ms.compat.errors import AscendRuntimeUnavailableError, DatasetHelpersUnavailableError

__all__ = [
    "DatasetHelpersUnavailableError",
    "AscendRuntimeUnavailableError",
    "HELPERS_MODULE",
    "MAX_CONNECTIONS_ENV",
    "allow_no_cuda_wrapper",
    "max_connections_wrapper",
    "with_prebuilt_helpers",
    "compile_helpers",
    "skip_fused_kernels",
    "skip_jit_warmup",
    "one_device_per_process",
    "module_stays_on_cpu",
    "acl_unavailable",
    "initialize_distributed_wrapper",
    "set_random_seed_wrapper",
]

logger = logging.getLogger(__name__)

HELPERS_MODULE = "megatron.core.datasets.helpers_cpp"
MAX_CONNECTIONS_ENV = "CUDA_DEVICE_MAX_CONNECTIONS"
_DATASETS = "megatron.core.datasets"
_DISTRIBUTION = "megatron-core"


def allow_no_cuda_wrapper(initialize: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``initialize_megatron`` run without CUDA (its ``allow_no_cuda=True``).

    Megatron asserts ``torch.cuda.is_available()`` unless ``allow_no_cuda`` is set, and that flag does
    nothing else; on a CPU build the CPU is where the model computes.

    Args:
        initialize: ``megatron.training.initialize.initialize_megatron``.

    Returns:
        ``initialize`` with ``allow_no_cuda`` defaulting to ``True``.
    """

    @functools.wraps(initialize)
    def initialize_megatron(*args: Any, **kwargs: Any) -> Any:
        if len(args) < 4:  # (extra_args_provider, args_defaults, ignore_unknown_args, allow_no_cuda, ...)
            kwargs.setdefault("allow_no_cuda", True)
        return initialize(*args, **kwargs)

    return initialize_megatron


def max_connections_wrapper(validate: Callable[..., Any]) -> Callable[..., Any]:
    """Set ``CUDA_DEVICE_MAX_CONNECTIONS=1`` (when unset) before Megatron validates its arguments.

    The variable orders CUDA kernel launches over one hardware queue, so that tensor-parallel
    communication is issued before the computation that waits on it; Megatron refuses tensor and
    sequence parallelism without it. A CPU runs one stream in program order, which is what the
    setting asks for: ``1`` describes it. A value the user set is left alone.

    Args:
        validate: ``megatron.training.arguments.validate_args``.

    Returns:
        ``validate`` that sets the variable first.
    """

    @functools.wraps(validate)
    def validate_args(*args: Any, **kwargs: Any) -> Any:
        if MAX_CONNECTIONS_ENV not in os.environ:
            logger.info("%s is unset: set to 1 (one in-order stream, as on the CPU)", MAX_CONNECTIONS_ENV)
            os.environ[MAX_CONNECTIONS_ENV] = "1"
        return validate(*args, **kwargs)

    return validate_args


def _wheel_datasets_dir() -> Path | None:
    """Return the installed megatron-core wheel's ``megatron/core/datasets`` holding ``helpers_cpp``, if any."""
    from importlib import machinery, metadata

    try:
        files = metadata.distribution(_DISTRIBUTION).files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        parts = Path(str(file)).parts
        if parts[:3] == ("megatron", "core", "datasets") and len(parts) == 4 and parts[3].startswith("helpers_cpp") \
                and any(parts[3].endswith(suffix) for suffix in machinery.EXTENSION_SUFFIXES):
            located = Path(str(file.locate())).parent
            if located.is_dir():
                return located
    return None


def _has_helpers(folders: list[str]) -> bool:
    from importlib import machinery

    for folder in folders:
        for suffix in machinery.EXTENSION_SUFFIXES:
            if (Path(folder) / f"helpers_cpp{suffix}").is_file():
                return True
    return False


def with_prebuilt_helpers(path: list[str]) -> list[str]:
    """Append the megatron-core wheel's datasets folder to ``megatron.core.datasets.__path__`` when needed.

    A Megatron-LM source checkout on ``PYTHONPATH`` (the field's set-up) has ``helpers.cpp`` but not the
    built ``helpers_cpp`` extension, which ``megatron.core.datasets.helpers`` imports on every rank; the
    megatron-core wheel of the same version ships it prebuilt. The sources stay first: only what they
    lack is found in the wheel. A folder that already has the extension is left as it is.

    Args:
        path: the package's ``__path__``.

    Returns:
        ``path``, or a new list with the wheel's folder appended.
    """
    folders = [str(item) for item in path]
    if _has_helpers(folders):
        return path
    wheel = _wheel_datasets_dir()
    if wheel is None or str(wheel) in folders:
        return path
    return [*path, str(wheel)]


def compile_helpers() -> None:
    """Make ``megatron.core.datasets.helpers_cpp`` importable without running ``make`` in the source tree.

    Megatron runs ``make -C megatron/core/datasets`` (a Makefile only the source tree has, pybind11
    headers, and a write into the tree) and exits the process when it fails; the wheel's prebuilt
    extension serves (see :func:`with_prebuilt_helpers`).

    Raises:
        DatasetHelpersUnavailableError: neither the sources nor an installed wheel have the extension.
    """
    try:
        importlib.import_module(HELPERS_MODULE)
    except ImportError as exc:
        package = sys.modules.get(_DATASETS)
        raise DatasetHelpersUnavailableError([str(item) for item in getattr(package, "__path__", [])],
                                             module=HELPERS_MODULE, distribution=_DISTRIBUTION) from exc


def skip_fused_kernels(args: Any) -> None:
    """Build nothing (``megatron.legacy.fused_kernels.load`` without CUDA).

    Megatron compiles its fused masked-softmax CUDA kernels here, which fails without ``CUDA_HOME``;
    on a CPU they could not run: ``FusedScaleMaskSoftmax`` uses them only for CUDA fp16/bf16 inputs
    and otherwise computes the unfused softmax.
    """
    del args


def skip_jit_warmup() -> None:
    """Warm nothing up (``megatron.training.initialize._warmup_jit_function`` without CUDA).

    The warm-up runs the fused bias-activation and bias-dropout-add functions five times on
    ``device="cuda"`` tensors so that their JIT compilation happens before training; it changes no
    result, and the tensors cannot be allocated without CUDA.
    """


def one_device_per_process() -> int:
    """Return 1 (``torch.cuda.device_count()`` on MindSpore's CPU backend: the process computes on one device).

    MSAdapter asks the Ascend runtime and raises ``Device Ascend not exist``; Megatron initialises
    model parallelism and seeds the model-parallel RNG tracker only when it sees a device.
    """
    return 1


def module_stays_on_cpu(self: Any, device: Any = None) -> Any:
    """Return the module unchanged (``Module.cuda()`` where the tensors already are on the computing CPU)."""
    del device
    return self


def acl_unavailable(function: str) -> Callable[..., Any]:
    """Return a stand-in for CANN's ``acl.<function>`` that raises :class:`AscendRuntimeUnavailableError`."""

    def unavailable(*args: Any, **kwargs: Any) -> Any:
        del args, kwargs
        raise AscendRuntimeUnavailableError(function)

    unavailable.__name__ = unavailable.__qualname__ = function.rpartition(".")[2]
    return unavailable


def initialize_distributed_wrapper(initialize: Callable[..., Any]) -> Callable[..., Any]:
    """Initialise model parallelism after ``_initialize_distributed`` on a PyTorch build without CUDA.

    Megatron initialises the process group, then the model-parallel groups only ``if device_count >
    0``; on CPU PyTorch ``torch.cuda.device_count()`` is 0, so every rank ran with no tensor or
    pipeline parallelism. The groups are initialised here with the arguments Megatron core_r0.12.1
    passes.

    Args:
        initialize: ``megatron.training.initialize._initialize_distributed``.

    Returns:
        ``initialize`` followed by ``mpu.initialize_model_parallel`` when it did not run.
    """

    @functools.wraps(initialize)
    def _initialize_distributed(*args: Any, **kwargs: Any) -> Any:
        result = initialize(*args, **kwargs)
        from megatron.core import mpu
        from megatron.training import get_args

        if not mpu.model_parallel_is_initialized():
            _initialize_model_parallel(mpu, get_args(), *args, **kwargs)
        return result

    return _initialize_distributed


def _initialize_model_parallel(mpu: Any, args: Any, get_embedding_ranks: Any = None,
                               get_position_embedding_ranks: Any = None) -> None:
    mpu.initialize_model_parallel(
        args.tensor_model_parallel_size,
        args.pipeline_model_parallel_size,
        args.virtual_pipeline_model_parallel_size,
        args.pipeline_model_parallel_split_rank,
        pipeline_model_parallel_comm_backend=args.pipeline_model_parallel_comm_backend,
        context_parallel_size=args.context_parallel_size,
        hierarchical_context_parallel_sizes=args.hierarchical_context_parallel_sizes,
        expert_model_parallel_size=args.expert_model_parallel_size,
        num_distributed_optimizer_instances=args.num_distributed_optimizer_instances,
        expert_tensor_parallel_size=args.expert_tensor_parallel_size,
        distributed_timeout_minutes=args.distributed_timeout_minutes,
        nccl_communicator_config_path=args.nccl_communicator_config_path,
        order="tp-cp-ep-dp-pp" if not args.use_tp_pp_dp_mapping else "tp-cp-ep-pp-dp",
        encoder_tensor_model_parallel_size=args.encoder_tensor_model_parallel_size,
        encoder_pipeline_model_parallel_size=args.encoder_pipeline_model_parallel_size,
        get_embedding_ranks=get_embedding_ranks,
        get_position_embedding_ranks=get_position_embedding_ranks,
        create_gloo_process_groups=args.enable_gloo_process_groups,
    )


def set_random_seed_wrapper(set_seed: Callable[..., Any]) -> Callable[..., Any]:
    """Seed the model-parallel RNG tracker after ``_set_random_seed`` on a PyTorch build without CUDA.

    Megatron seeds Python, NumPy and torch, then the tracker (``model_parallel_cuda_manual_seed``)
    only ``if torch.cuda.device_count() > 0``: on CPU PyTorch the tracker stayed empty and the first
    ``fork()`` of a tensor-parallel layer raised. The tracker gets Megatron's seed here
    (``seed + 100 * pipeline rank``, plus ``10 * data-parallel rank`` with ``data_parallel_random_init``).

    Args:
        set_seed: ``megatron.training.initialize._set_random_seed``.

    Returns:
        ``set_seed`` followed by the tracker's seeding when it did not run.
    """

    @functools.wraps(set_seed)
    def _set_random_seed(seed_: int, data_parallel_random_init: bool = False, te_rng_tracker: bool = False,
                         inference_rng_tracker: bool = False, use_cudagraphable_rng: bool = False) -> Any:
        result = set_seed(seed_, data_parallel_random_init, te_rng_tracker, inference_rng_tracker,
                          use_cudagraphable_rng)
        import torch
        from megatron.core import mpu, tensor_parallel

        if torch.cuda.device_count() == 0:
            seed = seed_ + 100 * mpu.get_pipeline_model_parallel_rank()
            if data_parallel_random_init:
                seed += 10 * mpu.get_data_parallel_rank()
            tensor_parallel.model_parallel_cuda_manual_seed(seed, te_rng_tracker, inference_rng_tracker,
                                                            use_cudagraphable_rng)
        return result

    return _set_random_seed
