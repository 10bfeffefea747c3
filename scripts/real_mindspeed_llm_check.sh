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
# versions instead of stopping at the first. Prints a summary; writes WORK_DIR/status.json.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="${4:-$ROOT/.realcheck}"
PY="$ROOT/.venv/bin/python"
mkdir -p "$WORK/megatron/megatron" "$WORK/stubs" "$WORK/distinfo/mindspeed-0.12.1.dist-info"
for part in training legacy inference; do ln -sfn "$MEG/megatron/$part" "$WORK/megatron/megatron/$part"; done
# MindSpeed-LLM's own pins; --no-deps: torch is MSAdapter's in MindSpore mode and must not be installed
if [ ! -d "$WORK/deps/transformers" ]; then
  "$PY" -m pip install -q --no-deps --target "$WORK/deps" transformers==4.57.1 accelerate==1.10.1 peft==0.7.1 \
    tqdm 'huggingface_hub==0.36.2' 'tokenizers==0.22.2' regex pyyaml filelock fsspec
fi
# what an installed MindSpeed reports (its setup.py: the Megatron core it pairs with), and CANN's acl module
printf 'Metadata-Version: 2.1\nName: mindspeed\nVersion: 0.12.1\n' > "$WORK/distinfo/mindspeed-0.12.1.dist-info/METADATA"
echo "# empty stand-in for CANN's acl (not available off the NPU)" > "$WORK/stubs/acl.py"
export PYTHONPATH="$MS:$LLM:$WORK/megatron:$WORK/deps:$WORK/distinfo:$WORK/stubs"
cd "$WORK"
exec "$PY" "$ROOT/scripts/real_mindspeed_llm_check.py" "$WORK/status.json"
