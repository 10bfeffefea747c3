#!/usr/bin/env bash
# Run the real MindSpeed-LLM's MindSpore flow on mindspeed_ms (a local check, not part of CI: it needs
# the sources of MindSpeed, MindSpeed-LLM and Megatron-LM, which are not on the package index).
#
# Usage: scripts/real_mindspeed_llm_check.sh MINDSPEED_DIR MINDSPEED_LLM_DIR MEGATRON_LM_DIR [WORK_DIR]
#   MINDSPEED_DIR      a checkout of Ascend/MindSpeed, branch 2.2.0_core_r0.12.1
#   MINDSPEED_LLM_DIR  a checkout of Ascend/MindSpeed-LLM, tag/branch 2.2.0
#   MEGATRON_LM_DIR    a checkout of NVIDIA/Megatron-LM, tag core_v0.12.1 (its megatron/training, legacy and
#                      inference are used; megatron.core is the installed megatron-core 0.12.1)
# Environment: MINDSPEED_MS_MISSING_TARGETS=skip to leave out targets that do not exist in the pinned
# versions instead of stopping at the first; MINDSPEED_MS_PYTHON the interpreter with mindspore, msadapter,
# megatron-core and mindspeed_ms (default: python3 on PATH). Prints a summary; writes WORK_DIR/status.json.
# Exits non-zero when MindSpeed-LLM's flow stops (or the set-up fails). The field's canonical set-up: checkouts
# on PYTHONPATH, no distribution metadata (MindSpeed's version is read from its source). A training run:
# scripts/real_mindspeed_llm_pretrain.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="${4:-$ROOT/.realcheck}"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
mkdir -p "$WORK/megatron/megatron"
for part in training legacy inference; do ln -sfn "$MEG/megatron/$part" "$WORK/megatron/megatron/$part"; done
# MindSpeed-LLM's own pins; --no-deps: torch is MSAdapter's in MindSpore mode and must not be installed
if [ ! -f "$WORK/deps/.complete" ]; then
  "$PY" -m pip install -q --no-deps --target "$WORK/deps" transformers==4.57.1 accelerate==1.10.1 peft==0.7.1 \
    tqdm==4.67.1 huggingface_hub==0.36.2 tokenizers==0.22.2 regex==2024.11.6 pyyaml==6.0.2 filelock==3.16.1 \
    fsspec==2024.10.0
  touch "$WORK/deps/.complete"
fi
# CANN's acl, absent off the NPU, is mindspeed_ms's built-in (megatron_training provider)
export PYTHONPATH="$MS:$LLM:$WORK/megatron:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
cd "$WORK"
exec "$PY" "$ROOT/scripts/real_mindspeed_llm_check.py" "$WORK/status.json"
