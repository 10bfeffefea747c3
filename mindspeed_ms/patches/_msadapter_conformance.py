"""The msadapter provider's conformance registrations: dtype promotion, refusals, float64 scalars, defaults.

Not a provider itself (its name starts with ``_``): :mod:`mindspeed_ms.patches.msadapter` calls
:func:`register_conformance` from its ``register``. Each replacement lives in :mod:`mindspeed_ms.compat` and is compared
with real PyTorch by the conformance case named in its registration's docstring.
"""

from __future__ import annotations

from typing import Any

from mindspeed_ms.versions import MINDSPORE_REQUIREMENT, MSADAPTER_REQUIREMENT

from ._msadapter_opinfo import register_opinfo_fixes

_MSADAPTER = (MSADAPTER_REQUIREMENT, MINDSPORE_REQUIREMENT)

_TENSOR = "mindspore.common.tensor.Tensor"
_POINTWISE = "msadapter.ops.pointwise"
#: Tensor methods that do not exist under MSAdapter (their torch function is patched alone)
_NOT_ON_TENSOR = frozenset({"exp2"})
#: operator / method -> promoting_binary_wrapper options (tests/conformance/cases/ops_binary.py)
_BINARY = {
    "__add__": {}, "__sub__": {"subtraction": True}, "__rsub__": {"subtraction": True, "reflected": True},
    "__mul__": {}, "__truediv__": {"true_division": True}, "__floordiv__": {}, "__mod__": {}, "__pow__": {},
}
_BINARY_FUNCTIONS = {"add": {}, "sub": {"subtraction": True}, "mul": {}, "div": {"true_division": True},
                     "true_divide": {"true_division": True}, "floor_divide": {}, "remainder": {}, "pow": {}}


def register_conformance(registry: Any) -> None:
    """Register the conformance fixes of MSAdapter's torch API (every MindSpore device)."""
    _register_conformance(registry)
    _register_conformance_misc(registry)
    register_opinfo_fixes(registry)


