"""Types of the optional C extension of :mod:`mindspeed_ms.compat.host_linear` (``_host_linear.c``)."""

from typing import Any, Callable

ABI: int

class Linear:
    """HostLinear's bodies: ``host_linear.python_forward`` and ``python_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 matmul: Callable[[Any, Any, Any], None], bias_add: Callable[[Any, Any, Any], None],
                 column_sum: Callable[[Any, Any], None], refuse: Callable[[], None]) -> None: ...
    def forward(self, ctx: Any, input: Any, weight: Any, bias: Any, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any]: ...
