"""Custom ``torch.autograd.Function`` as PyTorch runs it (tests/conformance/cases/ops_autograd_function.py).

MSAdapter's ``Function`` is MindSpore's ``FunctionBase``: its C++ ``apply`` runs ``forward`` and hands what
``backward`` returns to MindSpore's engine. Measured on MindSpore 2.7.1 + MSAdapter 0.5.0b1, against PyTorch 2.13:

- a gradient of a broadcast shape is reduced without PyTorch's ``sum_to`` rule: a ``(3, 4)`` gradient for a
  ``(1, 4)`` input gave the leaf a ``(4,)`` gradient, ``(2, 3, 5)`` for ``(3, 1)`` a ``(5,)`` one (PyTorch: the
  input's shape; megatron's fused bias GeLU's ``[h]`` bias got one number in a GPT-3 run, which a wrap of those
  three Functions' backward fixed before this module: tests/test_compat_bias_gradients.py);
- a backward returning more gradients than the forward had inputs is accepted when the extra ones are tensors
  (PyTorch: RuntimeError; only trailing ``None`` may be dropped);
- ``ctx.save_for_backward`` has no version check: a saved tensor modified in place afterwards gave a silently wrong
  gradient (PyTorch: RuntimeError "one of the variables needed for gradient computation has been modified by an
  inplace operation");
- the new-style ``setup_context`` staticmethod is ignored (``forward(x)`` was called with the ctx: TypeError), and
  ``Function.apply(x=...)`` with keywords raised TypeError (PyTorch binds them to the forward's parameters);
- ``grad_fn.name()`` was the class name (PyTorch: ``<Class>Backward``, the class of the ctx too).

:func:`apply_wrapper` wraps ``Function.apply``: each Function class gets, once, a subclass named
``<Class>Backward`` (what MindSpore's engine runs) whose forward calls the original one (or ``forward`` then
``setup_context``) and remembers each input's shape and dtype, and whose backward validates the returned gradients
as PyTorch's engine does: the count, None for non-tensor inputs, ``sum_to`` the input's shape (or PyTorch's
RuntimeError), the input's dtype. The saved tensors' versions are taken after the forward and checked when the
backward reads ``ctx.saved_tensors``. A gradient already of the input's shape and dtype passes untouched.

The per-call loops (the inputs' shapes and dtypes, the saved tensors' versions and their check, the gradients that
pass unchanged) run in one C call each where ``mindspeed_ms.compat._function_checks`` is built (``ACCELERATED``):
the same reads and comparisons, anything else (an error to raise, a gradient to sum or cast) in Python below.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from mindspeed_ms.compat.errors import TorchRefusalError

try:  # the loops below in one C call each (setup.py builds it where it can)
    from . import _function_checks as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

#: The C module's interface this file is written for (``FUNCTION_CHECKS_ABI`` in ``_function_checks.c``): an older
#: build in a tree built in place is not used
FUNCTION_CHECKS_ABI = 1
if _compiled is not None and getattr(_compiled, "ABI", None) != FUNCTION_CHECKS_ABI:
    _compiled = None  # type: ignore[assignment]
#: whether the C loops run (else the Python ones: the same results)
ACCELERATED = _compiled is not None

__all__ = ["ACCELERATED", "apply_wrapper", "host_function", "own_function", "checked_gradients", "input_metadata",
           "passed_gradients",
           "check_versions", "python_input_metadata", "python_saved_versions", "saved_versions", "sum_to",
           "unchanged_versions"]

OP = "torch.autograd.Function"
#: the attribute of a Function class holding its runner (looked up in the class's own ``__dict__``)
_RUNNER = "_mindspeed_ms_runner"
#: keys of a ctx's ``__dict__``: the inputs' (shape, dtype), the saved tensors' versions, "mark_dirty was called"
_INPUTS, _SAVED, _DIRTY = "_mindspeed_ms_inputs", "_mindspeed_ms_versions", "_mindspeed_ms_dirty"


def sum_to(grad: Any, shape: tuple[int, ...], name: str, index: int) -> Any:
    """``grad`` summed to ``shape`` by PyTorch's rule (leading dims summed away, dims where ``shape`` has 1 summed
    with keepdim); a shape that cannot be reached that way raises PyTorch's RuntimeError."""
    got = tuple(grad._shape)
    extra = len(got) - len(shape)
    if extra < 0 or any(n != 1 and n != g for n, g in zip(shape, got[extra:])):
        raise TorchRefusalError(OP, f"Function {name} returned an invalid gradient at index {index} - got "
                                    f"{list(got)} but expected shape compatible with {list(shape)}")
    kept = tuple(extra + i for i, n in enumerate(shape) if n == 1 and got[extra + i] != 1)
    if kept:
        grad = grad.sum(dim=kept, keepdim=True)
    if extra:
        grad = grad.sum(dim=tuple(range(extra)))
    return grad


