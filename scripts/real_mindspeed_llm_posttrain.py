"""The Python steps of scripts/real_mindspeed_llm_posttrain.sh (MindSpeed-LLM's post-training entries on MindSpore
against real PyTorch). Each subcommand runs in the interpreter the shell script picks:

  data OUT_DIR                 (real PyTorch) a tiny byte-level BPE tokenizer saved as a Qwen2 tokenizer (vocab 400,
                               <|endoftext|> <|im_start|> <|im_end|>; no network) and 64 Alpaca-style records
  hf OUT_DIR                   (real PyTorch) a tiny random qwen2.5-shaped HF model (transformers' Qwen2, float32)
  bare ENTRY ARGS...           (real PyTorch) run a MindSpeed-LLM entry without its package __init__ (see below)
  observe ENTRY ARGS...        (MindSpore) run a MindSpeed-LLM entry unchanged, printing the token ids its generation
                               hands to the tokenizer's batch_decode (the entry logs only the decoded text)
  loss HF_DIR PREFIX SEQ       (real PyTorch) the SFT reference: HF Qwen2 on every sample of the preprocessed
                               instruction data in one batch, cross entropy on the answer tokens only (labels -100
                               elsewhere, shifted by one as the model's loss is), the global gradient norm
  generate HF_DIR PROMPT N     (real PyTorch) greedy generation with HF Qwen2, the prompt encoded as inference.py's
                               greedy task encodes it without a template (tokenizer.encode)
  judge-loss REF_JSON LOG      the first iteration of a 1-worker SFT log against the reference: loss within 1e-5
                               relative, grad norm within the log's printed resolution
  judge-dp LOG_1 LOG_2         two SFT logs (1 and 2 data-parallel workers): every loss within 1e-5 relative
  judge-field LOG ITERS        a shrunk field-flag SFT log: ITERS iterations, losses finite, none skipped or NaN,
                               the last loss below the first
  judge-generate REF_JSON LOG  the ids inference.py generated (observe) equal the reference's
Prints what it compares; exits 1 when a figure differs or is missing.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import runpy
import sys
import types
from pathlib import Path
from typing import Any

_ITERATION = re.compile(r"iteration\s+(\d+)/\s*\d+ \|.*?lm loss: ([^ |]+) \|.*?grad norm: ([^ |]+) \|"
                        r".*?number of skipped iterations:\s+(\d+) \|\s*number of nan iterations:\s+(\d+)")
WORDS = ("the a of to and in is you that it for on with as are this be at or have from an by not what how why which "
         "can write give explain list name describe number one two three four five six seven eight nine ten answer "
         "question data model train sun moon water fire earth river city color red blue green small large fast slow "
         "good bad first last").split()
LOSS_RTOL = 1e-5


def make_data(out: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import Qwen2Tokenizer, Qwen2TokenizerFast

    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(12)) + rng.choice(".?!") for _ in range(400)]
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(texts, trainer)
    tok_dir = Path(out, "tokenizer")
    tok_dir.mkdir(parents=True, exist_ok=True)
    bpe.model.save(str(tok_dir))  # vocab.json, merges.txt: what the slow tokenizer (--tokenizer-not-use-fast) reads
    fast = Qwen2TokenizerFast(vocab_file=str(tok_dir / "vocab.json"), merges_file=str(tok_dir / "merges.txt"),
                              unk_token=None, bos_token=None, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    fast.save_pretrained(str(tok_dir))
    probe = "<|im_start|>user\nwhat is the sun?<|im_end|>\n"
    slow_ids, fast_ids = Qwen2Tokenizer.from_pretrained(str(tok_dir))(probe).input_ids, fast(probe).input_ids
    if slow_ids != fast_ids:
        sys.exit(f"the slow and fast tokenizers differ: {slow_ids} vs {fast_ids}")
    rows = []
    for i in range(64):
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10)))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
        rows.append({"instruction": question + "?", "input": "" if i % 3 else "the " + rng.choice(WORDS),
                     "output": answer + "."})
    Path(out, "alpaca.json").write_text(json.dumps(rows))
    print(f"tokenizer: {len(fast)} tokens; data: {len(rows)} records")


def make_hf(out: str) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(1234)
    config = Qwen2Config(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, tie_word_embeddings=False, use_sliding_window=False)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    with torch.no_grad():  # transformers zero-initialises the q/k/v biases: make them count
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0, 0.02)
    model.save_pretrained(out, safe_serialization=True)


def run_bare(argv: list[str]) -> None:
    """MindSpeed-LLM's package __init__ applies its NPU adaptor (imports torch_npu and torchair, absent on CPU
    PyTorch): register mindspeed_llm as a bare package over the same source folder, apply the only adaptor patches
    preprocessing reaches (MindSpeed-LLM's own IndexedDatasetBuilder wrappers, from its source, as its dataset
    feature registers them), then run the entry."""
    import importlib.util

    from megatron.core.datasets.indexed_dataset import IndexedDatasetBuilder as builder

    source = Path(os.environ["MINDSPEED_LLM_DIR"], "mindspeed_llm")
    package = types.ModuleType("mindspeed_llm")
    package.__path__ = [str(source)]
    sys.modules["mindspeed_llm"] = package
    spec = importlib.util.spec_from_file_location("_llm_indexed_dataset", source / "core/datasets/indexed_dataset.py")
    if spec is None or spec.loader is None:
        sys.exit(f"cannot load {source / 'core/datasets/indexed_dataset.py'}")
    wrappers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wrappers)
    builder.__init__ = wrappers.indexed_dataset_builder_init_wrapper(builder.__init__)  # type: ignore[method-assign]
    builder.add_item = wrappers.add_item_wrapper(builder.add_item)  # type: ignore[method-assign]
    builder.finalize = wrappers.finalize_wrapper(builder.finalize)  # type: ignore[method-assign]
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


def run_observed(argv: list[str]) -> None:
    from transformers import PreTrainedTokenizerBase

    decode = PreTrainedTokenizerBase.batch_decode

    def batch_decode(self: Any, sequences: Any, *args: Any, **kwargs: Any) -> Any:
        ids = [[int(i) for i in (s.tolist() if hasattr(s, "tolist") else s)] for s in sequences]
        print("GENERATED_IDS " + json.dumps(ids), flush=True)
        return decode(self, sequences, *args, **kwargs)

    PreTrainedTokenizerBase.batch_decode = batch_decode  # type: ignore[method-assign]
    sys.argv = argv
    runpy.run_path(argv[0], run_name="__main__")


def packed_sft_loss(model: Any, prefix: str, seq: int, parameters: list[Any]) -> dict[str, Any]:
    """The loss MindSpeed-LLM's SFT run computes over the packed samples at PREFIX (the token cross entropies summed,
    over the tokens whose label is not -100), its backward, and the gradient norm of PARAMETERS."""
    import torch
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    ids = IndexedDataset(prefix + "_packed_input_ids_document")
    labels = IndexedDataset(prefix + "_packed_labels_document")
    loss_sum, tokens = torch.zeros(()), 0
    for i in range(len(ids)):
        x = torch.from_numpy(ids[i].astype("int64"))
        y = torch.from_numpy(labels[i].astype("int64"))
        if len(x) > seq:
            sys.exit(f"sample {i} has {len(x)} tokens, more than --seq-length {seq}: the run cuts it, this does not")
        logits = model(input_ids=x[None]).logits[0].float()
        loss_sum = loss_sum + torch.nn.functional.cross_entropy(logits[:-1], y[1:], ignore_index=-100,
                                                                reduction="sum")
        tokens += int((y[1:] != -100).sum())
    loss = loss_sum / tokens
    loss.backward()
    norm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in parameters if p.grad is not None))
    return {"loss": loss.item(), "grad_norm": norm, "tokens": tokens, "samples": len(ids)}


def reference_loss(hf_dir: str, prefix: str, seq: int) -> None:
    import torch
    from transformers import Qwen2ForCausalLM

    model = Qwen2ForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager")
    print(json.dumps(packed_sft_loss(model, prefix, seq, list(model.parameters()))))


def reference_generate(hf_dir: str, prompt: str, new_tokens: int) -> None:
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(hf_dir, use_fast=False)
    model = Qwen2ForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager")
    ids = tokenizer.encode(prompt)
    out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=new_tokens, do_sample=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    generated = out[0, len(ids):].tolist()
    print(json.dumps({"prompt_ids": ids, "generated_ids": generated,
                      "text": tokenizer.decode(generated, skip_special_tokens=True)}))


def _iterations(log: str) -> dict[int, tuple[float, float, int, int]]:
    found: dict[int, tuple[float, float, int, int]] = {}
    for match in _ITERATION.finditer(Path(log).read_text(errors="replace")):
        found[int(match[1])] = (float(match[2]), float(match[3]), int(match[4]), int(match[5]))
    return found


def _last_json(path: str) -> dict[str, Any]:
    lines = [line for line in Path(path).read_text().splitlines() if line.startswith("{")]
    if not lines:
        sys.exit(f"no reference figures in {path}")
    return dict(json.loads(lines[-1]))


def judge_loss(ref_json: str, log: str) -> bool:
    ref, its = _last_json(ref_json), _iterations(log)
    if 1 not in its:
        print(f"FAIL: no iteration 1 in {log}")
        return False
    loss, norm = its[1][0], its[1][1]
    rel = abs(loss - ref["loss"]) / abs(ref["loss"])
    norm_ok = abs(norm - ref["grad_norm"]) <= 5e-4 + 1e-5 * ref["grad_norm"]  # the log prints 3 decimals
    print(f"  first iteration, {ref['samples']} samples, {ref['tokens']} answer tokens: loss MindSpore "
          f"{loss:.6e} PyTorch (HF Qwen2) {ref['loss']:.9f} rel {rel:.1e}; grad norm {norm} vs {ref['grad_norm']:.6f}")
    return rel <= LOSS_RTOL and norm_ok


def judge_dp(log1: str, log2: str) -> bool:
    one, two = _iterations(log1), _iterations(log2)
    ok = bool(one) and sorted(one) == sorted(two)
    worst = 0.0
    for it in sorted(one):
        if it in two:
            worst = max(worst, abs(one[it][0] - two[it][0]) / abs(two[it][0]))
    print(f"  1 vs 2 workers: {len(one)} / {len(two)} iterations, largest loss difference {worst:.1e} relative")
    return ok and worst <= LOSS_RTOL


def judge_field(log: str, iterations: int) -> bool:
    its = _iterations(log)
    for it, (loss, norm, skipped, nan) in sorted(its.items()):
        print(f"  iteration {it}: loss {loss:.6f} grad norm {norm} skipped {skipped} nan {nan}")
    losses = [its[i][0] for i in sorted(its)]
    return (sorted(its) == list(range(1, iterations + 1)) and all(math.isfinite(x) for x in losses)
            and all(v[2] == 0 and v[3] == 0 for v in its.values()) and losses[-1] < losses[0])


def judge_generate(ref_json: str, log: str) -> bool:
    ref = _last_json(ref_json)
    got = [json.loads(line.split(" ", 1)[1]) for line in Path(log).read_text(errors="replace").splitlines()
           if line.startswith("GENERATED_IDS ")]
    ids = got[0][0] if got else None
    print(f"  prompt {ref['prompt_ids']}: MindSpore {ids}, PyTorch (HF Qwen2 greedy) {ref['generated_ids']} "
          f"({ref['text']!r})")
    return ids == ref["generated_ids"]


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "data":
        make_data(args[0])
    elif command == "hf":
        make_hf(args[0])
    elif command == "bare":
        run_bare(args)
    elif command == "observe":
        run_observed(args)
    elif command == "loss":
        reference_loss(args[0], args[1], int(args[2]))
    elif command == "generate":
        reference_generate(args[0], args[1], int(args[2]))
    else:
        judges = {"judge-loss": lambda: judge_loss(args[0], args[1]), "judge-dp": lambda: judge_dp(args[0], args[1]),
                  "judge-field": lambda: judge_field(args[0], int(args[1])),
                  "judge-generate": lambda: judge_generate(args[0], args[1])}
        if command not in judges:
            print(__doc__, file=sys.stderr)
            return 2
        ok = judges[command]()
        print("  PASS" if ok else "  FAIL")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
