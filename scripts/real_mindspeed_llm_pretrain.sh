#!/usr/bin/env bash
# MindSpeed-LLM 2.2.0's own pretrain_gpt.py, unchanged, on mindspeed_ms (MindSpore CPU backend), in the field's
# canonical set-up: source checkouts of MindSpeed, MindSpeed-LLM and Megatron-LM on PYTHONPATH, nothing of them
# pip-installed, no CANN. A tiny LLaMA-shaped mcore model on mock data, 20 iterations on 1 msrun worker and on 2
# (data parallel 2, same global batch), launched as `mindspeed-ms run -- msrun ...`. A local check, not CI (the
# sources are not on the package index).
#
# Usage: scripts/real_mindspeed_llm_pretrain.sh MINDSPEED_DIR MINDSPEED_LLM_DIR MEGATRON_LM_DIR [WORK_DIR]
#   MINDSPEED_DIR      checkout of Ascend/MindSpeed, branch 2.2.0_core_r0.12.1
#   MINDSPEED_LLM_DIR  checkout of Ascend/MindSpeed-LLM, tag 2.2.0
#   MEGATRON_LM_DIR    checkout of NVIDIA/Megatron-LM, tag core_v0.12.1
# Environment: MINDSPEED_MS_PYTHON  the interpreter with mindspore, msadapter, megatron-core and mindspeed_ms
#                                   (default: python3 on PATH); its bin/ must hold msrun and mindspeed-ms
#              MASTER_PORT          msrun's port (default 8129)
# The only mindspeed_ms setting used: MINDSPEED_MS_MISSING_TARGETS=skip (MindSpeed-LLM 2.2.0 patches
# PretrainedConfig.dict_torch_dtype_to_str, which its own transformers pin 4.57.1 renamed), plus
# MINDSPEED_MS_TRACE/_TRACE_FILE to read status() at exit.
# Prints the per-iteration losses of both runs and their relative differences; exits non-zero when a run stops
# or a figure is out of tolerance (scripts/real_entry_figures.py).
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,20p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="$(mkdir -p "${4:-$ROOT/.realcheck/mindspeed-llm-pretrain}" && cd "${4:-$ROOT/.realcheck/mindspeed-llm-pretrain}" && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
PORT="${MASTER_PORT:-8129}"
VOCAB=4096; ITERS=20
# MindSpeed-LLM's own pins, and what they import, each pinned; --no-deps: torch is MSAdapter's here
if [ ! -f "$WORK/deps/.complete" ]; then
  "$PY" -m pip install -q --no-deps --target "$WORK/deps" transformers==4.57.1 accelerate==1.10.1 peft==0.7.1 \
    tqdm==4.67.1 huggingface_hub==0.36.2 tokenizers==0.22.2 regex==2024.11.6 pyyaml==6.0.2 filelock==3.16.1 \
    fsspec==2024.10.0 six==1.16.0
  touch "$WORK/deps/.complete"
fi
export PYTHONPATH="$MS:$LLM:$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$BIN:$PATH" GLOG_v=3 MINDSPEED_MS_MISSING_TARGETS=skip MINDSPEED_MS_TRACE=1
cd "$WORK"
run() {  # run WORKERS: 20 iterations, global batch 4
  local workers=$1
  rm -rf "$WORK/log$workers"
  MINDSPEED_MS_TRACE_FILE="$WORK/status-$workers.json" "$BIN/mindspeed-ms" run -- "$BIN/msrun" \
    --worker_num="$workers" --local_worker_num="$workers" --master_port="$PORT" --join=True --cluster_time_out=300 \
    --log_dir="$WORK/log$workers" "$LLM/pretrain_gpt.py" --ai-framework mindspore \
    --use-mcore-models --transformer-impl local --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \
    --num-layers 2 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4 --seq-length 32 \
    --max-position-embeddings 32 --micro-batch-size $((4 / workers)) --global-batch-size 4 \
    --tokenizer-type NullTokenizer --vocab-size $VOCAB --make-vocab-size-divisible-by 1 --mock-data --split 949,50,1 \
    --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --train-iters $ITERS --weight-decay 0.1 --clip-grad 1.0 \
    --adam-beta1 0.9 --adam-beta2 0.95 --init-method-std 0.02 --position-embedding-type rope --normalization RMSNorm \
    --swiglu --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0 \
    --no-masked-softmax-fusion --attention-softmax-in-fp32 --no-gradient-accumulation-fusion --no-bias-swiglu-fusion \
    --no-rope-fusion --no-bias-dropout-fusion --log-interval 1 --eval-interval 1000 --eval-iters 0 --seed 1234 \
    --distributed-backend gloo --no-load-optim --no-load-rng > "$WORK/msrun-$workers.out" 2>&1
}
status=0
for workers in 1 2; do
  if ! run "$workers"; then
    echo "FAIL: MindSpeed-LLM pretrain_gpt.py stopped on $workers worker(s); last lines of its log:" >&2
    tail -n 30 "$WORK/msrun-$workers.out" "$WORK/log$workers"/worker_*.log >&2 || true
    status=1
  fi
done
"$PY" "$ROOT/scripts/real_entry_figures.py" llm --vocab $VOCAB --iterations $ITERS --status "$WORK/status-1.json" \
  "$WORK/log1" "$WORK/log2" || status=1
exit $status
