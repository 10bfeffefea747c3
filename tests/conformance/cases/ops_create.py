"""Tensor creation: dtypes inferred and given, shapes as ints / tuples / torch.Size, 0-d and empty, *_like keeping
the input's dtype, random creators (shape, dtype, range only), from NumPy (sharing memory), new_* methods."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from conformance.samples import register, tensor

# name -> (ops, create(torch)); random or uninitialised values are reduced to shape/dtype/range facts
CREATE: dict[str, tuple[tuple[str, ...], Callable[[Any], Any]]] = {
    "tensor_ints": (("torch.tensor",), lambda torch: torch.tensor([1, 2, 3])),
    "tensor_floats": (("torch.tensor",), lambda torch: torch.tensor([[1.5, 2.0], [3.0, -1.0]])),
    "tensor_bools": (("torch.tensor",), lambda torch: torch.tensor([True, False])),
    "tensor_mixed_int_float": (("torch.tensor",), lambda torch: torch.tensor([1, 2.5])),
    "tensor_scalar": (("torch.tensor",), lambda torch: [torch.tensor(3), torch.tensor(2.5), torch.tensor(True)]),
    "tensor_dtype": (("torch.tensor",), lambda torch: torch.tensor([1, 2], dtype=torch.float16)),
    "tensor_int64_large": (("torch.tensor",), lambda torch: torch.tensor([2**40 + 3, -(2**50)])),
    "tensor_empty_list": (("torch.tensor",), lambda torch: torch.tensor([])),
    "tensor_from_tensor_list": (("torch.tensor",), lambda torch: torch.tensor([torch.tensor(1.0).item(), 2.0])),
    "tensor_numpy": (("torch.tensor",), lambda torch: torch.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))),
    "zeros": (("torch.zeros",), lambda torch: [torch.zeros(2, 3), torch.zeros((2,), dtype=torch.int64),
                                               torch.zeros(torch.Size([1, 2]), dtype=torch.bool), torch.zeros(())]),
    "zeros_bfloat16": (("torch.zeros",), lambda torch: torch.zeros(2, 2, dtype=torch.bfloat16)),
    "ones": (("torch.ones",), lambda torch: [torch.ones(2, 3), torch.ones(3, dtype=torch.int64),
                                             torch.ones(0, 2), torch.ones(2, dtype=torch.float16)]),
    "full": (("torch.full",), lambda torch: [torch.full((2, 2), 7), torch.full((2,), 1.5),
                                             torch.full((2,), True), torch.full((2,), 3, dtype=torch.float32)]),
    "empty_facts": (("torch.empty",), lambda torch: [(tuple(t.shape), t.dtype) for t in (
        torch.empty(2, 3), torch.empty((4,), dtype=torch.int64), torch.empty(0),
        torch.empty(2, dtype=torch.bfloat16))]),
    "arange": (("torch.arange",), lambda torch: [torch.arange(5), torch.arange(1, 7, 2), torch.arange(0.0, 1.0, 0.25),
                                                 torch.arange(5, dtype=torch.float32), torch.arange(0),
                                                 torch.arange(torch.tensor(4).item())]),
    "arange_float_dtype": (("torch.arange",), lambda torch: torch.arange(1.5, 4)),
    "linspace": (("torch.linspace",), lambda torch: torch.linspace(0, 1, 5)),
    "eye": (("torch.eye",), lambda torch: [torch.eye(3), torch.eye(2, 3, dtype=torch.int64)]),
    "zeros_like": (("torch.zeros_like",), lambda torch: [torch.zeros_like(tensor(torch, (2, 3), d)) for d in
                                                         ("float32", "float16", "int64", "bool")]),
    "ones_like": (("torch.ones_like",), lambda torch: [torch.ones_like(tensor(torch, (2, 3), d)) for d in
                                                       ("float32", "int64", "bool")] +
                  [torch.ones_like(tensor(torch, (2,)), dtype=torch.int64)]),
    "full_like": (("torch.full_like",), lambda torch: [torch.full_like(tensor(torch, (2, 3)), 4.5),
                                                       torch.full_like(tensor(torch, (2,), "int64"), 3)]),
    "empty_like_facts": (("torch.empty_like",), lambda torch: [(tuple(t.shape), t.dtype) for t in (
        torch.empty_like(tensor(torch, (2, 3), "float16")), torch.empty_like(tensor(torch, (3,), "int64")))]),
    "rand_facts": (("torch.rand",), lambda torch: [tuple(torch.rand(3, 4).shape), torch.rand(2).dtype,
                                                   bool(((torch.rand(100) >= 0) & (torch.rand(100) < 1)).all())]),
    "randn_facts": (("torch.randn",), lambda torch: [tuple(torch.randn(2, 5).shape), torch.randn(3).dtype,
                                                     torch.randn(2, dtype=torch.float16).dtype]),
    "randn_like_facts": (("torch.randn_like",), lambda torch: [
        (tuple(t.shape), t.dtype) for t in (torch.randn_like(tensor(torch, (2, 3))),
                                            torch.randn_like(tensor(torch, (2,), "float16")))]),
    "rand_like_facts": (("torch.rand_like",), lambda torch: torch.rand_like(tensor(torch, (3, 2))).shape),
    "randn_int_raises": (("torch.randn",), lambda torch: torch.randn(2, dtype=torch.int64)),
    "from_numpy_shares": (("torch.from_numpy",), lambda torch: _from_numpy(torch)),
    "frombuffer": (("torch.frombuffer",), lambda torch: torch.frombuffer(bytearray(np.arange(4, dtype=np.float32)
                                                                                   .tobytes()), dtype=torch.float32)),
    "new_empty_facts": (("Tensor.new_empty",), lambda torch: [(tuple(t.shape), t.dtype) for t in (
        tensor(torch, (2,), "float16").new_empty((3, 2)), tensor(torch, (2,), "int64").new_empty(4))]),
    "new_zeros": (("Tensor.new_zeros",), lambda torch: [tensor(torch, (2,), "float16").new_zeros(2, 3),
                                                        tensor(torch, (2,), "int64").new_zeros((2,))]),
    "new_tensor_legacy": (("Tensor.new",), lambda torch: [tensor(torch, (2,)).new([1, 2]).dtype,
                                                          tuple(tensor(torch, (2,), "int64").new(3).shape)]),
    "get_default_dtype": (("torch.get_default_dtype",), lambda torch: torch.get_default_dtype()),
    "new_zeros_ones_zero_dim": (("Tensor.new_zeros", "Tensor.new_ones"), lambda torch: {
        "zeros": tensor(torch, (2,), "float16").new_zeros(()), "ones": tensor(torch, (2,), "int64").new_ones(()),
        "list": tensor(torch, (2,)).new_zeros([]), "grad": tensor(torch, (2,)).new_ones((), requires_grad=True)}),
    "new_full": (("Tensor.new_full",), lambda torch: {
        "float16": tensor(torch, (2,), "float16").new_full((2, 3), 1.5),
        "int_truncates": tensor(torch, (2,), "int64").to(torch.int32).new_full((2,), 2.7),
        "dtype": tensor(torch, (2,), "float16").new_full([2], 2, dtype=torch.int64),
        "zero_dim": tensor(torch, (2,)).new_full((), 3.0),
        "requires_grad": tensor(torch, (2,)).new_full((1,), 1.0, requires_grad=True).requires_grad}),
}


def _from_numpy(torch: Any) -> Any:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = torch.from_numpy(array)
    array[0, 0] = 9.0
    i = torch.from_numpy(np.array([2**40, 1], dtype=np.int64))
    return {"t": t, "int64": i}


for _name, (_ops, _create) in CREATE.items():
    register(__name__, _name, _ops, _create)
