"""The evaluation steps of scripts/real_mindspeed_llm_posttrain.sh (MindSpeed-LLM's `evaluation.py --task mmlu` on
MindSpore against an independent computation of the same predictions with HF transformers' Qwen2 on real PyTorch;
MindSpeed-LLM's package cannot import on CPU PyTorch: its __init__ imports torch_npu). Subcommands:

  data OUT_DIR                 a tiny MMLU-style test set, OUT_DIR/test/abstract_algebra_test.csv (question, A-D,
                               answer; no header, as MMLU's csv files), built offline
  reference HF TEST_DIR TEMPLATE
                               (real PyTorch) what evaluation.py's mmlu task predicts, computed independently:
                               per row the 5-shot prompt (the subject's few-shot text from MindSpeed-LLM's template
                               file TEMPLATE, a blank line, the question with its choices A-D, "Answer:"), encoded
                               by tokenizer.encode, one greedy token (max-new-tokens 1) from HF Qwen2, decoded as
                               inference decodes it (skip special tokens), the answer letter read as the task reads
                               it (its two regular expressions on the stripped text), scored against the csv's answer
  judge REF_JSON LOG           the token ids evaluation.py generated (observed where it hands them to the tokenizer's
                               batch_decode), row by row, and its printed score equal the reference's
"""

from __future__ import annotations

import csv
import json
import random
import re
import sys
from pathlib import Path
from typing import Any

SUBJECT = "abstract_algebra"
ROWS = 8
WORDS = "the sun moon water fire earth river city red blue green small large fast slow good bad first last".split()
# evaluation.py's mmlu task (mmlu_eval.py MmluEval): its instruction template and its two answer patterns
INSTRUCTION = "{few_shot_examples}\n\n{question}\nAnswer:"
PATTERNS = (r".*(?P<answer>[A|B|C|D])\..*", r"(?P<answer>[A|B|C|D])")
_IDS = re.compile(r"GENERATED_IDS (\[\[[\d, ]*\]\])")
_SCORE = re.compile(r"(\w+) has (\d+) corrects in (\d+) questions")


def make_data(out: str) -> None:
    rng = random.Random(7)
    test = Path(out, "test")
    test.mkdir(parents=True, exist_ok=True)
    with open(test / f"{SUBJECT}_test.csv", "w", newline="") as f:
        writer = csv.writer(f)
        for _ in range(ROWS):
            question = "which is " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5))) + "?"
            writer.writerow([question, *rng.sample(WORDS, 4), rng.choice("ABCD")])
    print(f"{ROWS} questions in {test / f'{SUBJECT}_test.csv'}")


def _answer(text: str) -> str | None:
    for pattern in PATTERNS:
        match = re.match(pattern, text)
        if match:
            return match.group("answer")
    return None


def reference(hf: str, test_dir: str, template: str) -> None:
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    shots = json.loads(Path(template).read_text(encoding="utf-8"))[SUBJECT]
    tokenizer = AutoTokenizer.from_pretrained(hf, use_fast=False)
    model = Qwen2ForCausalLM.from_pretrained(hf, dtype=torch.float32, attn_implementation="eager")
    rows: list[dict[str, Any]] = []
    with open(Path(test_dir, f"{SUBJECT}_test.csv"), newline="") as f:
        for question, a, b, c, d, correct in csv.reader(f):
            text = f"{question}\nA. {a}\nB. {b}\nC. {c}\nD. {d}"
            ids = tokenizer.encode(INSTRUCTION.format(few_shot_examples=shots, question=text))
            with torch.no_grad():
                token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            decoded = tokenizer.decode([token], skip_special_tokens=True).lstrip()
            rows.append({"prompt_tokens": len(ids), "generated_ids": [token], "text": decoded,
                         "answer": _answer(decoded), "correct": correct})
    right = sum(r["answer"] == r["correct"] for r in rows)
    print(json.dumps({"rows": rows, "corrects": right, "questions": len(rows)}))


def judge(ref_json: str, log: str) -> bool:
    lines = [line for line in Path(ref_json).read_text().splitlines() if line.startswith("{")]
    if not lines:
        print(f"  no reference figures in {ref_json}")
        return False
    ref = json.loads(lines[-1])
    text = Path(log).read_text(errors="replace")
    got = [json.loads(m.group(1))[0] for m in _IDS.finditer(text)]  # tqdm's bar may share the line
    want = [r["generated_ids"] for r in ref["rows"]]
    score = _SCORE.search(text)
    for i, row in enumerate(ref["rows"]):
        print(f"  row {i} ({row['prompt_tokens']} prompt tokens): MindSpore {got[i] if i < len(got) else None}, "
              f"PyTorch {row['generated_ids']} ({row['text']!r}, answer {row['answer']}, correct {row['correct']})")
    print(f"  score: MindSpore {score.group(2) + '/' + score.group(3) if score else None}, "
          f"PyTorch {ref['corrects']}/{ref['questions']}")
    return (got == want and score is not None and int(score.group(2)) == ref["corrects"]
            and int(score.group(3)) == ref["questions"])


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "data":
        make_data(args[0])
        return 0
    if command == "reference":
        reference(args[0], args[1], args[2])
        return 0
    if command != "judge":
        print(__doc__, file=sys.stderr)
        return 2
    ok = judge(args[0], args[1])
    print("  PASS" if ok else "  FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