def python_input_metadata(args: tuple[Any, ...], tensor_type: Any) -> list[Any]:
    """Each of ``args``' ``(shape, dtype)`` where it is a ``tensor_type``, else None."""
    return [(arg._shape, arg._dtype) if isinstance(arg, tensor_type) else None for arg in args]


def python_saved_versions(saved: tuple[Any, ...]) -> tuple[Any, ...]:
    """Each saved tensor's ``_version`` (None for what has none)."""
    return tuple(getattr(t, "_version", None) for t in saved)


def _undecided_versions(saved: tuple[Any, ...], versions: tuple[Any, ...]) -> bool:
    """Without the C module: the Python check (:func:`check_versions`) decides each time."""
    return False


def _undecided_gradients(inputs: list[Any], needed: tuple[bool, ...], result: Any) -> None:
    """Without the C module: :func:`checked_gradients` decides each time."""
    return None


if _compiled is not None:
    input_metadata, saved_versions = _compiled.inputs, _compiled.versions
    unchanged_versions, passed_gradients = _compiled.unchanged, _compiled.passed
else:
    input_metadata, saved_versions = python_input_metadata, python_saved_versions
    unchanged_versions, passed_gradients = _undecided_versions, _undecided_gradients


def checked_gradients(name: str, inputs: list[Any], needed: tuple[bool, ...], result: Any) -> tuple[Any, ...]:
    """What a backward returned, as PyTorch's engine passes it on: one gradient per forward input (trailing
    ``None`` dropped), each of its input's shape and dtype; ``inputs`` holds ``(shape, dtype)`` per tensor input,
    None for a non-tensor one; ``needed``: whether each input requires a gradient."""
    grads = result if isinstance(result, tuple) else (result,)
    expected = len(inputs)
    if len(grads) != expected:
        if len(grads) < expected or any(g is not None for g in grads[expected:]):
            raise TorchRefusalError(OP, f"function {name} returned an incorrect number of gradients (expected "
                                        f"{expected}, got {len(grads)})")
        grads = grads[:expected]
    out = list(grads)
    for index, (grad, meta) in enumerate(zip(grads, inputs)):
        if grad is None:
            continue
        if meta is None:
            raise TorchRefusalError(OP, f"function {name} returned a gradient different than None at position "
                                        f"{index + 1}, but the corresponding forward input was not a Variable")
        if not needed[index]:  # a tensor that does not require a gradient: PyTorch drops its gradient unchecked
            out[index] = None
            continue
        shape, dtype = meta
        if grad._shape != shape:
            grad = sum_to(grad, shape, name, index)
        grad_dtype = grad._dtype  # the same object for the same dtype; MindSpore's ``!=`` costs ~4 us (pybind11)
        if grad_dtype is not dtype and grad_dtype != dtype:
            grad = grad.to(dtype)
        out[index] = grad
    return tuple(out)


