"""The DPO steps of scripts/real_mindspeed_llm_posttrain.sh (MindSpeed-LLM's `posttrain_gpt.py --stage dpo` on
MindSpore against an independent DPO loss with HF transformers' Qwen2 on real PyTorch). Subcommands:

  data OUT_JSONL               16 preference pairs in orca_rlhf's shape (system, question, chosen, rejected), the keys
                               data_convert_llama2_pairwise.sh maps with --map-keys
  loss POLICY_HF REF_HF PREFIX BETA
                               (real PyTorch) the sigmoid DPO loss of every pair of the preprocessed pairwise data in
                               one batch: per sequence the summed log-probability of its answer tokens (labels
                               -100 elsewhere, shifted by one), mean over the pairs of -logsigmoid(beta * ((policy
                               chosen - policy rejected) - (reference chosen - reference rejected))); the gradient
                               norm over every policy parameter (the reference is frozen)
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any

WORDS = ("the a of to and in is you that it for on with as are this be at or have from an by not what how why which "
         "can write give explain list name describe sun moon water fire earth river city color red blue green small "
         "large fast slow good bad first last").split()


def make_data(out: str) -> None:
    rng = random.Random(3)

    def words(low: int, high: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))

    with open(out, "w") as f:
        for _ in range(16):
            row = {"system": "", "question": words(3, 8) + "?", "chosen": words(2, 8) + ".",
                   "rejected": words(2, 8) + "."}
            f.write(json.dumps(row) + "\n")


def _answer_log_probs(model: Any, ids: Any, labels: Any) -> Any:
    import torch

    logits = model(input_ids=ids[None]).logits[0, :-1].float()
    target = labels[1:]
    mask = target != -100
    picked = torch.log_softmax(logits, dim=-1).gather(1, target.clamp(min=0)[:, None])[:, 0]
    return (picked * mask).sum(), int(mask.sum())


def loss(policy_hf: str, ref_hf: str, prefix: str, beta: float) -> None:
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDataset
    from transformers import Qwen2ForCausalLM

    def load(path: str) -> Any:
        return Qwen2ForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager")

    policy, reference = load(policy_hf), load(ref_hf)
    reference.requires_grad_(False)
    data = {key: IndexedDataset(f"{prefix}_packed_{key}_document")
            for key in ("chosen_input_ids", "chosen_labels", "rejected_input_ids", "rejected_labels")}
    losses, tokens = [], 0
    for i in range(len(data["chosen_input_ids"])):
        ratio = torch.zeros(())
        for side, sign in (("chosen", 1.0), ("rejected", -1.0)):
            ids = torch.from_numpy(data[f"{side}_input_ids"][i].astype("int64"))
            labels = torch.from_numpy(data[f"{side}_labels"][i].astype("int64"))
            mine, count = _answer_log_probs(policy, ids, labels)
            with torch.no_grad():
                theirs, _ = _answer_log_probs(reference, ids, labels)
            ratio = ratio + sign * (mine - theirs)
            tokens += count
        losses.append(-torch.nn.functional.logsigmoid(beta * ratio))
    total = torch.stack(losses).mean()
    total.backward()
    norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in policy.parameters() if p.grad is not None))
    print(json.dumps({"loss": total.item(), "grad_norm": norm, "tokens": tokens, "samples": len(losses)}))


def main(argv: list[str]) -> int:
    if argv[:1] == ["data"] and len(argv) == 2:
        make_data(argv[1])
        return 0
    if argv[:1] == ["loss"] and len(argv) == 5:
        loss(argv[1], argv[2], argv[3], float(argv[4]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
