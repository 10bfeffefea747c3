"""The switch of :func:`.host_cast.float_operand`: a module of its own, so that the CPU kernels' provider names it as a
target without importing it while it registers (it imports :mod:`.host_cast` for ``Tensor.to``'s wrapper)."""

from __future__ import annotations

__all__ = ["always", "on_host"]


def on_host() -> bool:
    """Whether :func:`.host_cast.float_operand` converts on the host: no, unless the CPU kernels' provider
    (``msadapter_cpu_kernels``, registered only when MindSpore computes on the CPU) replaced this function by
    :func:`always`; reverting it says no again."""
    return False


def always() -> bool:
    """:func:`on_host`'s replacement on the CPU."""
    return True