@functools.lru_cache(maxsize=1)
def own_function() -> type:
    """The base class of mindspeed_ms's own autograd Functions: MSAdapter's ``Function`` whose ``apply`` is MindSpore's
    engine entry itself (``FunctionBase.apply``, bound to the class it is called on, as a classmethod).

    ``Function.apply`` on MindSpore is ``_Function.apply`` (``super().apply(cls, *args, **kwargs)``), wrapped by
    :func:`apply_wrapper`, which hands a class of mindspeed_ms's on unchanged (:func:`_make_runner`: our Functions give
    exact gradients, tested against PyTorch): two Python frames a call that decide nothing for ours (16 applies a step
    of the tiny example). Where MSAdapter's ``Function`` is not MindSpore's ``FunctionBase`` (another MSAdapter), it is
    returned as it is.
    """
    from msadapter.autograd import Function

    try:
        from mindspore._c_expression import FunctionBase
    except ImportError:  # another MindSpore: MSAdapter's Function as it is
        return Function  # type: ignore[no-any-return]  # MSAdapter's classes are untyped
    if not (isinstance(Function, type) and issubclass(Function, FunctionBase)):
        return Function  # type: ignore[no-any-return]

    class OwnFunction(Function):  # type: ignore[misc]  # MSAdapter's classes are untyped
        """MSAdapter's Function applied through MindSpore's engine entry directly (see :func:`own_function`)."""

        apply: Any = classmethod(FunctionBase.apply)

    return OwnFunction


def host_function(name: str, doc: str, forward: Any, backward: Any) -> type:
    """A Function of ours (:func:`own_function`'s class) named ``name``, with ``forward`` and ``backward`` as its
    static methods (the host Functions' bodies: ``forward(ctx, *inputs)``, ``backward(ctx, *grads)``)."""
    import types

    def body(namespace: dict[str, Any]) -> None:
        namespace.update(__doc__=doc, __module__=forward.__module__, forward=staticmethod(forward),
                         backward=staticmethod(backward))

    return types.new_class(name, (own_function(),), exec_body=body)


def _make_runner(cls: type, base_setup_context: Any) -> type:
    """The subclass of ``cls`` that MindSpore's engine runs (see the module's docstring); ``cls`` itself for the
    Functions of mindspeed_ms (each gives exact gradients, tested against PyTorch: no per-call checks)."""
    from mindspore import Tensor
    from mindspore._c_expression import FunctionBase

    if cls.__module__.startswith("mindspeed_ms."):
        setattr(cls, _RUNNER, cls)
        return cls
    base_saved, base_dirty = FunctionBase.__dict__["saved_tensors"], FunctionBase.__dict__["dirty_tensors"]
    forward, backward = cls.forward, cls.backward  # type: ignore[attr-defined]
    setup_context = getattr(cls, "setup_context", base_setup_context)
    if setup_context is base_setup_context:
        setup_context = None
    name = f"{cls.__name__}Backward"

    def run_forward(ctx: Any, *args: Any) -> Any:
        if setup_context is None:
            output = forward(ctx, *args)
        else:
            output = forward(*args)
            setup_context(ctx, args, output)
        flags = ctx.__dict__  # MindSpore's own attributes (_shape, _dtype): the properties cost ~20 us here
        flags[_INPUTS] = input_metadata(args, Tensor)
        if _SAVED in flags:  # the versions PyTorch's check compares with: those when the forward returned
            flags[_SAVED] = saved_versions(base_saved.__get__(ctx))
        if _DIRTY in flags:
            _RETURNED_DIRTY.append(_dirty_positions(output, base_dirty.__get__(ctx)))
        return output

    def run_backward(ctx: Any, *grad_outputs: Any) -> Any:
        result = backward(ctx, *grad_outputs)
        inputs, needed = ctx.__dict__[_INPUTS], ctx.needs_input_grad
        passed = passed_gradients(inputs, needed, result)
        return checked_gradients(name, inputs, needed, result) if passed is None else passed

    def save(ctx: Any, tensors: tuple[Any, ...]) -> None:
        base_saved.__set__(ctx, tensors)
        ctx.__dict__[_SAVED] = None

    def saved_tensors(ctx: Any) -> tuple[Any, ...]:
        saved = base_saved.__get__(ctx)
        versions = ctx.__dict__.get(_SAVED)
        if versions and not unchanged_versions(saved, versions):
            check_versions(ctx, saved, versions)
        return saved

    def mark(ctx: Any, tensors: tuple[Any, ...]) -> None:
        base_dirty.__set__(ctx, tensors)
        ctx.__dict__[_DIRTY] = True

    runner = type(name, (cls,), {
        "forward": staticmethod(run_forward), "backward": staticmethod(run_backward),
        "saved_tensors": property(saved_tensors, save), "dirty_tensors": property(base_dirty.__get__, mark),
        "__module__": cls.__module__, "__qualname__": name, "__doc__": cls.__doc__,
        "_mindspeed_ms_new_style": setup_context is not None})
    setattr(cls, _RUNNER, runner)
    return runner


