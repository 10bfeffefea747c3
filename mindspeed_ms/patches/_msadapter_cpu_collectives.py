"""The msadapter_cpu provider's torch.distributed fixes on MindSpore's CPU backend (gloo under msrun).

A private part of :mod:`mindspeed_ms.patches.msadapter_cpu` (its ``register`` calls :func:`register_collectives`);
tests/test_collectives_conformance.py compares each with PyTorch's gloo.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)

_C10D = "msadapter.distributed.distributed_c10d"


def register_collectives(registry: Any) -> None:
    """Register the torch.distributed fixes (tests/test_collectives_conformance.py compares them with gloo)."""
    from mindspeed_ms.compat import cpu_p2p, cpu_reductions
    from mindspeed_ms.compat.cpu_collectives import IN_PLACE_COLLECTIVES, into_caller_wrapper

    for collective in IN_PLACE_COLLECTIVES:
        registry.register(
            f"{_C10D}.{collective}", into_caller_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.distributed.{collective} into a view returns normally and changes neither the view nor "
                    f"its base on CPU (silent: DDP buckets are views of one grad buffer, so gradients stayed each "
                    f"rank's own), and fails on bool; run it on an owned copy (bool as int32), write the result back")
    registry.register(
        f"{_C10D}.all_reduce", cpu_reductions.all_reduce_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.distributed.all_reduce on CPU fails on float64 and bool ('AllReduce failed.'), refuses "
                "ReduceOp.AVG (megatron's average_in_collective, MoE aux-loss tracking) and writes nothing into a "
                "view (DDP buckets); float64 reduced from an all_gather, bool as int32, AVG as SUM / size, result "
                "written back into the caller's tensor")
    registry.register(
        f"{_C10D}.reduce", cpu_reductions.reduce, requires=_MSADAPTER,
        purpose="torch.distributed.reduce has no CPU kernel ('Unsupported op [Reduce]'; MindSpeed's MoE gate); an "
                "all_reduce whose result only the destination keeps")
    for name, wrapper in (("scatter", cpu_reductions.scatter_wrapper), ("gather", cpu_reductions.gather_wrapper)):
        registry.register(
            f"{_C10D}.{name}", wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.distributed.{name} writes nothing into a view and fails on bool on CPU (the distributed "
                    f"optimizer's checkpoint scatters into views of its state buffers); owned buffers, written back")
    registry.register(
        f"{_C10D}.isend", cpu_p2p.isend_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.distributed.isend/send of a bool tensor fails on CPU ('Send failed.'); it travels as int32")
    registry.register(
        f"{_C10D}.irecv", cpu_p2p.irecv_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.distributed.irecv/recv into a view writes nothing on CPU (silent) and fails on bool; receive "
                "into an owned buffer, copy into the caller's tensor when the handle is waited for")
    registry.register(
        f"{_C10D}.batch_isend_irecv", cpu_p2p.batch_isend_irecv, requires=_MSADAPTER,
        purpose="torch.distributed.batch_isend_irecv has no CPU kernel ('DistCommBatchIsendIrecv unregistered'; "
                "MindSpeed's and megatron's p2p exchange); sends posted first, then receives, handles returned")
    from mindspeed_ms.compat import cpu_collectives

    registry.register(
        "mindspore.mint.distributed.all_to_all_single", cpu_collectives.mint_all_to_all_single, requires=_MSADAPTER,
        purpose="mindspore.mint.distributed.all_to_all_single has no CPU kernel (DistCommAllToAllVSingle); MindSpeed's "
                "MindSpore all-to-all (the MoE alltoall_seq dispatcher) calls it with a group name")
    registry.register(
        f"{_C10D}.all_to_all", cpu_collectives.all_to_all, requires=_MSADAPTER,
        purpose="torch.distributed.all_to_all (list) fails on CPU ('ProcessGroup' object has no attribute "
                "'alltoall'; MindSpeed's unaligned Ulysses context parallel); built on all_to_all_single")
