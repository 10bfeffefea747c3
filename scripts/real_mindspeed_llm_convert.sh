#!/usr/bin/env bash
# MindSpeed-LLM 2.2.0's own checkpoint conversion, convert_ckpt.py (HF -> Megatron mcore, as its
# examples/mcore/llama2/ckpt_convert_llama2_hf2mcore.sh runs it), unchanged, on mindspeed_ms (MindSpore CPU backend),
# then MindSpeed-LLM's own pretrain_gpt.py --load of the converted checkpoint. A local check, not CI.
#   1. a tiny randomly initialised HF LLaMA (2 layers, hidden 64, 4 heads, vocab 4096, float32) is written with
#      transformers 4.57.1 (MindSpeed-LLM's pin) on real PyTorch;
#   2. `mindspeed-ms run --ai-framework mindspore -- python convert_ckpt.py --load-model-type hf --save-model-type mg
#      --use-mcore-models --model-type-hf llama2 --params-dtype fp32` converts it on MindSpore (tp1 pp1, torch format);
#   3. real PyTorch torch.load()s the converted file: every tensor must equal the HF weight it comes from, bit for bit
#      (Megatron's layout: q, k, v interleaved per head in linear_qkv, gate and up stacked in linear_fc1). The
#      conversion itself cannot run on CPU PyTorch (MindSpeed-LLM imports torch_npu at import), so the HF weights are
#      the reference;
#   4. MindSpeed-LLM's pretrain_gpt.py on MindSpore (msrun) and Megatron-LM's pretrain_gpt.py on real PyTorch
#      (torchrun) both --load the converted checkpoint (--finetune) and train 3 iterations on mock data: their losses
#      must agree within 1e-4 relative at every iteration.
#
# Usage: scripts/real_mindspeed_llm_convert.sh MINDSPEED_DIR MINDSPEED_LLM_DIR MEGATRON_LM_DIR [WORK_DIR]
# Environment: MINDSPEED_MS_PYTHON, MINDSPEED_MS_REFERENCE_PYTHON  as for scripts/real_mindspeed_llm_pretrain.sh
#              MASTER_PORT  first rendezvous port (default 29721; the PyTorch run takes the next)
# MindSpeed-LLM's Python dependencies (pinned, --no-deps) go into WORK_DIR/deps, serving both interpreters (they must
# share a Python version); the few the reference venv lacks for transformers into WORK_DIR/refdeps.
# MINDSPEED_MS_MISSING_TARGETS=skip, as in real_mindspeed_llm_pretrain.sh (MindSpeed-LLM patches a transformers
# method 4.57.1 renamed). Exits non-zero when a step stops, a tensor differs or a loss is out of tolerance.
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,25p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="$(mkdir -p "${4:-$ROOT/.realcheck/mindspeed-llm-convert}" && cd "${4:-$ROOT/.realcheck/mindspeed-llm-convert}" \
        && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
REF="${MINDSPEED_MS_REFERENCE_PYTHON:?set MINDSPEED_MS_REFERENCE_PYTHON to a Python with real CPU PyTorch}"
PORT="${MASTER_PORT:-29721}"
. "$ROOT/scripts/_deps.sh"
same_python "$PY" "$REF"
pinned "$PY" "$WORK/deps" "${HF_PINS[@]}"
pinned "$REF" "$WORK/refdeps" "${REF_HF_PINS[@]}"
export GLOG_v=3 MINDSPEED_MS_MISSING_TARGETS=skip
REFPATH="$WORK/deps:$WORK/refdeps${PYTHONPATH:+:$PYTHONPATH}"
MSPATH="$MS:$LLM:$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"

echo "=== 1. a tiny random HF LLaMA (transformers 4.57.1, real PyTorch)"
rm -rf "$WORK/hf" "$WORK/converted" "$WORK/loss-mindspore-logs"
PYTHONPATH="$REFPATH" "$REF" - "$WORK/hf" <<'EOF'
import sys
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(1234)
config = LlamaConfig(vocab_size=4096, hidden_size=64, intermediate_size=172, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=32, rms_norm_eps=1e-6,
                     tie_word_embeddings=False, torch_dtype="float32")
LlamaForCausalLM(config).to(torch.float32).save_pretrained(sys.argv[1], safe_serialization=True)
open(f"{sys.argv[1]}/tokenizer.model", "wb").close()  # convert_ckpt.py requires the flag; the file is not read
EOF

echo "=== 2. MindSpeed-LLM's convert_ckpt.py on MindSpore"
if ! (cd "$LLM" && PYTHONPATH="$MSPATH" PATH="$BIN:$PATH" "$BIN/mindspeed-ms" run --ai-framework mindspore -- \
      "$PY" convert_ckpt.py --use-mcore-models --model-type GPT --load-model-type hf --save-model-type mg \
      --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1 --load-dir "$WORK/hf" \
      --save-dir "$WORK/converted" --tokenizer-model "$WORK/hf/tokenizer.model" --model-type-hf llama2 \
      --params-dtype fp32 \
      > "$WORK/convert.log" 2>&1); then
  tail -30 "$WORK/convert.log" >&2
  echo "FAIL: convert_ckpt.py stopped on MindSpore (see $WORK/convert.log)" >&2
  exit 1
fi

echo "=== 3. the converted tensors (torch.load on real PyTorch) against the HF weights"
PYTHONPATH="$REFPATH" "$REF" - "$WORK/hf" "$WORK/converted" <<'EOF'
import sys
import torch
from safetensors.torch import load_file