#: what the forward that just returned gave back of its ``mark_dirty`` inputs, for :func:`apply_wrapper` (the
#: engine rebased those inputs' history onto the Function but returns new Python objects; PyTorch returns them)
_RETURNED_DIRTY: list[dict[int, Any]] = []


def _dirty_positions(output: Any, dirty: tuple[Any, ...]) -> dict[int, Any]:
    outputs = output if isinstance(output, tuple) else (output,)
    return {i: out for i, out in enumerate(outputs) if any(out is d for d in dirty)}


def _with_dirty_inputs(result: Any, positions: dict[int, Any]) -> Any:
    if not isinstance(result, tuple):
        return positions.get(0, result)
    return tuple(positions.get(i, out) for i, out in enumerate(result))


def check_versions(ctx: Any, saved: tuple[Any, ...], versions: tuple[Any, ...] | None) -> None:
    """PyTorch's check when a backward reads ``ctx.saved_tensors``: none was modified in place since the forward.
    The tensors stay in MindSpore's slot: kept in the ctx's ``__dict__``, a saved output would hold its own graph
    node alive (a reference cycle through C++ that Python's collector cannot see)."""
    if not versions:
        return
    for index, (tensor, version) in enumerate(zip(saved, versions)):
        if version is not None and tensor._version != version:
            raise TorchRefusalError(
                OP, f"one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{tensor.dtype} {list(tensor.shape)}], saved at index {index} by "
                    f"{type(ctx).__name__}, is at version {tensor._version}; expected version {version} "
                    f"instead. Clone the tensor before modifying it in place, or save a copy")


def _bind(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], new_style: bool) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` as the forward's positional arguments (PyTorch's ``apply`` binds them too)."""
    signature = inspect.signature(cls.forward)  # type: ignore[attr-defined]
    if not new_style:  # the ctx parameter
        parameters = list(signature.parameters.values())[1:]
        signature = signature.replace(parameters=parameters)
    bound = signature.bind(*args, **kwargs)
    if new_style:
        bound.apply_defaults()
    if bound.kwargs:
        raise TorchRefusalError(OP, f"{cls.__name__}.apply: keyword arguments {sorted(bound.kwargs)} go to the "
                                    f"forward's **kwargs, which MindSpore's Function cannot pass; pass them "
                                    f"positionally or as named parameters of forward")
    return bound.args


def apply_wrapper(apply: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``Function.apply(cls, *args, **kwargs)`` (a classmethod): run ``cls``'s runner instead of ``cls``."""
    from msadapter.autograd.function import Function

    base_setup_context = Function.setup_context

    def run(cls: type, *args: Any, **kwargs: Any) -> Any:
        runner = cls.__dict__.get(_RUNNER)
        if runner is None:
            runner = _make_runner(cls, base_setup_context)
        if runner is cls:
            return apply(cls, *args, **kwargs)
        if kwargs or runner.__dict__["_mindspeed_ms_new_style"]:
            args = _bind(cls, args, kwargs, runner.__dict__["_mindspeed_ms_new_style"])
        mark = len(_RETURNED_DIRTY)
        try:
            result = apply(runner, *args)
            if len(_RETURNED_DIRTY) > mark:
                result = _with_dirty_inputs(result, _RETURNED_DIRTY[-1])
        finally:
            del _RETURNED_DIRTY[mark:]
        return result

    run.__wrapped__ = apply  # type: ignore[attr-defined]
    run.__name__, run.__qualname__, run.__doc__ = apply.__name__, apply.__qualname__, apply.__doc__
    return run
