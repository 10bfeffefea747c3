#!/usr/bin/env bash
# Build the PyTorch reference interpreter that `mindspeed-ms parity`, the parity tests and
# benchmarks/bench_train.py compare MindSpore against: real PyTorch (the CPU build lying on these
# machines' disk: no large download) + megatron-core 0.12.1 + mindspeed_ms (for its pytorch_cpu
# provider). Never install MSAdapter here: it overwrites real torch.
#
# Usage: scripts/make_reference_venv.sh [DIR]   (default: .venv-ref in the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-.venv-ref}"
rm -rf "$DIR"
python3 -m venv "$DIR"
"$DIR/bin/python" -m pip install -q --upgrade pip
"$DIR/bin/pip" install -q torch==2.13.0 "numpy<2" einops packaging psutil  # psutil: megatron-core's torch_dist writer
"$DIR/bin/pip" install -q expecttest  # torch.testing's OpInfo database imports it (scripts/opinfo_sweep.py)
"$DIR/bin/pip" install -q --no-deps megatron-core==0.12.1
"$DIR/bin/pip" install -q -e .
"$DIR/bin/python" -c "import torch, megatron.core; print('reference:', torch.__version__)"
