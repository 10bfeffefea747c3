"""Types of the optional C extension of :func:`mindspeed_ms.compat.inplace.view_adder` (``_view_add.c``)."""

from typing import Any, Callable

ABI: int

class ViewAdd:
    """``(tensor, other) -> bool``: :func:`mindspeed_ms.compat.inplace.add_through_view` in one C call."""

    def __init__(self, float32: Any, float64: Any, sync: Callable[[], Any], address: Callable[[Any], int],
                 stride: Callable[[Any], Any], records_grad: Callable[[Any], bool]) -> None: ...
    def __call__(self, tensor: Any, other: Any, /) -> bool: ...

class InplaceAdd:
    """``Tensor.add_`` of ``dtype`` tensors through ``adder`` first, else ``slow`` (:func:`mindspeed_ms.compat.inplace.
    view_adder_front`)."""

    adder: ViewAdd
    slow: Callable[..., Any]
    dtype: Any
    def __init__(self, adder: ViewAdd, slow: Callable[..., Any], dtype: Any) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, owner: Any = None) -> Any: ...

def host_add(target: Any, source: Any, /) -> None:
    """``target += source`` element by element over C-contiguous float32/float64 buffers of one size."""
