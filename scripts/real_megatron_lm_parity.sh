#!/usr/bin/env bash
# Megatron-LM core_v0.12.1's own pretrain_gpt.py, unchanged, under `mindspeed-ms parity`: real CPU PyTorch (torchrun)
# against mindspeed_ms on MindSpore's CPU backend (msrun), same weights and batches, at tensor parallel 1 and 2. A tiny
# LLaMA-shaped GPT (RMSNorm, SwiGLU, RoPE; local transformer implementation, mock data), 10 iterations of 2
# micro-batches each. A local check, not CI
# (Megatron-LM's megatron/training is not on the package index).
#
# Usage: scripts/real_megatron_lm_parity.sh MEGATRON_LM_DIR [WORK_DIR]
#   MEGATRON_LM_DIR  checkout of NVIDIA/Megatron-LM, tag core_v0.12.1 (on PYTHONPATH: its megatron.core and
#                    megatron.training are used)
# Environment: MINDSPEED_MS_PYTHON            the interpreter with mindspore, msadapter, megatron-core and
#                                             mindspeed_ms (default: python3 on PATH); its bin/ holds msrun and
#                                             mindspeed-ms
#              MINDSPEED_MS_REFERENCE_PYTHON  the interpreter with real (CPU) PyTorch and megatron-core (required;
#                                             scripts/make_reference_venv.sh builds one)
# Megatron-LM's own Python dependencies (six, regex, pyyaml) are installed, pinned, into WORK_DIR/deps (not into
# either environment) and put on PYTHONPATH. Prints the parity tables (loss and grad norm per step, both sides);
# exits non-zero when a run stops or the loss differs by more than 1e-4 relative at any step.
set -euo pipefail
if [ $# -lt 1 ]; then sed -n '2,18p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MEG="$(cd "$1" && pwd)"
WORK="$(mkdir -p "${2:-$ROOT/.realcheck/megatron-lm-parity}" && cd "${2:-$ROOT/.realcheck/megatron-lm-parity}" && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
REF="${MINDSPEED_MS_REFERENCE_PYTHON:?set MINDSPEED_MS_REFERENCE_PYTHON to a Python with real CPU PyTorch}"
tag() { "$1" -c 'import sys, sysconfig; print(sys.implementation.cache_tag, sysconfig.get_platform())'; }
if [ "$(tag "$PY")" != "$(tag "$REF")" ]; then
  echo "the two interpreters differ ($(tag "$PY") vs $(tag "$REF")): one dependency folder cannot serve both" >&2
  exit 2
fi
if [ ! -f "$WORK/deps/.complete" ]; then
  "$REF" -m pip install -q --no-deps --target "$WORK/deps" six==1.16.0 regex==2024.11.6 pyyaml==6.0.2
  touch "$WORK/deps/.complete"
fi
export PYTHONPATH="$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$BIN:$PATH" GLOG_v=3
status=0
for tp in 1 2; do
  echo "=== Megatron-LM pretrain_gpt.py, tensor parallel $tp: PyTorch (CPU) vs mindspeed_ms (MindSpore CPU)"
  rm -rf "$WORK/tp$tp"
  if ! (cd "$WORK" && "$BIN/mindspeed-ms" parity --reference-python "$REF" --nproc "$tp" --work-dir "$WORK/tp$tp" \
      --loss-rtol 1e-4 --timeout 1200 -- "$MEG/pretrain_gpt.py" \
      --transformer-impl local --tensor-model-parallel-size "$tp" --num-layers 2 --hidden-size 64 \
      --ffn-hidden-size 172 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
      --micro-batch-size 2 --global-batch-size 4 --tokenizer-type NullTokenizer --vocab-size 4096 \
      --make-vocab-size-divisible-by 1 --mock-data --split 949,50,1 --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine \
      --train-iters 10 --weight-decay 0.1 --clip-grad 1.0 --init-method-std 0.02 --position-embedding-type rope \
      --normalization RMSNorm \
      --swiglu --disable-bias-linear --untie-embeddings-and-output-weights --attention-dropout 0.0 \
      --hidden-dropout 0.0 --no-masked-softmax-fusion --attention-softmax-in-fp32 --no-gradient-accumulation-fusion \
      --no-bias-swiglu-fusion --no-rope-fusion --no-bias-dropout-fusion --no-persist-layer-norm --log-interval 1 \
      --eval-interval 1000 --eval-iters 0 --seed 1234 --distributed-backend gloo); then
    echo "FAIL: parity at tensor parallel $tp (see $WORK/tp$tp)" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "PASS: Megatron-LM pretrain_gpt.py computes the same on both backends at tp=1 and tp=2"
exit $status
