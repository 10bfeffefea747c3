#!/usr/bin/env bash
# Regenerate tests/conformance/inventory.json (issue 19, item 1): trace megatron-core's GPT example on real
# PyTorch (1 worker, then 2 workers with tensor parallel 2), then inventory the field's sources.
# Usage: scripts/make_inventory.sh [FIELD_DIR]   (default /work/field: Megatron-LM, MindSpeed, MindSpeed-LLM)
# Needs .venv-ref (scripts/make_reference_venv.sh). ~1 minute.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FIELD="${1:-/work/field}"
REF="$HERE/.venv-ref/bin/python"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" GLOG_v=3
cd "$TMP"   # the example writes files (schedule.log) into its working directory
"$REF" -m torch.distributed.run --nproc-per-node 1 --master-port "${MASTER_PORT:-29731}" \
    "$HERE/scripts/trace_gpt_ops.py" "$TMP/tp1.json" "$HERE/examples/pretrain_gpt.py" --train-iters 2 >/dev/null
"$REF" -m torch.distributed.run --nproc-per-node 2 --master-port "${MASTER_PORT:-29731}" \
    "$HERE/scripts/trace_gpt_ops.py" "$TMP/tp2.json" "$HERE/examples/pretrain_gpt.py" --train-iters 2 \
    --tensor-model-parallel-size 2 >/dev/null
"$REF" "$HERE/scripts/op_inventory.py" \
    "megatron-core=$FIELD/Megatron-LM/megatron/core,$FIELD/Megatron-LM/megatron/training" \
    "mindspeed=$FIELD/MindSpeed/mindspeed" "mindspeed-llm=$FIELD/MindSpeed-LLM/mindspeed_llm" \
    --gpt-trace "$TMP/tp1.json" --gpt-trace "$TMP/tp2.json" \
    --llm-entry "$FIELD/MindSpeed-LLM/pretrain_gpt.py" --out "$HERE/tests/conformance/inventory.json"
