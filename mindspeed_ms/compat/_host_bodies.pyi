"""Types of the optional C extension of :mod:`mindspeed_ms.compat.host_linear`, :mod:`.host_bda`,
:mod:`.host_mlp`, :mod:`.host_layer_norm` and :mod:`.host_attention` (``_host_bodies.c``)."""

from typing import Any, Callable

ABI: int

class Linear:
    """HostLinear's bodies: ``host_linear.python_forward`` and ``python_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 matmul: Callable[[Any, Any, Any], None], bias_add: Callable[[Any, Any, Any], None],
                 column_sum: Callable[[Any, Any], None], refuse: Callable[[], None]) -> None: ...
    def forward(self, ctx: Any, input: Any, weight: Any, bias: Any, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any]: ...

class BiasDropoutAdd:
    """HostBiasDropoutAdd's bodies: ``host_bda.python_forward`` and ``python_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 bias_add: Callable[[Any, Any, Any], None], add: Callable[[Any, Any], None],
                 copy_into: Callable[..., None], column_sum: Callable[[Any, Any], None]) -> None: ...
    def forward(self, ctx: Any, x: Any, residual: Any, bias: Any, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any]: ...

class MLP:
    """HostMLP's bodies: ``host_mlp.python_forward`` and ``python_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 matmul: Callable[[Any, Any, Any], None], bias_add: Callable[[Any, Any, Any], None],
                 column_sum: Callable[[Any, Any], None], refuse: Callable[[], None],
                 take: Callable[[int, tuple[int, ...]], tuple[Any, ...]], give: Callable[[tuple[Any, ...]], None],
                 gelu_forward: Callable[..., Any], gelu_backward: Callable[..., Any],
                 kernel_refused: Callable[[], None]) -> None: ...
    def forward(self, ctx: Any, input: Any, fc1: Any, bias: Any, fc2: Any, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any, Any]: ...

class LayerNorm:
    """HostLayerNorm's bodies: ``host_layer_norm.python_forward`` and ``python_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 layer_norm_forward: Callable[..., Any], layer_norm_backward: Callable[..., Any],
                 copy_rows: Callable[[Any], Any], contiguous: Callable[[Any], Any]) -> None: ...
    def forward(self, ctx: Any, input: Any, weight: Any, bias: Any, n: int, eps: float, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any, None, None]: ...

class Attention:
    """HostAttention's and HostAttentionQKV's bodies: ``host_attention.python_forward``, ``python_backward``,
    ``python_qkv_forward`` and ``python_qkv_backward`` in one C call each."""

    def __init__(self, host_array: Callable[..., Any], new_float32: Callable[[tuple[int, ...]], tuple[Any, Any]],
                 forward_in_halves: Callable[..., Any], backward_in_halves: Callable[..., None],
                 one_blas_thread: Callable[[], None], refuse: Callable[[], None], rope_backward: Callable[..., None],
                 empty: Callable[[tuple[int, ...]], Any]) -> None: ...
    def forward(self, ctx: Any, query: Any, key: Any, value: Any, plan: Any, /) -> Any: ...
    def backward(self, ctx: Any, grad: Any, /) -> tuple[Any, Any, Any, None]: ...
    def qkv_forward(self, ctx: Any, qkv: Any, plan: Any, /) -> Any: ...
    def qkv_backward(self, ctx: Any, grad: Any, /) -> tuple[Any, None]: ...
