"""Types of the optional C extension of :mod:`mindspeed_ms.compat.host_memory` and :mod:`.host_outputs`
(``_host_dispatch.c``)."""

from typing import Any, Callable

ABI: int

class HostArray:
    """``(tensor, *, sync=True, dtype=None, flat=False) -> array``: ``host_memory.python_host_array`` in one C call."""

    def __init__(self, setup: Callable[[], tuple[Any, Any, Any]], arrays: dict[tuple[Any, ...], Any],
                 keep: Callable[[tuple[Any, ...], Any, Any], Any], fallback: Callable[..., Any]) -> None: ...
    def __call__(self, tensor: Any, /, *, sync: bool = True, dtype: Any = None, flat: bool = False) -> Any: ...

class NewFloat32:
    """``(shape) -> (tensor, array)``: ``host_outputs.python_new_float32`` in one C call."""

    def __init__(self, setup: Callable[[], tuple[Any, Any, Any]], arrays: dict[tuple[Any, ...], Any],
                 keep: Callable[[Any, tuple[Any, ...]], tuple[Any, Any]],
                 fallback: Callable[[tuple[int, ...]], tuple[Any, Any]]) -> None: ...
    def __call__(self, shape: tuple[int, ...], /) -> tuple[Any, Any]: ...
