"""``torch.get_rng_state`` / ``set_rng_state`` that replay MindSpore's CPU random stream, as PyTorch's do.

Off Ascend, MSAdapter's random ops (``rand``, ``randn``, ``randint``, ``normal``, ``dropout``, ``rand_like``,
...) do not draw from the generator ``torch.get_rng_state`` reads. Each call of a MindSpore random function
takes MindSpore's global seed and a counter of its kernel (``mindspore.common.seed._GLOBAL_SEED`` and
``_KERNEL_SEED[(kernel, op_seed)]``) and advances that counter; the 16 bytes MSAdapter's state holds (the
default generator's seed and offset) carry neither, so ``set_rng_state(get_rng_state())`` replayed nothing.

Here the state is a fixed-size uint8 tensor (:data:`STATE_BYTES`) that carries the global seed, the default
generator's seed and offset, and every kernel counter that has moved since the last seeding. Setting it puts
all of them back, so the draws after ``set_rng_state(s)`` are the draws that followed ``s = get_rng_state()``.
On this backend ``torch.cuda``'s generator is the same one (MSAdapter's ``torch.cuda.default_generators``
are the default generator), so the device functions read and write the same state, as the ``pytorch_cpu``
provider does on a CPU build of PyTorch.
"""

from __future__ import annotations

import functools
import importlib
import logging
import struct
import zlib
from typing import Any

from mindspeed_ms.compat.errors import RandomStateError, RandomStateTypeError

__all__ = ["STATE_BYTES", "STATE_MAGIC", "CROSS_BACKEND_HINT", "RandomStateError", "capture", "get_rng_state",
           "restore", "set_rng_state", "manual_seed", "get_device_rng_state", "set_device_rng_state"]

_LOG = logging.getLogger(__name__)
#: the first bytes of this backend's state tensor (the other backend tells it apart by them)
STATE_MAGIC = _MAGIC = b"MSRS"
_VERSION = 1
_HEADER = struct.Struct("<4sBBxxQ16s")  # magic, version, slots used, global seed, default generator (seed, offset)
_SLOT = struct.Struct("<IQI")  # crc32 of the kernel name, its op seed, its counter modulo _MODULUS
_SLOTS = 32
#: size of the state tensor; PyTorch's CPU generator state is 5056 bytes (a checkpoint from the other backend is
#: told apart by its shape, as examples/gpt_checkpointing.py does)
STATE_BYTES = _HEADER.size + _SLOTS * _SLOT.size
#: said where a state of the other backend is refused: Megatron-LM's load_checkpoint restores the generators unless told
CROSS_BACKEND_HINT = ("; a Megatron checkpoint written on the other backend resumes with --no-load-rng (parameters, "
                      "optimizer state and iteration are loaded, the random generators are not)")
#: MindSpore reduces a counter modulo 2**31 - 1 before a kernel uses it (``_truncate_seed``); adding the step
#: commutes with the reduction, so the residue is all a later draw depends on
_MODULUS = 2**31 - 1
#: the kernel names MindSpore's random functions count under (``_get_seed(seed, name)`` in mindspore.ops and
#: mindspore.numpy, ``"init"`` in mindspore.common.initializer), so a state restores in a fresh process
KNOWN_KERNELS = ("StandardNormal", "UniformInt", "UniformReal", "choice_with_mask", "dropout", "gamma", "init",
                 "laplace", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like",
                 "randn", "randn_like", "random_", "random_gamma", "random_poisson", "randperm", "shuffle",
                 "standard_laplace", "standard_normal", "uniform")


@functools.cache  # looked up a few times per RNG fork: the cache's hit is a C call, no import machinery
def _seeds() -> Any:
    # ``mindspore.common.seed`` the attribute is the set_seed function; the module holds the counters
    return importlib.import_module("mindspore.common.seed")


@functools.cache  # MindSpore builds it once, at import (mindspore/common/generator.py)
def _generator() -> Any:
    from mindspore.common.generator import default_generator

    return default_generator