hf = load_file(f"{sys.argv[1]}/model.safetensors")
saved = torch.load(f"{sys.argv[2]}/iter_0000001/mp_rank_00/model_optim_rng.pt", map_location="cpu", weights_only=False)
heads, hidden = 4, 64
expected = {"embedding.word_embeddings.weight": hf["model.embed_tokens.weight"],
            "output_layer.weight": hf["lm_head.weight"], "decoder.final_layernorm.weight": hf["model.norm.weight"]}
for i in range(2):
    h, m = f"model.layers.{i}.", f"decoder.layers.{i}."
    q, k, v = (hf[f"{h}self_attn.{n}_proj.weight"].view(heads, hidden // heads, hidden) for n in "qkv")
    expected[f"{m}self_attention.linear_qkv.weight"] = torch.cat([q, k, v], dim=1).reshape(3 * hidden, hidden)
    expected[f"{m}self_attention.linear_proj.weight"] = hf[f"{h}self_attn.o_proj.weight"]
    expected[f"{m}input_layernorm.weight"] = hf[f"{h}input_layernorm.weight"]
    expected[f"{m}mlp.linear_fc1.weight"] = torch.cat([hf[f"{h}mlp.gate_proj.weight"], hf[f"{h}mlp.up_proj.weight"]])
    expected[f"{m}mlp.linear_fc2.weight"] = hf[f"{h}mlp.down_proj.weight"]
    expected[f"{m}pre_mlp_layernorm.weight"] = hf[f"{h}post_attention_layernorm.weight"]
tensors = {k: v for k, v in saved["model"].items() if isinstance(v, torch.Tensor) and not k.endswith("_extra_state")}
bad = sorted(set(expected) ^ set(tensors))
for name in sorted(set(expected) & set(tensors)):
    got, want = tensors[name], expected[name]
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        bad.append(name)
print(f"  {len(tensors)} tensors in the converted checkpoint, {len(expected)} HF-derived; differ or missing: "
      f"{bad or 'none'}")
sys.exit(1 if bad else 0)
EOF

echo "=== 4. pretrain_gpt.py --load of the converted checkpoint: MindSpeed-LLM's on MindSpore, Megatron-LM's on PyTorch"
MODEL=(--transformer-impl local --num-layers 2 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4
       --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4
       --tokenizer-type NullTokenizer --vocab-size 4095 --make-vocab-size-divisible-by 1 --mock-data --split 949,50,1
       --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --train-iters 3 --weight-decay 0.1 --clip-grad 1.0
       --init-method-std 0.02 --position-embedding-type rope --normalization RMSNorm --norm-epsilon 1e-6 --swiglu
       --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0
       --no-masked-softmax-fusion --attention-softmax-in-fp32 --no-gradient-accumulation-fusion
       --no-bias-swiglu-fusion --no-rope-fusion --no-bias-dropout-fusion --log-interval 1 --eval-interval 1000
       --eval-iters 0 --seed 1234 --distributed-backend gloo --load "$WORK/converted" --finetune --no-load-optim
       --no-load-rng --ckpt-format torch)  # NullTokenizer's vocabulary is --vocab-size + 1 (eod): 4096, as converted
if ! (cd "$WORK" && PYTHONPATH="$MSPATH" PATH="$BIN:$PATH" "$BIN/mindspeed-ms" run -- "$BIN/msrun" --worker_num=1 \
      --local_worker_num=1 --master_port="$PORT" --join=True --cluster_time_out=300 \
      --log_dir="$WORK/loss-mindspore-logs" "$LLM/pretrain_gpt.py" --ai-framework mindspore --use-mcore-models \
      "${MODEL[@]}" > "$WORK/loss-mindspore.log" 2>&1); then
  tail -30 "$WORK"/loss-mindspore-logs/worker_0.log >&2 || true
  echo "FAIL: MindSpeed-LLM's pretrain_gpt.py --load stopped on MindSpore (see $WORK/loss-mindspore-logs)" >&2
  exit 1
fi
if ! (cd "$WORK" && PYTHONPATH="$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}" "$BIN/mindspeed-ms" run \
      --ai-framework pytorch -- "$REF" -m torch.distributed.run --nproc-per-node=1 --master-port=$((PORT + 1)) \
      "$MEG/pretrain_gpt.py" "${MODEL[@]}" --no-persist-layer-norm > "$WORK/loss-pytorch.log" 2>&1); then
  tail -30 "$WORK/loss-pytorch.log" >&2
  echo "FAIL: Megatron-LM's pretrain_gpt.py --load stopped on PyTorch (see $WORK/loss-pytorch.log)" >&2
  exit 1
fi
losses() { sed -n 's/.*iteration *\([0-9][0-9]*\)\/ *[0-9]* |.*lm loss: \([^ |]*\).*/\1 \2/p' "$@" | sort -un -k1,1; }
losses "$WORK"/loss-mindspore-logs/worker_0.log > "$WORK/mindspore.losses"
losses "$WORK/loss-pytorch.log" > "$WORK/pytorch.losses"
"$PY" - "$WORK/pytorch.losses" "$WORK/mindspore.losses" <<'EOF'
import sys
ref, cand = (dict(line.split() for line in open(path) if line.strip()) for path in sys.argv[1:])
ok = sorted(ref) == sorted(cand) == ["1", "2", "3"]
for it in sorted(ref):
    a, b = float(cand.get(it, "nan")), float(ref[it])
    rel = abs(a - b) / abs(b)
    ok = ok and rel <= 1e-4
    print(f"  iteration {it}: PyTorch (Megatron-LM) {b:.6f}  MindSpore (MindSpeed-LLM) {a:.6f}  rel {rel:.1e}")
print("PASS: the converted checkpoint is the HF model's, and both backends train on from it alike" if ok else
      "FAIL: the losses differ or are missing")
sys.exit(0 if ok else 1)
EOF
