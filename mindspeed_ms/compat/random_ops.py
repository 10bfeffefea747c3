"""Random ops that draw from ``torch.manual_seed``'s stream on MindSpore's CPU backend, as PyTorch's do.

PyTorch draws every random op of a CPU tensor from one generator, so ``torch.set_rng_state`` replays them all
(:mod:`mindspeed_ms.compat.random_state` makes that hold here). Under MSAdapter on CPU three draw elsewhere:

* ``torch.nn.init.normal_`` / ``uniform_`` (and ``xavier_*`` / ``kaiming_*`` through them) fill from NumPy's
  global generator (``mindspore.common.initializer``): the RNG state and megatron's RNG tracker, which forks
  the state around ``init_method(weight)``, did not reach model initialisation. PyTorch's are
  ``tensor.normal_(mean, std)`` / ``tensor.uniform_(a, b)`` under ``no_grad``; so are these.
* ``Tensor.normal_`` raises (InplaceNormal has no CPU kernel): samples of ``torch.randn``, written back.
* ``torch.bernoulli`` compared its samples with 0.5 whatever the probabilities and returned int32; it
  compares with ``input`` and keeps its dtype. ``Tensor.bernoulli_`` raised ("not supported on this device").
* ``Tensor.random_`` raises (InplaceRandom has no CPU kernel; MSAdapter's ``RandomSampler`` calls it, so a
  shuffling ``DataLoader`` failed): NumPy draws seeded from the stream's counters (or from ``generator``).
* ``torch.randperm`` calls MindSpore's RandpermV2 with seed 0 and offset 0, so every call returned the same
  permutation whatever the seed; here it takes its seed from the stream (or from ``generator``).
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.compat.inplace import write_back
from mindspeed_ms.compat.inplace_checks import FLOATING, InPlaceWriteError, category, check_inplace
from mindspeed_ms.compat.random_generator import advance, drawing_from, mix_seed, own_stream

__all__ = ["bernoulli", "bernoulli_", "random_", "normal_", "init_normal_", "init_uniform_", "randperm_wrapper"]


def normal_(self: Any, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
    """Fill ``self`` with N(mean, std**2) samples in place (``Tensor.normal_``; no CPU InplaceNormal kernel).

    Raises:
        InPlaceWriteError: ``std < 0``, or ``self`` not floating point (PyTorch's refusals; nothing written).
    """
    import mindspore
    import torch  # MSAdapter's: its randn draws from torch.manual_seed's stream

    if std < 0:
        raise InPlaceWriteError("normal_", "argument", f"normal expects std >= 0.0, but found std {std}")
    if category(self) != FLOATING:
        raise InPlaceWriteError("normal_", "argument", f'"normal_kernel_cpu" not implemented for {self.dtype} '
                                                       f"(floating point only)")
    check_inplace("normal_", self)
    dtype = torch.float64 if self.dtype == mindspore.float64 else torch.float32
    with drawing_from("Tensor.normal_", generator):
        samples = torch.randn(tuple(self.shape), dtype=dtype)
    return write_back("normal_", self, samples * std + mean)


def _unit(shape: tuple[int, ...], dtype: Any) -> Any:
    import mindspore
    import torch

    return torch.rand(shape, dtype=torch.float64 if dtype == mindspore.float64 else torch.float32)


def _check_probabilities(op: str, p: Any) -> None:
    import numpy as np

    values = np.asarray(p.asnumpy() if hasattr(p, "asnumpy") else p, dtype=np.float64)
    if values.size and not (np.all(values >= 0) and np.all(values <= 1)):  # NaN fails both
        raise InPlaceWriteError(op, "argument", f"{op} expects p to be in [0, 1], but got p={values.ravel()[0]}"
                                if values.ndim == 0 else f"{op}: Expected p_in >= 0 && p_in <= 1 to be true, "
                                                         f"but got false.")


def bernoulli(input: Any, p: Any = None, *, generator: Any = None, out: Any = None) -> Any:  # noqa: A002
    """Return 1 where a uniform sample falls below ``input`` (or ``p``), else 0, in ``input``'s dtype.

    Raises:
        InPlaceWriteError: a probability outside [0, 1], or a non-float ``input`` without ``p``.
    """
    probabilities = input if p is None else p
    if p is None and category(input) != FLOATING:
        raise InPlaceWriteError("bernoulli", "argument", f'"bernoulli_tensor_cpu_self_" not implemented for '
                                                         f"'{input.dtype}'")
    _check_probabilities("bernoulli", probabilities)
    with drawing_from("torch.bernoulli", generator):
        unit = _unit(tuple(input.shape), input.dtype)
    samples = (unit < probabilities).astype(input.dtype)
    if out is not None:
        return out.copy_(samples)
    return samples


def tensor_bernoulli(self: Any, p: Any = None, *, generator: Any = None) -> Any:
    """``Tensor.bernoulli``: :func:`bernoulli` of ``self`` (the method names its tensor ``self``, as PyTorch's does)."""
    return bernoulli(self, p, generator=generator)


def bernoulli_(self: Any, p: Any = 0.5, *, generator: Any = None) -> Any:
    """Fill ``self`` with Bernoulli(p) samples in place (``Tensor.bernoulli_``; refused on the CPU backend)."""
    _check_probabilities("bernoulli_", p)
    check_inplace("bernoulli_", self)
    with drawing_from("Tensor.bernoulli_", generator):
        unit = _unit(tuple(self.shape), self.dtype)
    return write_back("bernoulli_", self, unit < p)


#: exclusive upper bound of ``random_()`` without ``to``, per dtype (PyTorch: the integer range, or the floats'
#: exactly representable integers: 2**mantissa digits)
_RANDOM_UPPER = {"Float64": 2**53 + 1, "Float32": 2**24 + 1, "Float16": 2**11 + 1, "BFloat16": 2**8 + 1,
                 "Int64": 2**63, "Int32": 2**31, "Int16": 2**15, "Int8": 2**7, "UInt8": 2**8, "Bool": 2}


def random_(self: Any, from_: int = 0, to: int | None = None, *, generator: Any = None, **kwargs: Any) -> Any:
    """Fill ``self`` with integers from [from, to) in place (``Tensor.random_``; no CPU InplaceRandom kernel).

    ``random_(to)`` is [0, to); ``random_()`` spans the dtype (PyTorch's bounds). Draws come from the random
    stream (``torch.manual_seed`` / ``set_rng_state`` replay them) or from ``generator``.

    Raises:
        InPlaceWriteError: an empty range or an unsupported dtype (nothing written).
    """
    import mindspore
    import numpy as np
    from mindspore.ops.function.random_func import _get_seed

    low = kwargs.pop("from", from_)
    if kwargs:
        raise InPlaceWriteError("random_", "unsupported", f"random_(): unexpected arguments {sorted(kwargs)}")
    if to is None and low != 0:
        low, to = 0, low  # random_(to)
    high = _RANDOM_UPPER.get(str(self.dtype)) if to is None else int(to)
    if high is None:
        raise InPlaceWriteError("random_", "argument", f"random_(): not implemented for {self.dtype}")
    if not int(low) < high:
        raise InPlaceWriteError("random_", "argument", f"random_ expects 'from' to be less than 'to', but got "
                                                       f"from={low} >= to={high}")
    count = int(np.prod(tuple(self.shape), dtype=np.int64))
    if not own_stream("Tensor.random_", generator):  # None or the default generator: the global stream
        seeds = _get_seed(None, "random_")
    else:
        seeds = advance(generator, count)
    values = np.random.Generator(np.random.PCG64(list(seeds))).integers(int(low), high, size=tuple(self.shape),
                                                                        dtype=np.int64)
    check_inplace("random_", self)
    return write_back("random_", self, mindspore.Tensor(np.asarray(values, dtype=np.float64 if category(
        self) == FLOATING else np.int64)))


def init_normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Any:
    """Fill ``tensor`` from N(mean, std**2) without recording autograd (``torch.nn.init.normal_``)."""
    import torch

    with torch.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def init_uniform_(tensor: Any, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Any:
    """Fill ``tensor`` from U(a, b) without recording autograd (``torch.nn.init.uniform_``)."""
    import torch

    with torch.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def randperm_wrapper(randperm: Any) -> Any:
    """Give ``torch.randperm`` on CPU a seed from the random stream, or from ``generator``.

    Args:
        randperm: MSAdapter's ``randperm`` (``msadapter.ops.random.randperm``).

    Returns:
        ``randperm`` whose permutation follows ``torch.manual_seed`` / ``set_rng_state``; a ``generator``
        advances by the permutation's length, as PyTorch's does.
    """
    import functools

    @functools.wraps(randperm)
    def seeded_randperm(n: int, *, generator: Any = None, out: Any = None, dtype: Any = None,
                        requires_grad: bool = False, **kwargs: Any) -> Any:
        import mindspore
        from mindspore import ops
        from mindspore.ops.function.random_func import _get_seed

        if out is not None or int(n) < 0:
            return randperm(n, generator=generator, out=out, dtype=dtype or mindspore.int64,
                            requires_grad=requires_grad, **kwargs)
        if not own_stream("torch.randperm", generator):  # None or the default generator: the global stream
            seed, offset = _get_seed(None, "randperm")
            # both 0: an unseeded process, where MindSpore's random kernels take fresh entropy (seed -1)
            seed = -1 if seed == offset == 0 else mix_seed(seed, offset)
        else:
            seed = mix_seed(*advance(generator, int(n)))
        permutation = ops.RandpermV2(seed, 0, dtype or mindspore.int64)(int(n))
        permutation.requires_grad = requires_grad
        return permutation

    return seeded_randperm

