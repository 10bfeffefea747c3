"""Types of the optional C extension of :mod:`mindspeed_ms.compat.host_layer_norm`, :mod:`.host_bda` and
:mod:`.host_linear` (``_host_wrappers.c``)."""

from typing import Any, Callable

ABI: int

class LayerNorm:
    """``(input, normalized_shape, weight=None, bias=None, eps=1e-5)``: the function of
    ``host_layer_norm.python_layer_norm_wrapper`` in one C call."""

    def __init__(self, op: Callable[..., Any], function: Callable[[], Any], float32: Any,
                 min_elements: int) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class BiasDropoutAdd:
    """``(x_with_bias, residual, prob, training)``: ``host_bda.python_bias_dropout_add_wrapper``'s function in one C
    call."""

    def __init__(self, op: Callable[..., Any], function: Callable[[], Any], float32: Any,
                 contiguous: Callable[[Any], bool]) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class Linear:
    """``host_linear.python_linear_wrapper(op)``'s function in one C call: megatron's parameters bound, the plain
    case to ``apply(input, weight, bias)``, anything else to ``op`` with every argument by keyword."""

    __wrapped__: Any

    def __init__(self, op: Callable[..., Any], apply: Callable[[Any, Any, Any], Any], float32: Any,
                 contiguous: Callable[[Any], bool], autocast: Callable[[str], bool]) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
