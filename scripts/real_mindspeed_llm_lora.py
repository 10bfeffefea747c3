"""The LoRA steps of scripts/real_mindspeed_llm_posttrain.sh (MindSpeed-LLM's `posttrain_gpt.py --stage sft --lora-*`
on MindSpore against HF transformers' Qwen2 with peft's LoRA on real PyTorch). Subcommands:

  frozen BASE_CKPT LORA_CKPT         (real PyTorch) every base weight of a LoRA run's checkpoint equals the converted
                                     checkpoint's bit for bit; every LoRA B moved away from its zero start
  lora-loss HF PREFIX SEQ CKPT R ALPHA [zero-b]
                                     (real PyTorch) HF Qwen2 + peft LoRA (r, alpha, q/k/v/o/gate/up/down) with the
                                     A/B weights of a MindSpore LoRA checkpoint (zero-b: B as peft starts it, zeros;
                                     the checkpoint's A is the start's: A's gradient is zero while B is), loss on every
                                     sample of the instruction data in one batch and the LoRA gradient norm
  lora-merge HF CKPT R ALPHA OUT     (real PyTorch) the same model, merged by peft (merge_and_unload), saved as HF
  merged-equal HF_A HF_B             (real PyTorch) two HF checkpoints' weights within fp32 rounding (rel 1e-6)

Megatron fuses q/k/v into linear_qkv and gate/up into linear_fc1, each with one LoRA A; peft puts a LoRA on each HF
projection. The reference ties the three (two) HF projections' A to one parameter, so the function and the gradient
(the sum over the projections that share A) are Megatron's; B's rows are split as convert_ckpt splits the weights.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from real_mindspeed_llm_posttrain import packed_sft_loss  # this folder is sys.path[0]

HEADS, GROUPS, HIDDEN = 4, 2, 64  # the tiny qwen2.5 of real_mindspeed_llm_posttrain.py hf


def _model_state(path: str) -> dict[str, Any]:
    import torch

    return dict(torch.load(f"{path}/iter_{_latest(path):07d}/mp_rank_00/model_optim_rng.pt", weights_only=False,
                           map_location="cpu")["model"])


def _latest(path: str) -> int:
    with open(f"{path}/latest_checkpointed_iteration.txt") as f:
        return int(f.read().strip())


def frozen(base: str, lora: str) -> bool:
    import torch

    before, after = _model_state(base), _model_state(lora)
    checked, moved, bad = 0, 0, []
    for key, value in before.items():
        if not isinstance(value, torch.Tensor):
            continue
        name = key
        if key not in after:  # peft wraps each targeted linear: its weight is base_layer.weight
            head, _, leaf = key.rpartition(".")
            name = f"{head}.base_layer.{leaf}"
        if name not in after or not torch.equal(value, after[name]):
            bad.append(key)
        checked += 1
    for key, value in after.items():
        if ".lora_B." in key and isinstance(value, torch.Tensor):
            moved += int(bool(value.abs().max() > 0))
    lora_b = sum(".lora_B." in k and isinstance(v, torch.Tensor) for k, v in after.items())
    print(f"  {checked} base tensors: {checked - len(bad)} bit-identical after LoRA training; "
          f"LoRA B moved from zero: {moved}/{lora_b}")
    if bad:
        print(f"  changed or missing: {bad[:5]}")
    return not bad and checked > 0 and moved == lora_b > 0


def _split_qkv(weight: Any) -> tuple[Any, Any, Any]:
    """Megatron's linear_qkv rows (per query group: its heads' q, then k, then v) as HF's q, k, v rows."""
    dim = HIDDEN // HEADS
    per = HEADS // GROUPS
    groups = weight.reshape(GROUPS, (per + 2) * dim, -1)
    q = groups[:, : per * dim].reshape(HEADS * dim, -1)
    k = groups[:, per * dim: (per + 1) * dim].reshape(GROUPS * dim, -1)
    v = groups[:, (per + 1) * dim:].reshape(GROUPS * dim, -1)
    return q.contiguous(), k.contiguous(), v.contiguous()


