"""Functions and methods MSAdapter lacks or gets wrong (mindspeed_ms.compat.missing_ops): what the OpInfo cases do not
pin down — repeat_interleave's forms, roll over several dims, diag's offsets, legacy type names, Tensor.new's forms,
resize_ growing, from_numpy of an array that cannot be shared, *_like dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np

from conformance.harness import case, data


@case("torch.repeat_interleave", "Tensor.repeat_interleave")
def repeat_interleave_forms(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=40))
    return {"flat": torch.repeat_interleave(x, 2), "dim0": x.repeat_interleave(3, dim=0),
            "counts_only": torch.repeat_interleave(torch.tensor([2, 0, 1])),
            "tensor_counts": x.repeat_interleave(torch.tensor([1, 2]), dim=0),
            "zero_dim_repeats": x.repeat_interleave(torch.tensor(2), dim=-1),
            "grad": _grad(torch, x)}


def _grad(torch: Any, x: Any) -> Any:
    leaf = x.detach().clone().requires_grad_(True)
    (leaf.repeat_interleave(2, dim=1) * torch.tensor(data((2, 6), seed=41))).sum().backward()
    return leaf.grad


@case("Tensor.repeat_interleave", "Tensor.is_contiguous", "Tensor.stride")
def repeat_interleave_gives_a_new_contiguous_tensor(torch: Any) -> Any:
    # megatron's group-query attention with one query group per tensor-parallel rank: the keys [sk, b, 1, hn]
    # repeated to the heads (ours was a broadcast view, stride 0, when the repeated dim had size 1)
    key = torch.tensor(data((3, 2, 1, 4), seed=43))
    one, two = key.repeat_interleave(2, dim=2), key.repeat(1, 1, 2, 1).repeat_interleave(2, dim=2)
    return {"one_group": (one.is_contiguous(), tuple(one.stride())), "two_groups": (two.is_contiguous(),
            tuple(two.stride())), "flat": tuple(torch.repeat_interleave(key.reshape(-1)[:1], 3).stride())}


@case("Tensor.repeat_interleave", "Tensor.view")
def repeat_interleave_then_view(torch: Any) -> Any:
    # ... then viewed as [sk, b * np, hn] (megatron's DotProductAttention; the view was refused)
    key = torch.tensor(data((3, 2, 1, 4), seed=43))
    return {"one_group": key.repeat_interleave(2, dim=2).view(3, 4, -1),
            "two_groups": key.repeat(1, 1, 2, 1).repeat_interleave(2, dim=2).view(3, 8, -1)}


@case("torch.cuda.FloatTensor", "torch.cuda.HalfTensor", "torch.cuda.BFloat16Tensor", "torch.FloatTensor")
def cuda_tensor_types_of_cpu_tensors(torch: Any) -> Any:
    # megatron's Float16Module (--bf16/--fp16) converts what isinstance(t, (torch.FloatTensor,
    # torch.cuda.FloatTensor)) says is float32: MSAdapter's torch.cuda.FloatTensor was the Tensor class, and the
    # token ids became bfloat16
    tensors = {"int64": torch.tensor([1, 2]), "float32": torch.tensor([1.0]), "bool": torch.tensor([True])}
    kinds = ("FloatTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor")
    return {name: [isinstance(t, getattr(torch.cuda, kind)) for kind in kinds] + [isinstance(t, torch.FloatTensor)]
            for name, t in tensors.items()}


@case("Tensor.roll", "torch.diag")
def roll_and_diag_offsets(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), seed=42))
    v = torch.tensor([1.0, 2.0, 3.0])
    return {"roll_two_dims": x.roll((1, -2), (0, 1)), "roll_flat": x.roll(5), "roll_full_turn": x.roll(4, 1),
            "diag_up": torch.diag(v, 1), "diag_down": torch.diag(v, -2), "diagonal_of_matrix": torch.diag(x, 1),
            "diagonal_below": torch.diag(x, -1)}


@case("Tensor.type")
def legacy_type_names_cast(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), seed=43))
    return {"long": x.type("torch.LongTensor"), "half": x.type("torch.HalfTensor").dtype,
            "bf16": x.type("torch.BFloat16Tensor").dtype, "bool": x.type("torch.BoolTensor"),
            "same": x.type(torch.float32) is x}


@case("Tensor.new", "Tensor.resize_", "torch.from_numpy", "torch.rand_like", "Tensor.dequantize")
def legacy_constructors_and_resize(torch: Any) -> Any:
    x = torch.tensor(data((2, 3), "float16", seed=44))
    grown = torch.tensor([1.0, 2.0])
    grown.resize_(2, 2)
    strided = np.arange(6, dtype=np.float32)[::2]
    return {"new_shape": tuple(x.new(2, 3).shape), "new_size": tuple(x.new(torch.Size([4])).shape),
            "new_data": x.new([1, 2]), "new_empty": tuple(x.new().shape), "new_dtype": x.new(3).dtype,
            "grown_head": grown.reshape(-1)[:2], "grown_shape": tuple(grown.shape),
            "from_strided": torch.from_numpy(strided), "rand_like": torch.rand_like(x).dtype,
            "dequantize_half": x.dequantize().dtype}


@case("Tensor.storage")
def legacy_storage_counts_elements(torch: Any) -> Any:
    x = torch.tensor(data((3, 4), "float16", seed=45))
    i = torch.tensor([1, 2, 3])
    return {"half": [x.storage().size(), x.storage().element_size(), len(x.storage())],
            "long": [i.storage().size(), i.storage().element_size(), i.storage().nbytes()],
            "same_memory": x.storage().data_ptr() == x.data_ptr()}


@case("torch.utils.data.DataLoader", "torch.from_numpy")
def worker_batches_of_from_numpy_tensors(torch: Any) -> Any:
    # megatron's GPTDataset.__getitem__ returns torch.from_numpy arrays and its DataLoader's workers send the batches
    # back (MSAdapter's rebuild_tensor read a closed shared-memory block once from_numpy shared memory: a crash)
    class Samples(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return 4

        def __getitem__(self, index: int) -> Any:
            return {"tokens": torch.from_numpy(np.arange(index, index + 6, dtype=np.int64)),
                    "loss_mask": torch.from_numpy(data((6,), seed=46 + index))}

    batches = list(torch.utils.data.DataLoader(Samples(), batch_size=2, num_workers=1))
    return {"tokens": [batch["tokens"].clone() for batch in batches],
            "loss_mask_sum": [batch["loss_mask"].sum() for batch in batches]}
