"""torch.distributed in one process before any process group exists: what is available, and that every call that
needs a group refuses (PyTorch raises). The collectives themselves are compared on 2 workers by the
collectives' differential run (tests/test_conformance_collectives.py)."""

from __future__ import annotations

from typing import Any, Callable

from conformance.samples import register

D = "torch.distributed"

NO_GROUP: dict[str, Callable[[Any], Any]] = {
    "get_rank": lambda torch: torch.distributed.get_rank(),
    "get_world_size": lambda torch: torch.distributed.get_world_size(),
    "all_reduce": lambda torch: torch.distributed.all_reduce(torch.ones(2)),
    "barrier": lambda torch: torch.distributed.barrier(),
    "broadcast": lambda torch: torch.distributed.broadcast(torch.ones(2), 0),
    "all_gather": lambda torch: torch.distributed.all_gather([torch.ones(2)], torch.ones(2)),
    "new_group": lambda torch: torch.distributed.new_group([0]),
    "get_backend": lambda torch: torch.distributed.get_backend(),
    "get_process_group_ranks": lambda torch: torch.distributed.get_process_group_ranks(None),
    "get_global_rank": lambda torch: torch.distributed.get_global_rank(None, 0),
    "destroy_process_group": lambda torch: torch.distributed.destroy_process_group(),
    "isend": lambda torch: torch.distributed.isend(torch.ones(2), 1),
    "irecv": lambda torch: torch.distributed.irecv(torch.ones(2), 1),
    "send": lambda torch: torch.distributed.send(torch.ones(2), 1),
    "recv": lambda torch: torch.distributed.recv(torch.ones(2), 1),
    "reduce": lambda torch: torch.distributed.reduce(torch.ones(2), 0),
    "gather": lambda torch: torch.distributed.gather(torch.ones(2), None, 0),
    "scatter": lambda torch: torch.distributed.scatter(torch.ones(2), None, 0),
    "reduce_scatter": lambda torch: torch.distributed.reduce_scatter(torch.ones(2), [torch.ones(2)]),
    "reduce_scatter_tensor": lambda torch: torch.distributed.reduce_scatter_tensor(torch.ones(1), torch.ones(2)),
    "all_gather_into_tensor": lambda torch: torch.distributed.all_gather_into_tensor(torch.ones(2), torch.ones(1)),
    "_all_gather_base": lambda torch: torch.distributed._all_gather_base(torch.ones(2), torch.ones(1)),
    "_reduce_scatter_base": lambda torch: torch.distributed._reduce_scatter_base(torch.ones(1), torch.ones(2)),
    "all_to_all_single": lambda torch: torch.distributed.all_to_all_single(torch.ones(2), torch.ones(2)),
    "all_gather_object": lambda torch: torch.distributed.all_gather_object([None], {"a": 1}),
    "gather_object": lambda torch: torch.distributed.gather_object({"a": 1}, [None], 0),
    "broadcast_object_list": lambda torch: torch.distributed.broadcast_object_list([1], 0),
    "batch_isend_irecv": lambda torch: torch.distributed.batch_isend_irecv(
        [torch.distributed.P2POp(torch.distributed.isend, torch.ones(2), 1)]),
}


def _status(torch: Any) -> Any:
    return {"available": torch.distributed.is_available(), "initialized": torch.distributed.is_initialized()}


register(__name__, "status_before_init", (f"{D}.is_available", f"{D}.is_initialized"), _status)
for _name, _call in NO_GROUP.items():
    register(__name__, f"{_name}_without_group_raises", (f"{D}.{_name}",), _call)


def _coalescing_manager_without_group(torch: Any) -> Any:
    from torch.distributed import _coalescing_manager

    with _coalescing_manager(None, async_ops=True):
        torch.distributed.all_reduce(torch.ones(2))


def _p_assert(torch: Any) -> Any:
    from torch.distributed.utils import _p_assert

    _p_assert(True, "fine")
    try:
        _p_assert(False, "not fine", raise_assertion_error=True)
    except AssertionError as error:  # the error class is the contract here
        return str(error)
    return "did not raise"


register(__name__, "coalescing_manager_without_group_raises", (f"{D}._coalescing_manager",),
         _coalescing_manager_without_group)
register(__name__, "utils_p_assert", (f"{D}.utils._p_assert",), _p_assert)
