"""Megatron's legacy checkpoint (``torch.save`` of a state dict) across PyTorch and MSAdapter.

``python legacy_checkpoint.py write DIR``     (real PyTorch) writes DIR/reference.pt and its description
``python legacy_checkpoint.py roundtrip DIR --ai-framework mindspore``  (MSAdapter) loads reference.pt,
    describes what it got (DIR/candidate.json) and saves it again as DIR/candidate.pt
``python legacy_checkpoint.py compare DIR``   (real PyTorch) loads candidate.pt and prints the leaves that
    differ from reference.pt (nothing when bit-equal)

A description lists every leaf: its path, its type, and for tensors dtype, shape and raw bytes.
"""

import sys

if sys.argv[1] == "roundtrip":
    import mindspeed_ms.adaptor  # noqa: F401  (first: MSAdapter's torch)

import argparse  # noqa: E402
import collections  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


def state_dict():
    """A state dict shaped like Megatron-LM's model_optim_rng.pt, with every dtype it stores."""
    torch.manual_seed(3)
    random.seed(5)
    np.random.seed(7)
    weight = torch.randn(6, 4)
    model = collections.OrderedDict([
        ("embedding.word_embeddings.weight", weight),
        ("decoder.layers.0.self_attention.linear_qkv.weight", torch.randn(12, 4).to(torch.bfloat16)),
        ("decoder.layers.0.self_attention.linear_qkv.bias", torch.randn(12).half()),
        ("decoder.layers.0.self_attention.linear_qkv._extra_state", None),
        ("decoder.final_layernorm.weight", torch.ones(4) + 1e-3 * torch.randn(4)),
        ("position_ids", torch.arange(8, dtype=torch.int64)),
        ("attention_mask", torch.tensor([[True, False], [True, True]])),
    ])
    optimizer = {
        "optimizer": {
            "state": {0: {"step": torch.tensor(5.0), "exp_avg": torch.randn(6, 4), "exp_avg_sq": torch.rand(6, 4)},
                      1: {"step": torch.tensor(5.0), "exp_avg": torch.randn(4), "exp_avg_sq": torch.rand(4)}},
            "param_groups": [{"lr": 3e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01,
                              "amsgrad": False, "params": [0, 1]}],
        },
        "fp32_from_fp16_params": [[torch.randn(12, 4, dtype=torch.float32)]],
        "grad_scaler": {"scale": torch.tensor(65536.0), "growth_tracker": torch.tensor(0, dtype=torch.int32)},
    }
    rng_state = [{"random_rng_state": random.getstate(), "np_rng_state": np.random.get_state(),
                  "torch_rng_state": torch.get_rng_state(),
                  "rng_tracker_states": {"model-parallel-rng": torch.get_rng_state()}}]
    extra = {name: (torch.arange(-3, 3) % 2 == 0 if name == "bool" else torch.arange(-3, 3).to(getattr(torch, name))
                    if not name.startswith(("float", "bfloat")) else torch.randn(2, 3).to(getattr(torch, name)))
             for name in DTYPES}
    extra.update({"zero_d_float": torch.tensor(2.5), "zero_d_long": torch.tensor(7), "empty": torch.zeros(0, 3),
                  "transposed": torch.arange(12.0).view(3, 4).t(), "slice": torch.arange(10.0)[2:7],
                  "parameter": torch.nn.Parameter(torch.randn(3)), "dtype": torch.bfloat16,
                  "size": torch.Size([2, 3]), "numpy": np.arange(4, dtype=np.int32), "nested": [(1, 2.5), {"a": "b"}]})
    return {"args": argparse.Namespace(num_layers=2, lr=3e-3, bf16=True), "checkpoint_version": 3.0,
            "iteration": 5, "model": model, "optimizer": optimizer, "rng_state": rng_state,
            "num_floating_point_operations_so_far": 0, "extra": extra}


def _dtype_name(dtype):
    for name in DTYPES:
        if dtype == getattr(torch, name):
            return name
    raise TypeError(f"unexpected dtype {dtype}")


def _raw(tensor, dtype):
    flat = tensor.detach().reshape(-1)
    if "mindspeed_ms" in sys.modules:  # MSAdapter: through NumPy (bfloat16 as the top half of its float32)
        if dtype == "bfloat16":
            return (np.asarray(flat.to(torch.float32).numpy()).view(np.uint32) >> 16).astype("<u2").tobytes()
        return np.asarray(flat.numpy()).tobytes()
    return flat.contiguous().view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def describe(value, path="", out=None):
    """Flatten ``value`` into ``[path, type, detail]`` rows (containers list their keys in order)."""
    out = [] if out is None else out
    if isinstance(value, torch.Tensor):
        dtype = _dtype_name(value.dtype)
        kind = "Parameter" if isinstance(value, torch.nn.Parameter) else "Tensor"
        out.append([path, kind, [dtype, list(value.shape), _raw(value, dtype).hex()]])
    elif isinstance(value, dict):
        out.append([path, type(value).__name__, [repr(key) for key in value]])
        for key, item in value.items():
            describe(item, f"{path}[{key!r}]", out)
    elif isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        out.append([path, type(value).__name__, len(value)])
        for index, item in enumerate(value):
            describe(item, f"{path}[{index}]", out)
    elif isinstance(value, np.ndarray):
        out.append([path, "ndarray", [value.dtype.str, list(value.shape), value.tobytes().hex()]])
    elif isinstance(value, argparse.Namespace):
        describe(vars(value), f"{path}<Namespace>", out)
    elif isinstance(value, torch.Size):
        out.append([path, "Size", list(value)])
    elif value is not None and not isinstance(value, (int, float, str, bool)):
        out.append([path, "dtype", _dtype_name(value)])
    else:
        out.append([path, type(value).__name__, repr(value)])
    return out


def main():
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "write":
        state = state_dict()
        torch.save(state, folder / "reference.pt")
        (folder / "reference.json").write_text(json.dumps(describe(state)))
    elif mode == "roundtrip":
        from mindspeed_ms.compat.serialization import CheckpointFormatError

        loaded = torch.load(folder / "reference.pt", map_location="cpu", weights_only=False)
        (folder / "candidate.json").write_text(json.dumps(describe(loaded)))
        torch.save(loaded, folder / "candidate.pt")
        try:
            torch.load(folder / "reference.pt", weights_only=True)
        except CheckpointFormatError as exc:
            (folder / "weights_only.txt").write_text(str(exc))
    elif mode == "compare":
        reference = describe(torch.load(folder / "reference.pt", weights_only=False))
        candidate = describe(torch.load(folder / "candidate.pt", weights_only=False))
        for ref, cand in zip(reference, candidate):
            if ref != cand:
                print("differs:", ref[:2], str(ref[2])[:120], "|", cand[:2], str(cand[2])[:120])
        if len(reference) != len(candidate):
            print(f"differs: {len(reference)} leaves, {len(candidate)} after the round trip")


if __name__ == "__main__":
    main()