@functools.cache
def _crc(name: str) -> int:
    return zlib.crc32(name.encode())


_NAMES: dict[int, str] = {_crc(name): name for name in KNOWN_KERNELS}


def _generator_state() -> bytes:
    """The default generator's (seed, offset) as MindSpore's 16-byte state, read from its parameters (a quarter
    of the cost of ``get_state``, which the RNG tracker pays on every fork) with ``_item()`` (what ``item()``
    calls, without the wrappers in front of it), which costs ~1 us where ``asnumpy()`` costs ~18 us (NumPy
    parses the buffer's format on every call)."""
    generator = _generator()
    try:
        return struct.pack("<qq", int(generator._seed._item()), int(generator._offset._item()))
    except AttributeError:  # another MindSpore layout: ask the generator
        return bytes(generator.get_state().asnumpy().tobytes())


def get_rng_state() -> Any:
    """Return the CPU random state as a uint8 tensor of :data:`STATE_BYTES` (``torch.get_rng_state``).

    An unseeded process (MindSpore then draws from fresh entropy on every call) is seeded here with its
    generator's initial seed, so the draws that follow can be replayed.

    Raises:
        RandomStateError: more kernels have moved than the state has slots (``reason="slots"``).
    """
    import mindspore
    import numpy as np

    return mindspore.Tensor(np.frombuffer(capture(), dtype=np.uint8).copy(), mindspore.uint8)


def capture() -> bytes:
    """:func:`get_rng_state`'s state as bytes, without the tensor (raises as it does): for a state that never leaves
    its caller (the RNG tracker's fork keeps the outside state only to set it back with :func:`restore`)."""
    seeds = _seeds()
    if seeds._GLOBAL_SEED is None:
        seeds._GLOBAL_SEED = int(_generator().initial_seed()) % (1 << 32)
        _LOG.debug("unseeded MindSpore random stream seeded with %d to take its state", seeds._GLOBAL_SEED)
    moved = [(name, op_seed, value) for (name, op_seed), value in seeds._KERNEL_SEED.items() if value != op_seed]
    if len(moved) > _SLOTS:
        raise RandomStateError("slots", f"torch.get_rng_state(): {len(moved)} MindSpore random kernels have drawn "
                                        f"since the last manual_seed, the state carries {_SLOTS}: "
                                        f"{sorted(name for name, _, _ in moved)}")
    generator = _generator_state()
    data = bytearray(STATE_BYTES)
    _HEADER.pack_into(data, 0, _MAGIC, _VERSION, len(moved), int(seeds._GLOBAL_SEED), generator)
    for index, (name, op_seed, value) in enumerate(moved):
        _SLOT.pack_into(data, _HEADER.size + index * _SLOT.size, _crc(name), op_seed, value % _MODULUS)
    return bytes(data)


def restore(data: bytes) -> None:
    """``set_rng_state`` of a state :func:`capture` returned, without the tensor round trip (the same effect)."""
    _apply(*_parse(data))


def _decode(state: Any) -> tuple[int, bytes, list[tuple[str, int, int]]]:
    import mindspore
    import numpy as np

    # MindSpore's own attributes first (the state tensors get_rng_state made, 4 a step under megatron's RNG
    # tracker): MSAdapter's ``shape`` builds a torch.Size and ``dtype`` is a property, each a Python frame
    raw_shape = getattr(state, "_shape", None)
    shape = tuple(raw_shape) if raw_shape is not None else tuple(getattr(state, "shape", ()))
    dtype = "uint8" if getattr(state, "_dtype", None) is mindspore.uint8 else \
        str(getattr(state, "dtype", type(state).__name__))
    if dtype.lower() != "uint8" or not hasattr(state, "asnumpy"):
        raise RandomStateTypeError("dtype", f"torch.set_rng_state(): RNG state must be a torch.ByteTensor, got "
                                            f"{dtype}")
    if shape != (STATE_BYTES,):
        raise RandomStateError("size", f"torch.set_rng_state(): expected a uint8 tensor of {STATE_BYTES} bytes "
                                       f"(this backend's torch.get_rng_state()), got {dtype} of shape {shape}; a "
                                       f"state from PyTorch's generator (5056 bytes) cannot be restored "
                                       f"here{CROSS_BACKEND_HINT}")
    return _parse(bytes(np.asarray(state.asnumpy(), dtype=np.uint8)))


