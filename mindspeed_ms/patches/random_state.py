"""Built-in provider: PyTorch's random state on MindSpore's CPU backend (get/set replay every draw).

Off Ascend MSAdapter's random ops draw from MindSpore's global seed and per-kernel counters, which its
16-byte ``get_rng_state`` does not carry; NumPy fills ``nn.init``; ``randperm`` ignores every seed.
Code in :mod:`mindspeed_ms.compat.random_state` and :mod:`mindspeed_ms.compat.random_ops`. On Ascend
MSAdapter's generator-based ops stand and nothing is registered.
"""

from __future__ import annotations

from typing import Any, Callable

from mindspeed_ms.versions import MEGATRON_CORE_REQUIREMENT, MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

name = "random_state"
requires = (MSADAPTER_REQUIREMENT,)

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)
_MEGATRON = (MEGATRON_CORE_REQUIREMENT,)
_STATE_PURPOSE = ("torch.set_rng_state(torch.get_rng_state()) replayed nothing on CPU: MSAdapter's state is the "
                  "default generator's seed and offset, its CPU random ops draw from MindSpore's global seed and "
                  "per-kernel counters (activation recompute, megatron's RNG tracker and checkpoints lost the stream)")


def register(registry: Any, args: Any) -> None:
    """Register the random-state patches, or nothing when MindSpore does not compute on the CPU.

    Args:
        registry: the :class:`~mindspeed_ms.PatchRegistry` to fill.
        args: the training script's flags (unused).
    """
    del args
    from mindspeed_ms.device import device_target

    if device_target() != "CPU":
        return
    from mindspeed_ms.compat import pytorch_cpu, random_generator, random_ops, random_state

    for function in ("get_rng_state", "set_rng_state"):
        registry.register(f"msadapter.random.{function}", getattr(random_state, function), requires=_MSADAPTER,
                          purpose=_STATE_PURPOSE)
    # torch.cuda.get_rng_state / set_rng_state / manual_seed are mindspore.common.generator's (MSAdapter imports
    # them into msadapter.cuda); its torch.cuda.default_generators are the default generator: one stream
    device: dict[str, Callable[..., Any]] = {"get_rng_state": random_state.get_device_rng_state,
                                             "set_rng_state": random_state.set_device_rng_state,
                                             "manual_seed": random_state.manual_seed}
    for function, replacement in device.items():
        registry.register(f"mindspore.common.generator.{function}", replacement, requires=_MSADAPTER,
                          purpose=f"torch.cuda.{function} is MindSpore's default generator's, which no CPU random op "
                                  f"reads; on CPU the device generator is the CPU stream")
    registry.register("msadapter.cuda.random.get_rng_state", random_state.get_device_rng_state, requires=_MSADAPTER,
                      purpose="torch.cuda.random.get_rng_state (megatron's _get_cuda_rng_state) reads the default "
                              "generator, which no CPU random op reads")
    registry.register("megatron.core.tensor_parallel.random._set_cuda_rng_state", pytorch_cpu.set_device_rng_state,
                      requires=_MEGATRON,
                      purpose="megatron sets the device state through torch.cuda.default_generators[i].set_state, "
                              "MindSpore's generator, which no CPU random op reads; set the CPU stream")
    registry.register("megatron.core.tensor_parallel.random.CudaRNGStatesTracker.fork", pytorch_cpu.cpu_tracker_fork,
                      requires=_MEGATRON,
                      purpose="the tracker's fork swaps device RNG states and warns when the CPU state moved inside; "
                              "on CPU both are one stream (as with the pytorch_cpu provider)")
    for function, init in (("normal_", random_ops.init_normal_), ("uniform_", random_ops.init_uniform_)):
        registry.register(f"msadapter.nn.init.{function}", init, requires=_MSADAPTER,
                          purpose=f"torch.nn.init.{function} fills from NumPy's generator: torch.set_rng_state and "
                                  f"megatron's RNG tracker (forked around init_method) did not reach it")
    registry.register("mindspore.common.tensor.Tensor.normal_", random_ops.normal_, requires=_MSADAPTER,
                      purpose="Tensor.normal_ raises on CPU (InplaceNormal unregistered)")
    registry.register("msadapter.ops.random.bernoulli", random_ops.bernoulli, requires=_MSADAPTER,
                      purpose="torch.bernoulli on CPU compares its samples with 0.5 whatever the probabilities "
                              "(and returns int32)")
    registry.register("mindspore.common.tensor.Tensor.bernoulli", random_ops.tensor_bernoulli, requires=_MSADAPTER,
                      purpose="Tensor.bernoulli has no CPU kernel")
    registry.register("mindspore.common.tensor.Tensor.bernoulli_", random_ops.bernoulli_, requires=_MSADAPTER,
                      purpose="Tensor.bernoulli_ raises 'not supported on this device' on CPU")
    registry.register("mindspore.common.tensor.Tensor.random_", random_ops.random_, requires=_MSADAPTER,
                      purpose="Tensor.random_ raises on CPU (InplaceRandom unregistered): MSAdapter's RandomSampler "
                              "calls it, so DataLoader(shuffle=True) failed")
    registry.register("msadapter.ops.random.randperm", random_ops.randperm_wrapper, kind="wrap", requires=_MSADAPTER,
                      purpose="torch.randperm on CPU is MindSpore's RandpermV2 with seed 0 and offset 0: the same "
                              "permutation on every call, whatever the seed or generator")
    registry.register("msadapter.ops.random.multinomial", random_generator.multinomial_wrapper, kind="wrap",
                      requires=_MSADAPTER,
                      purpose="torch.multinomial(generator=g) on CPU ignores g; float64 weights with replacement "
                              "(WeightedRandomSampler) raised bad_function_call (SearchSorted float64/float32)")
    registry.register("mindspore.common.tensor.Tensor.multinomial", random_generator.tensor_multinomial,
                      requires=_MSADAPTER,
                      purpose="Tensor.multinomial is MindSpore's own method: replacement defaults to True (PyTorch: "
                              "False: w.multinomial(n) repeated indices, silently) and generator= is refused")
    for function in ("rand", "randn", "normal"):
        registry.register(f"msadapter.ops.random.{function}", random_generator.generator_wrapper(f"torch.{function}"),
                          kind="wrap", requires=_MSADAPTER,
                          purpose=f"torch.{function}(generator=g) on CPU ignores g: it drew from the global stream "
                                  f"(re-seeding g replayed nothing, the draw moved torch.manual_seed's stream)")
    registry.register("msadapter.ops.random.randint", random_generator.randint_wrapper, kind="wrap",
                      requires=_MSADAPTER,
                      purpose="torch.randint refused generator= and PyTorch's randint(high, size) overload on CPU")