def _register_conformance(registry: Any) -> None:
    """Register the dtype-promotion fixes (tests/conformance compares them with PyTorch)."""
    from mindspeed_ms.compat import promotion

    for name in promotion.FLOAT_MATH:
        for target in (f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"):
            if name in _NOT_ON_TENSOR and target.startswith(_TENSOR):
                continue
            registry.register(
                target, promotion.float_math_wrapper, kind="wrap", requires=_MSADAPTER,
                purpose=f"torch.{name} of an integer or bool tensor fails in MindSpore's kernel ('Unsupported data "
                        f"type') or stays integral; PyTorch computes in the default float dtype")
    for name in promotion.ROUNDING:
        for target in (f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, promotion.rounding_wrapper(name), kind="wrap", requires=_MSADAPTER,
                purpose=f"torch.{name} of an integer tensor fails (no integer kernel; PyTorch: the identity) and of a "
                        f"bool tensor is refused by PyTorch")
    refusals = {"abs": ("torch.abs", '"abs_cpu" not implemented for \'Bool\''),
                "relu": ("torch.relu", "Boolean inputs not supported for relu")}
    for name, (op, message) in refusals.items():
        targets = [f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"]
        if name == "relu":
            targets.append("msadapter.nn.functional.relu")
        for target in targets:
            registry.register(
                target, promotion.bool_refusing_wrapper(op, message), kind="wrap", requires=_MSADAPTER,
                purpose=f"{op} of a bool tensor returns it unchanged; PyTorch refuses it")
    for name, module, wrapper, why in (
            ("sign", _POINTWISE, promotion.sign_wrapper, "fails on bool (PyTorch: the tensor itself)"),
            ("isinf", "msadapter.ops.comparison", promotion.isinf_wrapper, "fails on bool (PyTorch: all False)"),
            ("square", _POINTWISE, promotion.square_wrapper, "fails on bool (PyTorch: int64)")):
        for target in (f"{module}.{name}", f"{_TENSOR}.{name}"):
            registry.register(target, wrapper, kind="wrap", requires=_MSADAPTER, purpose=f"torch.{name} {why}")
    registry.register(
        f"{_TENSOR}.__invert__", promotion.invert, requires=_MSADAPTER,
        purpose="~tensor is a logical not on every dtype (~tensor([1, -2]) gives bools; PyTorch: a bitwise not) and "
                "runs on floats (PyTorch: TypeError)")
    zero_dim = ("float16 tensor {op} 0-d float32 tensor is float32 (PyTorch: a 0-d tensor does not raise a "
                "dimensioned tensor's dtype within its category: float16)")
    for name, options in _BINARY.items():
        registry.register(
            f"{_TENSOR}.{name}", promotion.promoting_binary_wrapper(f"Tensor.{name}", **options), kind="wrap",
            requires=_MSADAPTER, purpose=zero_dim.format(op=name) + (
                "; a bool subtraction runs where PyTorch refuses it" if options.get("subtraction") else ""))
    for name, options in _BINARY_FUNCTIONS.items():
        for target in (f"{_POINTWISE}.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, promotion.promoting_binary_wrapper(f"torch.{name}", **options), kind="wrap",
                requires=_MSADAPTER, purpose=zero_dim.format(op=f"torch.{name}"))
    for name in ("__and__", "__or__", "__xor__"):
        reflected = name.replace("__", "__r", 1)
        registry.register(
            f"{_TENSOR}.{reflected}", promotion.reflected_bitwise(name), create_dummy=True, requires=_MSADAPTER,
            purpose=f"int {name.strip('_')} tensor raises TypeError: Tensor has no {reflected}")
    from mindspeed_ms.compat import reductions

    for target, replacement, why in (
            ("msadapter.linalg.vector_norm", reductions.vector_norm, "torch.linalg.vector_norm"),
            ("msadapter.linalg.norm", reductions.linalg_norm, "torch.linalg.norm"),
            ("msadapter.diff", reductions.diff, "torch.diff")):
        registry.register(
            target, replacement, create_dummy=True, requires=_MSADAPTER,
            purpose=f"{why} does not exist under MSAdapter (msadapter/linalg ships __int__.py, not __init__.py)")
    registry.register(
        "msadapter.ops.comparison.equal", reductions.equal, requires=_MSADAPTER,
        purpose="torch.equal returns a 0-d tensor (PyTorch: a Python bool; `is True` checks fail)")
    from mindspeed_ms.compat import missing_ops

    registry.register(
        "msadapter.ops.other.flip", missing_ops.flip_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.flip(x, 0) (dims as an int, as PyTorch accepts) fails in ReverseV2, and the failure switched "
                "autograd off for the process")
    missing: tuple[tuple[str, Any, str], ...] = (
            ("msadapter.ops.other.repeat_interleave", missing_ops.repeat_interleave,
             "torch.repeat_interleave reads its arguments with args.get (AttributeError on every call)"),
            (f"{_TENSOR}.repeat_interleave", missing_ops.tensor_repeat_interleave,
             "Tensor.repeat_interleave reads its arguments with args.get (AttributeError on every call)"),
            ("msadapter.ops.other.diag", missing_ops.diag,
             "torch.diag ignores diagonal= and of a matrix returns a 4-d tensor (PyTorch: its diagonal)"),
            ("msadapter.ops.creation.from_numpy", missing_ops.from_numpy,
             "torch.from_numpy copies the array: writes to it are not seen by the tensor (PyTorch shares memory)"),
            ("msadapter.multiprocessing.reductions.rebuild_tensor", missing_ops.rebuild_shared_tensor,
             "a tensor from another process (a DataLoader worker's batch) is rebuilt with torch.from_numpy over a "
             "shared-memory block closed right after: with from_numpy sharing memory it pointed into unmapped "
             "memory"),
            (f"{_TENSOR}.new", missing_ops.tensor_new,
             "Tensor.new(3) is the scalar 3 (PyTorch: a tensor of shape (3,))"),
            (f"{_TENSOR}.resize_", missing_ops.resize_,
             "Tensor.resize_ raises TypeError (MindSpore's resize reads Tensor.size, a method under MSAdapter)"))
    for target, replacement, why in missing:
        registry.register(target, replacement, requires=_MSADAPTER, purpose=why)
    registry.register(
        f"{_TENSOR}.dequantize", missing_ops.dequantize, create_dummy=True, requires=_MSADAPTER,
        purpose="Tensor.dequantize does not exist under MSAdapter (PyTorch: a float32 tensor for a float one)")
    registry.register(
        f"{_TENSOR}.type", missing_ops.type_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x.type('torch.HalfTensor') raises KeyError, x.type() of an int64 tensor too; x.type() says "
                "'torch.cuda.FloatTensor' for a tensor that reports the CPU (PyTorch: 'torch.FloatTensor')")
    for name in ("randn_like", "rand_like"):
        registry.register(
            f"msadapter.ops.random.{name}", missing_ops.like_dtype_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose=f"torch.{name} of a float16 tensor is float32 (PyTorch: the input's dtype)")
    registry.register(
        f"{_TENSOR}.storage", missing_ops.storage_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.storage() counts bytes (size 24 for six float32; PyTorch's legacy storage: 6 elements of 4)")


def _register_conformance_misc(registry: Any) -> None:
    """Register PyTorch's refusals of view/bmm/t/destroy_process_group (mindspeed_ms.compat.conformance_misc), its
    index forms (mindspeed_ms.compat.index_forms) and torch.Size's printing and arithmetic (compat.size_type)."""
    from mindspeed_ms.compat import conformance_misc as misc

    size = "msadapter._C.size.Size"
    for name, replacement, why in (
            ("__repr__", "size_repr", "repr/str/f-strings of a shape print msadapter.Size([2, 3]) (PyTorch: "
                                      "torch.Size([2, 3]))"),
            ("__add__", "size_add", "size + (4,) gives a tuple (PyTorch: a torch.Size)"),
            ("__radd__", "size_radd", "(1,) + size gives a tuple (PyTorch: a torch.Size)"),
            ("__mul__", "size_mul", "size * 2 gives a tuple (PyTorch: a torch.Size)"),
            ("__rmul__", "size_mul", "2 * size gives a tuple (PyTorch: a torch.Size)")):
        registry.register(f"{size}.{name}", f"mindspeed_ms.compat.size_type:{replacement}", requires=_MSADAPTER,
                          create_dummy=name != "__repr__", purpose=why)

    registry.register(
        f"{_TENSOR}.view", misc.view_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.view of a non-contiguous tensor whose strides cannot hold the shape returns a reshaped copy "
                "(writes through it are lost silently); PyTorch raises RuntimeError")
    for target in ("msadapter.ops.blas.bmm", f"{_TENSOR}.bmm"):
        registry.register(
            target, misc.bmm_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.bmm of 2-d tensors multiplies them as matrices; PyTorch requires 3-d (RuntimeError)")
    for target in ("msadapter.ops.array.t", f"{_TENSOR}.t"):
        registry.register(
            target, misc.t_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="Tensor.t of a 3-d tensor transposes dims 0 and 1 (torch.t: AssertionError); PyTorch raises "
                    "RuntimeError")
    registry.register(
        "msadapter.distributed.distributed_c10d.destroy_process_group", misc.destroy_process_group_wrapper,
        kind="wrap", requires=_MSADAPTER,
        purpose="torch.distributed.destroy_process_group() before init_process_group returns normally; PyTorch "
                "raises AssertionError")
    registry.register(
        f"{_TENSOR}.stride", misc.stride_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="Tensor.stride() returns a list (x.stride() == (3, 1) is False, silently); PyTorch returns a tuple")
    registry.register(
        "msadapter.ops.array.concatenate", misc.concatenate_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.concatenate(tensors, axis=1) raises TypeError (PyTorch accepts axis= as NumPy's name of dim)")
    registry.register(
        "msadapter.nn.functional.interpolate", misc.interpolate_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.nn.functional.interpolate(x, scale_factor=2) raises TypeError (MindSpore wants a float; "
                "PyTorch accepts an int)")
    for target in ("msadapter.ops.creation.as_strided", f"{_TENSOR}.as_strided"):
        registry.register(
            target, misc.as_strided_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="torch.as_strided returns a gathered contiguous copy (writes through it, or to its input, are not "
                    "seen by the other); MindSpore's AsStrided view op, with PyTorch's checks (it reads past the "
                    "storage unchecked; where a gradient is recorded the copy stays: the view op has no backward)")
    _register_float64_scalars(registry)
    from mindspeed_ms.compat import index_forms

    registry.register(
        f"{_TENSOR}.__getitem__", index_forms.getitem_forms_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="x[[]] and x[:, []] raise, a uint8 mask raises (PyTorch: a bool mask), a scalar boolean index raises "
                "or, as a 0-d tensor in a tuple, silently gives other values (x[..., torch.tensor(False)]: (2, 3) of "
                "zeros for a (2, 3, 4) x; PyTorch: (2, 3, 4, 0))")


#: torch API name -> where MSAdapter defines it (Tensor methods are MindSpore's Tensor's)
_REFUSAL_TARGETS = {"torch.cat": "msadapter.ops.array.cat", "torch.stack": "msadapter.ops.array.stack",
                    "torch.split": "msadapter.ops.array.split", "torch.chunk": "msadapter.ops.array.chunk",
                    "torch.arange": "msadapter.ops.creation.arange", "torch.zeros": "msadapter.ops.creation.zeros",
                    "torch.neg": "msadapter.ops.pointwise.neg", "torch.randn": "msadapter.ops.random.randn",
                    "torch.tensor": "msadapter.tensor", "torch.bincount": "msadapter.ops.other.bincount",
                    "torch.distributed.get_process_group_ranks":
                        "msadapter.distributed.distributed_c10d.get_process_group_ranks"}


def register_refusal_classes(registry: Any) -> None:
    """Register PyTorch's exception classes for refusals MindSpore raises under others (compat/refusals.py)."""
    from mindspeed_ms.compat import refusals

    for op in refusals.REFUSALS:
        if op.startswith("Tensor."):
            target = f"{_TENSOR}.{op.partition('.')[2]}"
        elif op.startswith("torch.nn.functional."):
            target = f"msadapter.nn.functional.{op.rpartition('.')[2]}"
        else:
            target = _REFUSAL_TARGETS[op]
        registry.register(
            target, refusals.refusal_class_wrapper(op), kind="wrap", requires=_MSADAPTER,
            purpose=f"{op} refuses calls PyTorch refuses under another builtin class (MindSpore: ValueError for "
                    f"shapes, ValueError/RuntimeError for indices out of range; PyTorch: RuntimeError, IndexError): "
                    f"'except RuntimeError' written for PyTorch missed them")


#: ops whose Python float argument MindSpore rounds to float32 next to a float64 tensor (compat/float64_scalars.py)
_FLOAT64_SCALAR_METHODS = tuple(
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __pow__ __rpow__ __iadd__ __isub__ "
    "__imul__ __itruediv__ add sub mul div add_ sub_ mul_ div_ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ eq ne lt le "
    "gt ge clamp clip addcmul pow".split())
_FLOAT64_SCALAR_FUNCTIONS = tuple(
    [f"msadapter.ops.pointwise.{name}" for name in "add sub mul div pow clamp clip addcmul true_divide multiply "
                                                   "subtract".split()]
    + [f"msadapter.ops.comparison.{name}" for name in "eq ne lt le gt ge".split()])


def _register_float64_scalars(registry: Any) -> None:
    """Register the float64 scalar fix (mindspeed_ms.compat.float64_scalars)."""
    from mindspeed_ms.compat import float64_scalars

    for target in (*(f"{_TENSOR}.{name}" for name in _FLOAT64_SCALAR_METHODS), *_FLOAT64_SCALAR_FUNCTIONS):
        registry.register(
            target, float64_scalars.float64_scalar_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="a Python float next to a float64 tensor is rounded to float32 first (float64 + 0.1 is "
                    "1.10000000149, * 1e-300 gives 0, == 0.1 is False), silently; PyTorch keeps it in float64")
    registry.register(
        "msadapter.ops.array.where", float64_scalars.float64_where_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="torch.where(c, float64_tensor, 0.1) rounds the Python float to float32 (0.10000000149), silently")
    registry.register(
        f"{_TENSOR}.where", float64_scalars.float64_scalar_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="float64_tensor.where(c, 0.1) rounds the Python float to float32 (0.10000000149), silently")
    _register_functional_defaults(registry)
    _register_order_statistics(registry)
    for target, wrapper in (("msadapter.ops.pointwise.lerp", float64_scalars.float64_lerp_wrapper),
                            (f"{_TENSOR}.lerp", float64_scalars.float64_lerp_wrapper),
                            (f"{_TENSOR}.lerp_", float64_scalars.float64_lerp__wrapper)):
        registry.register(
            target, wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="lerp of float64 raises TypeError on CPU (Lerp has no float64 kernel); PyTorch's CPU formula "
                    "in float64")



def _register_functional_defaults(registry: Any) -> None:
    """Register PyTorch's defaults where MSAdapter's differ (mindspeed_ms.compat.functional_defaults)."""
    from mindspeed_ms.compat import functional_defaults

    registry.register(
        "msadapter.nn.functional.smooth_l1_loss", functional_defaults.smooth_l1_loss_wrapper, kind="wrap",
        requires=_MSADAPTER,
        purpose="F.smooth_l1_loss(a, b) returned the elementwise losses (reduction defaulted to 'none'; PyTorch: "
                "'mean') and computed float64 in float32, silently")
    registry.register(
        "msadapter.nn.functional.dropout2d", functional_defaults.dropout2d_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.dropout2d(x, p) did nothing (training defaulted to False; PyTorch: True), silently")
    registry.register(
        "msadapter.nn.functional.rms_norm", functional_defaults.rms_norm_wrapper, kind="wrap", requires=_MSADAPTER,
        purpose="F.rms_norm required weight and added eps 1e-5 where PyTorch adds finfo(dtype).eps when eps is "
                "left out, silently")


def _register_order_statistics(registry: Any) -> None:
    """Register median/nanmedian without dim and xlogy at zero (mindspeed_ms.compat.order_statistics)."""
    from mindspeed_ms.compat import order_statistics

    for name in ("median", "nanmedian"):
        for target in (f"msadapter.ops.reduction.{name}", f"{_TENSOR}.{name}"):
            registry.register(
                target, order_statistics.median_wrapper(name), kind="wrap", requires=_MSADAPTER,
                purpose=f"{name}() without dim returns (values, indices) along the last dimension (PyTorch: the "
                        f"median of all elements), silently; with dim a plain tuple (PyTorch: return_types)")
    for target in ("msadapter.ops.pointwise.xlogy", f"{_TENSOR}.xlogy"):
        registry.register(
            target, order_statistics.xlogy_wrapper, kind="wrap", requires=_MSADAPTER,
            purpose="xlogy(0, y) is nan for y = 0 or inf (PyTorch: 0 wherever x is 0 and y is not nan), silently")
