"""``generator=`` of torch's random ops on MindSpore's CPU backend: a ``torch.Generator`` draws from its own stream.

Off Ascend MSAdapter's ``rand``, ``randn``, ``normal`` and ``multinomial`` accept ``generator=`` and ignore it:
they draw from MindSpore's global seed and per-kernel counters (the stream ``torch.manual_seed`` seeds), so
re-seeding the generator replayed nothing and drawing with it moved the global stream. ``randint`` refused the
keyword (and PyTorch's ``randint(high, size)`` overload).

Here a draw with a generator other than the default one runs with the global stream swapped out: the global
seed becomes a mix of the generator's (seed, offset), the kernel counters start afresh, the generator's offset
moves on by one, and the global seed and counters are put back after (exactly, also on error). So
``g.manual_seed(s)`` replays, two generators seeded alike agree, ``g.get_state()`` / ``g.set_state()`` replay
(the state is the generator's own 16 bytes), and the global stream does not move. The numbers differ from
PyTorch's (MindSpore's kernels are not PyTorch's Philox/MT19937); the replay and independence properties hold.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Iterator
from typing import Any, Callable

from mindspeed_ms.compat.errors import RandomGeneratorTypeError

__all__ = ["drawing_from", "advance", "mix_seed", "randint_arguments", "own_stream", "generator_wrapper",
           "multinomial_wrapper", "randint_wrapper", "tensor_multinomial",
           "RandomGeneratorTypeError"]


def mix_seed(seed: int, counter: int) -> int:
    """Fold a generator's (seed, offset) into one 31-bit seed (MindSpore truncates seeds by 2**31 - 1).

    Also what randperm takes: RandpermV2 ignores its seed once the offset is non-zero.
    """
    return (seed * 0x9E3779B1 + counter) % (2**31 - 1)


def advance(generator: Any, steps: int) -> tuple[int, int]:
    """Return ``generator``'s (seed, offset) and move its offset on by ``steps`` (its ``_step`` does not on CPU)."""
    import mindspore
    import numpy as np

    state = np.asarray(generator.get_state().asnumpy(), dtype=np.uint8)
    seed, offset = (int(value) for value in state.view(np.int64)[:2])
    moved = state.copy()
    moved.view(np.int64)[1] = offset + steps
    generator.set_state(mindspore.Tensor(moved, mindspore.uint8))
    return seed, offset


def own_stream(op: str, generator: Any) -> bool:
    """True when ``generator`` is a generator other than the default one (whose stream is the global one).

    Raises:
        RandomGeneratorTypeError: ``generator`` is not a ``torch.Generator`` (PyTorch's TypeError).
    """
    from mindspore.common.generator import Generator, default_generator

    if generator is None or generator is default_generator:
        return False
    if not isinstance(generator, Generator):
        raise RandomGeneratorTypeError(op, f"{op}(): generator must be a torch.Generator, got "
                                           f"{type(generator).__name__}")
    return True


@contextlib.contextmanager
def drawing_from(op: str, generator: Any) -> Iterator[None]:
    """Run the body's MindSpore random draws from ``generator``'s stream, the global stream untouched.

    With ``generator`` ``None`` or the default generator the body draws from the global stream, as in PyTorch.

    Raises:
        RandomGeneratorTypeError: ``generator`` is not a ``torch.Generator`` (PyTorch's TypeError).
    """
    if not own_stream(op, generator):
        yield
        return
    seeds: Any = importlib.import_module("mindspore.common.seed")
    global_seed, counters = seeds._GLOBAL_SEED, dict(seeds._KERNEL_SEED)
    seed, offset = advance(generator, 1)
    seeds._GLOBAL_SEED = mix_seed(seed, offset)
    seeds._reset_op_seed()
    try:
        yield
    finally:
        seeds._GLOBAL_SEED = global_seed
        seeds._KERNEL_SEED.clear()
        seeds._KERNEL_SEED.update(counters)


def generator_wrapper(op: str) -> Callable[[Any], Any]:
    """Wrap MSAdapter's ``op`` (``rand``, ``randn``, ``normal``, ``multinomial``) so ``generator=`` is honoured.

    Returns:
        a factory for the registry's ``kind="wrap"``: original -> the op drawing from its generator's stream.
    """

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def with_generator(*args: Any, generator: Any = None, **kwargs: Any) -> Any:
            with drawing_from(op, generator):
                return original(*args, **kwargs)

        return with_generator

    return wrap


