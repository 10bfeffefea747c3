#!/usr/bin/env bash
# Megatron-LM core_v0.12.1's own pretrain_gpt.py, unchanged: its training loop's time per iteration on real CPU
# PyTorch (torchrun) and on mindspeed_ms (MindSpore's CPU backend, msrun), alternating, in one run. The tiny
# LLaMA-shaped model of scripts/real_megatron_lm_parity.sh's tp1 layout (2 layers, hidden 64, RMSNorm, SwiGLU, RoPE,
# vocabulary 4096, micro batch 2, global batch 4, megatron's default 2 DataLoader workers), or GPT-3-shaped
# (MODEL=gpt3: LayerNorm, GeLU, learned positions, biases). A local benchmark, not CI (Megatron-LM's
# megatron/training is not on the package index).
#
# Usage: benchmarks/bench_field_loop.sh MEGATRON_LM_DIR [ROUNDS] [WORK_DIR]
#   MEGATRON_LM_DIR  checkout of NVIDIA/Megatron-LM, tag core_v0.12.1
#   ROUNDS           PyTorch/ours pairs (default 3)
# Environment: MINDSPEED_MS_PYTHON, MINDSPEED_MS_REFERENCE_PYTHON as for scripts/real_megatron_lm_parity.sh;
#              ITERS (default 60) iterations a run; MODEL llama (default) or gpt3.
# Prints each run's median of megatron's "elapsed time per iteration" over iterations 4 onwards, then the median of
# the runs' medians on each side and their ratio (ours / PyTorch). Exits non-zero when a run stops.
set -euo pipefail
if [ $# -lt 1 ]; then sed -n '2,16p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MEG="$(cd "$1" && pwd)"
ROUNDS="${2:-3}"
WORK="$(mkdir -p "${3:-$ROOT/.realcheck/field-loop}" && cd "${3:-$ROOT/.realcheck/field-loop}" && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
REF="${MINDSPEED_MS_REFERENCE_PYTHON:?set MINDSPEED_MS_REFERENCE_PYTHON to a Python with real CPU PyTorch}"
. "$ROOT/scripts/_deps.sh"
same_python "$PY" "$REF"
pinned "$REF" "$WORK/deps" six==1.16.0 regex==2024.11.6 pyyaml==6.0.2
export PYTHONPATH="$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$BIN:$PATH" GLOG_v=3
if [ "${MODEL:-llama}" = llama ]; then
  arch=(--position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear
        --untie-embeddings-and-output-weights --no-bias-swiglu-fusion --no-rope-fusion)
else
  arch=(--position-embedding-type learned_absolute --normalization LayerNorm)
fi
args=(--transformer-impl local --num-layers 2 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4
      --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4
      --tokenizer-type NullTokenizer --vocab-size 4096 --make-vocab-size-divisible-by 1 --mock-data
      --split 949,50,1 --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --train-iters "${ITERS:-60}"
      --weight-decay 0.1 --clip-grad 1.0 --init-method-std 0.02 --attention-dropout 0.0 --hidden-dropout 0.0
      --no-masked-softmax-fusion --attention-softmax-in-fp32 --no-gradient-accumulation-fusion
      --no-bias-dropout-fusion --no-persist-layer-norm --log-interval 1 --eval-interval 1000 --eval-iters 0
      --seed 1234 --distributed-backend gloo "${arch[@]}")
# the median of megatron's per-iteration times in a log, iterations 4 onwards
median() {
  grep -ao 'elapsed time per iteration (ms): [0-9.]*' "$1" | awk 'NR > 3 {print $NF}' | sort -g |
    awk '{v[NR] = $1} END {if (NR == 0) exit 1; print v[int((NR + 1) / 2)]}'
}
port=$((29700 + RANDOM % 200))
ours=()
theirs=()
for round in $(seq 1 "$ROUNDS"); do
  dir="$WORK/pytorch-$round"
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$WORK" && "$BIN/mindspeed-ms" run -- "$REF" -m torch.distributed.run --nproc_per_node 1 \
      --master_port "$((port + 2 * round))" "$MEG/pretrain_gpt.py" "${args[@]}" > "$dir/out.log" 2>&1) ||
    { echo "the PyTorch run $round stopped: $dir/out.log" >&2; tail -20 "$dir/out.log" >&2; exit 1; }
  theirs+=("$(median "$dir/out.log")")
  dir="$WORK/mindspore-$round"
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$WORK" && "$BIN/mindspeed-ms" run --ai-framework mindspore -- "$BIN/msrun" --worker_num=1 \
      --local_worker_num=1 --master_port="$((port + 2 * round + 1))" --join=True --cluster_time_out=120 \
      --log_dir="$dir" "$MEG/pretrain_gpt.py" "${args[@]}" > "$dir/out.log" 2>&1) ||
    { echo "our run $round stopped: $dir/worker_0.log" >&2; tail -20 "$dir/worker_0.log" >&2; exit 1; }
  ours+=("$(median "$dir/worker_0.log")")
  echo "round $round: PyTorch ${theirs[-1]} ms an iteration, mindspeed_ms ${ours[-1]} ms"
done
"$PY" - "${#theirs[@]}" "${theirs[@]}" "${ours[@]}" <<'EOF'
import statistics
import sys

count = int(sys.argv[1])
theirs, ours = [float(v) for v in sys.argv[2:2 + count]], [float(v) for v in sys.argv[2 + count:]]
pytorch, mine = statistics.median(theirs), statistics.median(ours)
print(f"Megatron-LM pretrain_gpt.py, {count} rounds: PyTorch {pytorch:.1f} ms an iteration "
      f"({min(theirs):.1f}-{max(theirs):.1f}), mindspeed_ms {mine:.1f} ms ({min(ours):.1f}-{max(ours):.1f}): "
      f"ratio {mine / pytorch:.2f}x")
EOF