def _parse(data: bytes) -> tuple[int, bytes, list[tuple[str, int, int]]]:
    """The global seed, generator state and kernel counters a state's bytes hold (raises as :func:`_decode`)."""
    magic, version, used, global_seed, generator = _HEADER.unpack_from(data, 0)
    if magic != _MAGIC or version != _VERSION or used > _SLOTS:
        raise RandomStateError("format", "torch.set_rng_state(): the tensor is not a state this backend's "
                                         "torch.get_rng_state() returned (its header does not match)")
    kernels = []
    for index in range(used):
        crc, op_seed, value = _SLOT.unpack_from(data, _HEADER.size + index * _SLOT.size)
        if crc not in _NAMES:
            _NAMES.update((_crc(name), name) for name in {key[0] for key in _seeds()._KERNEL_SEED})
        if crc not in _NAMES:
            raise RandomStateError("kernel", f"torch.set_rng_state(): the state counts draws of a MindSpore random "
                                             f"kernel this process does not know (crc32 {crc:#010x}); draw once "
                                             f"from that op before restoring, or reseed with torch.manual_seed")
        kernels.append((_NAMES[crc], op_seed, value))
    return global_seed, generator, kernels


def set_rng_state(state: Any) -> None:
    """Restore a state :func:`get_rng_state` returned (``torch.set_rng_state``); nothing changes on error.

    Raises:
        RandomStateError: the tensor is not such a state (``reason="size"``/``"format"``; a
            :class:`RandomStateTypeError` for another dtype, ``"dtype"``), or it counts a kernel this process
            cannot name (``"kernel"``).
    """
    _apply(*_decode(state))


def _apply(global_seed: int, generator: bytes, kernels: list[tuple[str, int, int]]) -> None:
    import mindspore
    import numpy as np

    seeds = _seeds()
    seeds._GLOBAL_SEED = global_seed
    counters = seeds._KERNEL_SEED
    for key in counters:
        counters[key] = key[1]
    for name, op_seed, value in kernels:
        counters[(name, op_seed)] = value
    if generator != _generator_state():  # the generator rarely moves on CPU: skip its (costly) op when it did not
        _generator().set_state(mindspore.Tensor(np.frombuffer(generator, dtype=np.uint8).copy(), mindspore.uint8))


def manual_seed(seed: int) -> Any:
    """Seed the random stream without touching NumPy (``torch.cuda.manual_seed`` on this backend).

    ``mindspore.set_seed`` also reseeds NumPy's global generator; PyTorch's device seeding does not, and
    megatron's RNG tracker seeds its named states this way. The default generator keeps the seed
    ``torch.manual_seed`` gave it (``torch.initial_seed()`` is the CPU generator's, as in PyTorch; no CPU random
    op reads it), so the tracker's named states share it and a fork does not pay for restoring it.

    Returns:
        the default generator (what ``mindspore.manual_seed`` returns).
    """
    seeds = _seeds()
    seeds._GLOBAL_SEED = int(seed) % (1 << 32)
    seeds._reset_op_seed()
    return _generator()


def get_device_rng_state(device: Any = "cuda") -> Any:
    """Return the state of ``device``'s generator, the CPU stream here (``torch.cuda.get_rng_state``)."""
    del device
    return get_rng_state()


def set_device_rng_state(state: Any, device: Any = "cuda") -> None:
    """Set ``device``'s generator state, the CPU stream here (``torch.cuda.set_rng_state``)."""
    del device
    set_rng_state(state)