def multinomial_wrapper(multinomial: Any) -> Any:
    """``torch.multinomial`` with a real ``generator=``, and float64 weights with replacement on CPU.

    MSAdapter's CPU path searches float32 uniforms in the weights' cumulative sum, which MindSpore's SearchSorted
    refuses for float64 (``RuntimeError: bad_function_call``; ``WeightedRandomSampler`` passes double weights):
    the weights are searched as float32 (the sampled distribution differs from the double one by float32 rounding).
    """
    with_generator = generator_wrapper("torch.multinomial")(multinomial)

    @functools.wraps(multinomial)
    def torch_multinomial(input: Any, num_samples: int, replacement: bool = False,  # noqa: A002
                          **kwargs: Any) -> Any:
        import mindspore

        if replacement and getattr(input, "dtype", None) == mindspore.float64:
            input = input.astype(mindspore.float32)  # noqa: A001
        return with_generator(input, num_samples, replacement, **kwargs)

    return torch_multinomial


def tensor_multinomial(self: Any, num_samples: int, replacement: bool = False, seed: Any = None, *,
                       generator: Any = None) -> Any:
    """``Tensor.multinomial`` as PyTorch's: ``torch.multinomial(self, ...)`` (MindSpore's own method samples with
    replacement by default and takes no generator: ``w.multinomial(n)`` repeated indices, silently). MindSpore's
    ``seed`` (no such parameter in PyTorch) is refused."""
    from msadapter.ops import random

    if seed is not None:
        raise TypeError("multinomial() got an unexpected argument 'seed' (PyTorch's Tensor.multinomial takes "
                        "generator=; seed a torch.Generator instead)")

    return random.multinomial(self, num_samples, replacement, generator=generator)


_RANDINT_OPTIONS = ("layout", "device", "pin_memory")


def randint_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(low, high, size) from PyTorch's overloads ``randint(high, size)`` and ``randint(low, high, size)``."""
    positional = list(args)
    if len(positional) > 3:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(positional)} given)")
    size = kwargs.pop("size") if "size" in kwargs else (positional.pop() if positional else None)
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if len(positional) == 2:
        low, high = positional
    elif len(positional) == 1 and "high" in kwargs:
        low, high = positional[0], kwargs.pop("high")
    elif len(positional) == 1:
        low, high = kwargs.pop("low", 0), positional[0]
    elif "high" in kwargs:
        low, high = kwargs.pop("low", 0), kwargs.pop("high")
    else:
        raise TypeError("randint() missing required argument 'high'")
    if not isinstance(size, (tuple, list)) and not hasattr(size, "__len__"):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return low, high, tuple(int(dim) for dim in size)


def randint_wrapper(randint: Any) -> Any:
    """Give ``torch.randint`` PyTorch's overloads and a real ``generator=`` on CPU.

    Args:
        randint: MSAdapter's ``randint(*args, **kwargs)`` (MindSpore's ``randint(low, high, size, *, dtype)``).

    Returns:
        ``randint(high, size)`` / ``randint(low, high, size)`` with ``generator``, ``out``, ``dtype``,
        ``requires_grad`` (``layout``, ``device``, ``pin_memory`` accepted: one device here).
    """

    @functools.wraps(randint)
    def torch_randint(*args: Any, generator: Any = None, out: Any = None, dtype: Any = None,
                      requires_grad: bool = False, **kwargs: Any) -> Any:
        for option in _RANDINT_OPTIONS:
            kwargs.pop(option, None)
        low, high, size = randint_arguments(args, kwargs)
        if kwargs:
            raise TypeError(f"randint() got unexpected keyword arguments {sorted(kwargs)}")
        floating = "float" in str(dtype).lower()  # MindSpore's randint draws integers only: cast after, as exact
        with drawing_from("torch.randint", generator):
            if dtype is None or floating:
                tensor = randint(int(low), int(high), size)
            else:
                tensor = randint(int(low), int(high), size, dtype=dtype)
        if floating:
            tensor = tensor.astype(dtype)
        if out is not None:
            return out.copy_(tensor)
        tensor.requires_grad = requires_grad
        return tensor

    return torch_randint
