#!/usr/bin/env bash
# Train the small megatron-core GPT of pretrain_gpt.py on MindSpore under msrun (CPU or Ascend).
#
# Usage: examples/pretrain_gpt.sh [WORKERS] [extra pretrain_gpt.py arguments...]
#   examples/pretrain_gpt.sh                 # 1 worker
#   examples/pretrain_gpt.sh 2               # 2 workers, tensor parallel size 2
#   examples/pretrain_gpt.sh 2 --train-iters 50
#   examples/pretrain_gpt.sh 2 --pipeline-model-parallel-size 2 --micro-batch-size 2 --global-batch-size 8
#   examples/pretrain_gpt.sh 2 --tensor-model-parallel-size 1 --use-distributed-optimizer   # data parallel 2
#   examples/pretrain_gpt.sh 2 --tensor-model-parallel-size 1 --num-experts 4 --expert-model-parallel-size 2
# Without a parallel-size flag the WORKERS form one tensor-parallel group; with one, data parallel is what
# the sizes leave of WORKERS. The same arguments run on PyTorch: torchrun --nproc-per-node WORKERS
# examples/pretrain_gpt.py ... (gloo on a CPU build). Environment: MASTER_PORT (default 8118), LOG_DIR
# (default ./msrun_logs: worker_N.log per rank; msrun also echoes the workers' output). Put the virtual
# environment's bin/ first on PATH: msrun starts its workers with a bare `python`.
set -euo pipefail

WORKERS="${1:-1}"
if [ "$#" -gt 0 ]; then shift; fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOG_DIR="${LOG_DIR:-./msrun_logs}"
export GLOG_v="${GLOG_v:-3}"   # keep MindSpore's own logging quiet

LAYOUT=(--tensor-model-parallel-size "$WORKERS")
for arg in "$@"; do
    case "$arg" in
        --tensor-model-parallel-size|--pipeline-model-parallel-size|--expert-model-parallel-size) LAYOUT=() ;;
    esac
done

exec msrun --worker_num="$WORKERS" --local_worker_num="$WORKERS" --master_port="${MASTER_PORT:-8118}" \
    --log_dir="$LOG_DIR" --join=True --cluster_time_out=120 \
    "$HERE/pretrain_gpt.py" "${LAYOUT[@]}" --ai-framework mindspore "$@"