def _peft_model(hf: str, ckpt: str, r: int, alpha: int, zero_b: bool) -> Any:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2ForCausalLM

    model = Qwen2ForCausalLM.from_pretrained(hf, dtype=torch.float32, attn_implementation="eager")
    config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=0.0, bias="none",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = get_peft_model(model, config)
    state = _model_state(ckpt)
    layers = model.base_model.model.model.layers
    with torch.no_grad():
        for i, layer in enumerate(layers):
            def lora(name: str, part: str, i: int = i) -> Any:
                return state[f"decoder.layers.{i}.{name}.lora_{part}.default.weight"]

            attn, mlp = layer.self_attn, layer.mlp
            shared_qkv, shared_fc1 = attn.q_proj.lora_A["default"], mlp.gate_proj.lora_A["default"]
            attn.k_proj.lora_A["default"] = shared_qkv
            attn.v_proj.lora_A["default"] = shared_qkv
            mlp.up_proj.lora_A["default"] = shared_fc1
            shared_qkv.weight.copy_(lora("self_attention.linear_qkv", "A"))
            shared_fc1.weight.copy_(lora("mlp.linear_fc1", "A"))
            attn.o_proj.lora_A["default"].weight.copy_(lora("self_attention.linear_proj", "A"))
            mlp.down_proj.lora_A["default"].weight.copy_(lora("mlp.linear_fc2", "A"))
            q, k, v = _split_qkv(lora("self_attention.linear_qkv", "B"))
            gate, up = lora("mlp.linear_fc1", "B").chunk(2, dim=0)
            pairs = [(attn.q_proj, q), (attn.k_proj, k), (attn.v_proj, v), (mlp.gate_proj, gate), (mlp.up_proj, up),
                     (attn.o_proj, lora("self_attention.linear_proj", "B")),
                     (mlp.down_proj, lora("mlp.linear_fc2", "B"))]
            for proj, b in pairs:
                proj.lora_B["default"].weight.copy_(torch.zeros_like(b) if zero_b else b)
            # the base weights: the checkpoint's (a LoRA run must not have changed them; `frozen` checks)
            wq, wk, wv = _split_qkv(state[f"decoder.layers.{i}.self_attention.linear_qkv.base_layer.weight"])
            bq, bk, bv = _split_qkv(state[f"decoder.layers.{i}.self_attention.linear_qkv.base_layer.bias"][:, None])
            for proj, w, b in ((attn.q_proj, wq, bq), (attn.k_proj, wk, bk), (attn.v_proj, wv, bv)):
                if not (torch.equal(proj.base_layer.weight, w) and torch.equal(proj.base_layer.bias, b[:, 0])):
                    sys.exit(f"layer {i}: the checkpoint's q/k/v do not map onto HF's as assumed")
    return model


def lora_loss(hf: str, prefix: str, seq: int, ckpt: str, r: int, alpha: int, zero_b: bool) -> None:
    model = _peft_model(hf, ckpt, r, alpha, zero_b)
    trainable = [p for p in model.parameters() if p.requires_grad]  # parameters() yields a shared A once
    result = packed_sft_loss(model, prefix, seq, trainable)
    result["trainable"] = sum(p.numel() for p in trainable)
    print(json.dumps(result))


def lora_merge(hf: str, ckpt: str, r: int, alpha: int, out: str) -> None:
    model = _peft_model(hf, ckpt, r, alpha, zero_b=False).merge_and_unload()
    model.save_pretrained(out, safe_serialization=True)


def merged_equal(a: str, b: str) -> bool:
    from safetensors.torch import load_file

    one, two = load_file(f"{a}/model.safetensors"), load_file(f"{b}/model.safetensors")
    worst = 0.0
    for key, value in one.items():
        if key not in two or two[key].shape != value.shape:
            print(f"  {key}: missing or reshaped in {b}")
            return False
        worst = max(worst, float((value.double() - two[key].double()).abs().max() / value.double().abs().max()))
    print(f"  {len(one)} merged tensors, {len(two)} converted; largest difference {worst:.1e} of the tensor's max")
    return len(one) == len(two) and worst <= 1e-6


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "lora-loss":
        lora_loss(args[0], args[1], int(args[2]), args[3], int(args[4]), int(args[5]), args[6:] == ["zero-b"])
        return 0
    if command == "lora-merge":
        lora_merge(args[0], args[1], int(args[2]), int(args[3]), args[4])
        return 0
    judges = {"frozen": lambda: frozen(args[0], args[1]), "merged-equal": lambda: merged_equal(args[0], args[1])}
    if command not in judges:
        print(__doc__, file=sys.stderr)
        return 2
    ok = judges[command]()
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
