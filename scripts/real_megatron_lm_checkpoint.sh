#!/usr/bin/env bash
# Megatron-LM core_v0.12.1's own pretrain_gpt.py, unchanged, saves a checkpoint on one backend and resumes it on the
# other: real CPU PyTorch (torchrun) and mindspeed_ms on MindSpore's CPU backend (msrun), in both directions, in
# Megatron's two checkpoint formats. The model and flags are scripts/real_megatron_lm_parity.sh's LLaMA-shaped tiny
# GPT (10 iterations, global batch 4). A local check, not CI (megatron/training is not on the package index).
#
# For each format and layout:
#   1. `mindspeed-ms parity` runs the uninterrupted 10 iterations on both sides (the MindSpore run starts from the
#      PyTorch run's initial parameters), each with --save-interval 5 into its own folder (pt_ckpt, ms_ckpt);
#   2. PyTorch resumes MindSpore's iteration-5 checkpoint (--load of a folder holding iter_0000005 and a tracker
#      saying 5), MindSpore resumes PyTorch's, both with --no-load-rng (a random generator's state cannot cross
#      backends: PyTorch's is a 5056-byte Mersenne twister, MindSpore's another; both sides say so with a typed
#      error without the flag; no random number is drawn while training, so the trajectory is the same);
#   3. each resumed run's losses at iterations 6..10 must equal the uninterrupted PyTorch run's within 1e-4 relative.
#
# Usage: scripts/real_megatron_lm_checkpoint.sh MEGATRON_LM_DIR [WORK_DIR]
# Environment: MINDSPEED_MS_PYTHON, MINDSPEED_MS_REFERENCE_PYTHON  as for scripts/real_megatron_lm_parity.sh
#              LAYOUTS   comma-separated, of tp1, tp2, dp2-distopt (default: all three)
#              FORMATS   comma-separated, of torch_dist, torch (default: both)
#              PORT      first of the rendezvous ports used (default 29711; each run takes the next)
# Exits non-zero when a run stops or a resumed loss differs.
set -euo pipefail
if [ $# -lt 1 ]; then sed -n '2,22p' "$0" >&2; exit 2; fi

# name|workers|flags
LAYOUT_TABLE='
tp1|1|
tp2|2|--tensor-model-parallel-size 2
dp2-distopt|2|--use-distributed-optimizer
'
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MEG="$(cd "$1" && pwd)"
WORK="$(mkdir -p "${2:-$ROOT/.realcheck/megatron-lm-checkpoint}" && cd "${2:-$ROOT/.realcheck/megatron-lm-checkpoint}" \
        && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
REF="${MINDSPEED_MS_REFERENCE_PYTHON:?set MINDSPEED_MS_REFERENCE_PYTHON to a Python with real CPU PyTorch}"
WANT="${LAYOUTS:-tp1,tp2,dp2-distopt}"
FORMATS="${FORMATS:-torch_dist,torch}"
port="${PORT:-29711}"
for name in ${WANT//,/ }; do
  echo "$LAYOUT_TABLE" | grep -q "^$name|" || { echo "unknown layout '$name' (tp1, tp2, dp2-distopt)" >&2; exit 2; }
done
for format in ${FORMATS//,/ }; do
  case "$format" in torch_dist|torch) ;; *) echo "unknown format '$format' (torch_dist, torch)" >&2; exit 2;; esac
done
if [ ! -f "$WORK/deps/.complete" ]; then
  "$REF" -m pip install -q --no-deps --target "$WORK/deps" six==1.16.0 regex==2024.11.6 pyyaml==6.0.2
  touch "$WORK/deps/.complete"
fi
export PYTHONPATH="$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$BIN:$PATH" GLOG_v=3
MODEL=(--transformer-impl local --num-layers 2 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4
       --seq-length 32 --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 4
       --tokenizer-type NullTokenizer --vocab-size 4096 --make-vocab-size-divisible-by 1 --mock-data --split 949,50,1
       --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --train-iters 10 --weight-decay 0.1 --clip-grad 1.0
       --init-method-std 0.02 --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear
       --untie-embeddings-and-output-weights --attention-dropout 0.0 --hidden-dropout 0.0
       --no-masked-softmax-fusion --attention-softmax-in-fp32 --no-gradient-accumulation-fusion
       --no-bias-swiglu-fusion --no-rope-fusion --no-bias-dropout-fusion --no-persist-layer-norm --log-interval 1
       --eval-interval 1000 --eval-iters 0 --seed 1234 --distributed-backend gloo)

# losses LOG...: "iteration loss" per logged iteration (Megatron's "lm loss: 8.273238E+00"), once each
losses() { sed -n 's/.*iteration *\([0-9][0-9]*\)\/ *[0-9]* |.*lm loss: \([^ |]*\).*/\1 \2/p' "$@" | sort -un -k1,1; }

# compare WHAT REFERENCE CANDIDATE: the candidate's losses 6..10 against the reference's, 1e-4 relative
compare() {
  "$PY" - "$1" "$2" "$3" <<'EOF'
import sys
what, ref, cand = sys.argv[1], *(dict(line.split() for line in open(p) if line.strip()) for p in sys.argv[2:])
worst, ok = 0.0, True
for it in map(str, range(6, 11)):
    if it not in ref or it not in cand:
        print(f"  {what}: iteration {it} missing ({'reference' if it not in ref else 'resumed run'})"); ok = False
        continue
    a, b = float(cand[it]), float(ref[it])
    rel = abs(a - b) / abs(b)
    worst = max(worst, rel)
    print(f"  {what}: iteration {it:>2}  uninterrupted PyTorch {b:.6f}  resumed {a:.6f}  rel {rel:.1e}")
    ok = ok and rel <= 1e-4
print(f"  {what}: {'OK' if ok else 'DIFFERS'} (worst rel {worst:.1e})")
sys.exit(0 if ok else 1)
EOF
}

status=0
passed=()
failed=()
for format in ${FORMATS//,/ }; do
  for name in ${WANT//,/ }; do
    row="$(echo "$LAYOUT_TABLE" | grep "^$name|")"
    nproc="$(echo "$row" | cut -d'|' -f2)"
    read -r -a extra <<< "$(echo "$row" | cut -d'|' -f3)"
    run="$format-$name"
    dir="$WORK/$run"
    rm -rf "${dir:?}"
    mkdir -p "$dir"
    echo "=== $run ($nproc workers ${extra[*]:-}): uninterrupted runs on both backends, saving at iteration 5"
    args=("${MODEL[@]}" ${extra[@]+"${extra[@]}"} --ckpt-format "$format" --save-interval 5)
    if ! (cd "$dir" && "$BIN/mindspeed-ms" parity --reference-python "$REF" --nproc "$nproc" --work-dir "$dir/parity" \
          --loss-rtol 1e-4 --timeout 1200 --candidate-args "$(printf '%q ' "${args[@]}" --save "$dir/ms_ckpt")" \
          -- "$MEG/pretrain_gpt.py" "${args[@]}" --save "$dir/pt_ckpt" > "$dir/parity.log" 2>&1); then
      tail -30 "$dir/parity.log" >&2
      echo "FAIL: $run: the uninterrupted runs stopped or differ (see $dir/parity.log)" >&2
      failed+=("$run"); status=1; continue
    fi
    grep '^verdict' "$dir/parity.log" || true
    losses "$dir/parity/reference.log" > "$dir/reference.losses"
    # each side's checkpoint as a run that stopped at iteration 5 leaves it (--ckpt-step 5 would not do: with the
    # distributed optimizer in the torch format Megatron-LM reads the optimizer state of the tracker's iteration)
    for side in pt ms; do
      mkdir -p "$dir/${side}_at5"
      cp -r "$dir/${side}_ckpt/iter_0000005" "$dir/${side}_at5/"
      echo 5 > "$dir/${side}_at5/latest_checkpointed_iteration.txt"
    done
    resume=("${MODEL[@]}" ${extra[@]+"${extra[@]}"} --ckpt-format "$format" --no-load-rng)
    ok=1
    port=$((port + 1))
    if ! (cd "$dir" && "$BIN/mindspeed-ms" run --ai-framework pytorch -- "$REF" -m torch.distributed.run \
          --nproc-per-node="$nproc" --master-port="$port" "$MEG/pretrain_gpt.py" "${resume[@]}" --load "$dir/ms_at5" \
          > "$dir/pytorch-resumes.log" 2>&1); then
      tail -30 "$dir/pytorch-resumes.log" >&2
      echo "FAIL: $run: PyTorch resuming MindSpore's checkpoint stopped (see $dir/pytorch-resumes.log)" >&2
      ok=0
    else
      losses "$dir/pytorch-resumes.log" > "$dir/pytorch-resumes.losses"
      compare "PyTorch resumes MindSpore's" "$dir/reference.losses" "$dir/pytorch-resumes.losses" || ok=0
    fi
    port=$((port + 1))
    if ! (cd "$dir" && "$BIN/mindspeed-ms" run --ai-framework mindspore -- "$BIN/msrun" --worker_num="$nproc" \
          --local_worker_num="$nproc" --master_port="$port" --join=True --cluster_time_out=120 \
          --log_dir="$dir/mindspore-resumes-logs" "$MEG/pretrain_gpt.py" "${resume[@]}" --load "$dir/pt_at5" \
          > "$dir/mindspore-resumes.log" 2>&1); then
      tail -30 "$dir"/mindspore-resumes-logs/worker_*.log >&2 || true
      echo "FAIL: $run: MindSpore resuming PyTorch's checkpoint stopped (see $dir/mindspore-resumes-logs)" >&2
      ok=0
    else
      losses "$dir"/mindspore-resumes-logs/worker_*.log > "$dir/mindspore-resumes.losses"
      compare "MindSpore resumes PyTorch's" "$dir/reference.losses" "$dir/mindspore-resumes.losses" || ok=0
    fi
    if [ $ok -eq 1 ]; then passed+=("$run"); else failed+=("$run"); status=1; fi
  done
done
echo "passed: ${passed[*]:-none}"
[ $status -eq 0 ] && echo "PASS: Megatron-LM pretrain_gpt.py resumes the other backend's checkpoint in: ${passed[*]}"
[ $status -ne 0 ] && echo "FAILED: ${failed[*]}" >&2
exit $status
