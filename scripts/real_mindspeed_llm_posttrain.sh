#!/usr/bin/env bash
# MindSpeed-LLM 2.2.0's post-training entries, unchanged, on mindspeed_ms (MindSpore CPU backend), against real
# PyTorch, in the flow of its examples/mcore/qwen25/*.sh (data_convert_qwen25_instruction.sh,
# ckpt_convert_qwen25_hf2mcore.sh, tune_qwen25_0point5b_4k_full_ptd.sh, generate_qwen25_0point5b_ptd.sh), sizes
# shrunk (2 layers, hidden 64, 4 heads, 2 query groups, ffn 128, vocab 512, seq 128); and its LoRA
# (tune_qwen25_0point5b_4k_lora_ptd.sh, ckpt_convert_qwen25_mcore2hf_lora.sh, generate_qwen25_7b_lora_ptd.sh),
# evaluation (evaluate_qwen25_0point5b_ptd.sh) and DPO (data_convert_llama2_pairwise.sh, dpo_llama2_7b_full_ptd.sh)
# entries. A local check, not CI.
# FLOWS picks what runs (comma-separated; default all: preprocess,sft,inference,lora,evaluate,dpo; each needs the ones
# before it):
#   preprocess  preprocess_data.py --handler-name AlpacaStyleInstructionHandler --prompt-type qwen (64 Alpaca records,
#               a tiny byte-level BPE tokenizer saved as a Qwen2 tokenizer, built offline) on MindSpore under
#               `mindspeed-ms run`, and the same command on real PyTorch: the six .bin/.idx files equal byte for byte.
#               On real PyTorch MindSpeed-LLM's package __init__ cannot run (it imports torch_npu and torchair), so
#               there the entry runs with the package bare and MindSpeed-LLM's own IndexedDatasetBuilder wrappers
#               applied, the only adaptor patches preprocessing reaches (real_mindspeed_llm_posttrain.py bare)
#   sft         a tiny random HF Qwen2 (real PyTorch) converted by convert_ckpt.py on MindSpore (--model-type-hf llama2
#               --add-qkv-bias, fp32), then posttrain_gpt.py --stage sft --is-instruction-dataset --prompt-type qwen
#               --variable-seq-lengths --finetune --load, on msrun:
#                 fp32, 1 worker, the whole data set in one micro-batch: the first iteration's loss within 1e-5
#                 relative of HF transformers' Qwen2 on real PyTorch from the HF weights (cross entropy on the
#                 answer tokens only), grad norm within the printed resolution;
#                 fp32, 1 worker vs 2 (data parallel, micro-batch 32, global 64, 3 iterations): losses within 1e-5;
#                 the example's own flags (--bf16, --use-flash-attn ...), 2 workers, 4 iterations: no skipped or NaN
#                 iteration, the loss going down; then an fp32 run (lr 1e-2, 12 iterations) --save's its checkpoint
#   inference   inference.py --task greedy (its prompt "how are you?", 16 new tokens, no template, as the example)
#               from the converted checkpoint and from the SFT checkpoint (converted back to HF by convert_ckpt.py
#               --save-model-type hf on MindSpore): the generated token ids equal HF transformers' greedy generate
#               on real PyTorch from the matching HF weights (the ids read where inference.py hands them to the
#               tokenizer's batch_decode: real_mindspeed_llm_posttrain.py observe)
#   lora        posttrain_gpt.py --stage sft with the example's --lora-r 8 --lora-alpha 16 --lora-fusion
#               --lora-target-modules linear_qkv linear_proj linear_fc1 linear_fc2 (peft 0.7.1), fp32, 1 worker, the
#               whole data set in one micro-batch: loss and grad norm of the first iteration, and of one from the
#               trained LoRA (--lora-load), against HF Qwen2 + peft LoRA on real PyTorch with the run's A/B weights
#               (real_mindspeed_llm_lora.py); the base weights bit-identical after training; the example's --bf16
#               flags, 2 workers, distributed optimizer; convert_ckpt.py --lora-load's merged HF weights equal peft's
#               merge_and_unload on PyTorch; inference.py --lora-load generates HF greedy's ids from them
#   evaluate    evaluation.py --task mmlu (8 MMLU-style questions, a local csv) from the converted checkpoint and with
#               --lora-load: the token generated for each question and the score equal an independent HF-on-PyTorch
#               computation of the same 5-shot prompts (real_mindspeed_llm_evaluate.py; MindSpeed-LLM's package
#               cannot import on CPU PyTorch)
#   dpo         preprocess_data.py --handler-name AlpacaStylePairwiseHandler (16 pairs) byte-equal MindSpore vs
#               PyTorch; posttrain_gpt.py --stage dpo --dpo-loss-type sigmoid --is-pairwise-dataset: the first loss and
#               grad norm against a sigmoid DPO loss with HF Qwen2 on PyTorch (real_mindspeed_llm_dpo.py), the
#               reference model the policy's start (ln 2) and then the SFT checkpoint (--ref-model)
#
# Usage: [FLOWS=..] scripts/real_mindspeed_llm_posttrain.sh MINDSPEED_DIR MINDSPEED_LLM_DIR MEGATRON_LM_DIR [WORK_DIR]
# Environment: MINDSPEED_MS_PYTHON, MINDSPEED_MS_REFERENCE_PYTHON  as for scripts/real_mindspeed_llm_convert.sh
#              MASTER_PORT  msrun's port (default 18537)
# MindSpeed-LLM's Python dependencies (its pins, datasets and what it imports; --no-deps) go into WORK_DIR/deps,
# serving both interpreters; the few the reference venv lacks into WORK_DIR/refdeps.
# Exits non-zero when an entry stops, a file or a figure differs.
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,52p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="$(mkdir -p "${4:-$ROOT/.realcheck/mindspeed-llm-posttrain}" && \
        cd "${4:-$ROOT/.realcheck/mindspeed-llm-posttrain}" && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
REF="${MINDSPEED_MS_REFERENCE_PYTHON:?set MINDSPEED_MS_REFERENCE_PYTHON to a Python with real CPU PyTorch}"
PORT="${MASTER_PORT:-18537}"
HELP="$ROOT/scripts/real_mindspeed_llm_posttrain.py"
. "$ROOT/scripts/_deps.sh"
same_python "$PY" "$REF"
pinned "$PY" "$WORK/deps" "${HF_PINS[@]}" networkx==3.6.1 datasets==3.6.0 \
  pyarrow==20.0.0 pandas==2.2.3 python-dateutil==2.9.0.post0 pytz==2025.2 tzdata==2025.2 xxhash==3.5.0 \
  multiprocess==0.70.16 dill==0.3.8
pinned "$REF" "$WORK/refdeps" "${REF_HF_PINS[@]}"
export GLOG_v=3 MINDSPEED_MS_MISSING_TARGETS=skip MINDSPEED_LLM_DIR="$LLM"
REFPATH="$MS:$LLM:$MEG:$WORK/deps:$WORK/refdeps${PYTHONPATH:+:$PYTHONPATH}"
MSPATH="$MS:$LLM:$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
ref() { PYTHONPATH="$REFPATH" "$REF" "$HELP" "$@"; }
ms() { (cd "${CWD:-$WORK}" && PYTHONPATH="$MSPATH" PATH="$BIN:$PATH" "$BIN/mindspeed-ms" run --ai-framework mindspore \
         -- "$@"); }
msrun() {  # msrun WORKERS LOG_DIR SCRIPT ARGS...
  local workers=$1 log=$2; shift 2
  rm -rf "$log"
  ms "$BIN/msrun" --worker_num="$workers" --local_worker_num="$workers" --master_port="$PORT" --join=True \
    --cluster_time_out=300 --log_dir="$log" "$@"
}
lora() { PYTHONPATH="$REFPATH" "$REF" "$ROOT/scripts/real_mindspeed_llm_lora.py" "$@"; }
fail() { echo "FAIL: $1" >&2; exit 1; }
DATA="$WORK/data"
# tune_qwen25_0point5b_4k_full_ptd.sh's flags in its order, sizes shrunk (24 layers/896 hidden/14 heads/ffn 4864/
# vocab 151936/seq 4096 there), --untie-embeddings-and-output-weights added (the tiny HF model is untied, as the
# larger qwen2.5 models are), --bf16 and --initial-loss-scale only in the field-flag run (fp32 for the comparisons)
MODEL=(--use-mcore-models --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1
       --tokenizer-type PretrainedFromHF --tokenizer-name-or-path "$WORK/hf" --seq-length 128
       --max-position-embeddings 256 --group-query-attention --num-query-groups 2 --num-layers 2 --hidden-size 64
       --ffn-hidden-size 128 --num-attention-heads 4 --rotary-base 1000000 --normalization RMSNorm --norm-epsilon 1e-06
       --swiglu --add-qkv-bias --disable-bias-linear --attention-dropout 0.0 --hidden-dropout 0.0
       --make-vocab-size-divisible-by 1 --padded-vocab-size 512 --untie-embeddings-and-output-weights
       --position-embedding-type rope --use-rotary-position-embeddings --no-masked-softmax-fusion
       --attention-softmax-in-fp32 --no-gradient-accumulation-fusion --seed 42 --distributed-backend gloo)
TUNE=(--finetune --stage sft --prompt-type qwen --is-instruction-dataset --variable-seq-lengths
      --tokenizer-not-use-fast "${MODEL[@]}" --lr 1e-4 --lr-decay-style cosine --init-method-std 0.02 --use-flash-attn
      --weight-decay 0.0 --clip-grad 1.0 --adam-beta1 0.9 --adam-beta2 0.95 --no-load-optim --no-load-rng
      --data-path "$DATA/ms/alpaca" --split 100,0,0 --log-interval 1 --eval-interval 1000 --eval-iters 0
      --load "$WORK/mg")
# tune_qwen25_0point5b_4k_lora_ptd.sh's LoRA flags (ckpt_convert_qwen25_mcore2hf_lora.sh's, without --lora-fusion)
LORA_CONVERT=(--lora-r 8 --lora-alpha 16 --lora-target-modules linear_qkv linear_proj linear_fc1 linear_fc2)
LORA=("${LORA_CONVERT[@]}" --lora-fusion)
exit_crash() {  # exit_crash NAME: training finished (rank 0 prints it after the last collective), then a worker died
  # by SIGSEGV (README: "a crash in msrun's cluster finalization at exit", MindSpore's): repeated once, never accepted
  grep -q "exit with exception. Error code: -11" "$WORK/$1.out" &&
    grep -q "after training is done" "$WORK/log-$1/worker_0.log"
}
sft() {  # sft NAME WORKERS MBS GBS ITERS [flags]: posttrain_gpt.py on msrun
  local name=$1 workers=$2 mbs=$3 gbs=$4 iters=$5 try; shift 5
  for try in 1 2; do
    if msrun "$workers" "$WORK/log-$name" "$LLM/posttrain_gpt.py" --ai-framework mindspore "${TUNE[@]}" \
         --micro-batch-size "$mbs" --global-batch-size "$gbs" --train-iters "$iters" "$@" > "$WORK/$name.out" 2>&1; then
      break
    fi
    if [ "$try" = 1 ] && exit_crash "$name"; then
      echo "  ($name: a worker died by SIGSEGV after training finished, MindSpore's msrun finalization: once more;" \
           "its logs in log-$name-crash)"
      rm -rf "$WORK/log-$name-crash"; mv "$WORK/log-$name" "$WORK/log-$name-crash"; cp "$WORK/$name.out" "$WORK/log-$name-crash/"
      continue
    fi
    tail -n 30 "$WORK/$name.out" "$WORK/log-$name"/worker_*.log >&2 || true
    fail "posttrain_gpt.py ($name) stopped on MindSpore"
  done
  cat "$WORK/log-$name"/worker_*.log > "$WORK/$name.log"
}
generate() {  # generate NAME CHECKPOINT HF_DIR [flags]: inference.py greedy on MindSpore vs HF greedy on PyTorch
  local name=$1 load=$2 hf=$3; shift 3
  if ! msrun 1 "$WORK/log-$name" "$HELP" observe "$LLM/inference.py" --ai-framework mindspore "${MODEL[@]}" \
       --micro-batch-size 1 --load "$load" --tokenizer-not-use-fast --max-new-tokens 16 --exit-on-missing-checkpoint \
       --task greedy "$@" > "$WORK/$name.out" 2>&1; then
    tail -n 30 "$WORK/$name.out" "$WORK/log-$name"/worker_*.log >&2 || true
    fail "inference.py ($name) stopped on MindSpore"
  fi
  ref generate "$hf" "how are you?" 16 > "$WORK/$name-ref.json" 2> "$WORK/$name-ref.err" || \
    { tail "$WORK/$name-ref.err" >&2; fail "the PyTorch generation ($name) stopped"; }
  "$PY" "$HELP" judge-generate "$WORK/$name-ref.json" "$WORK/log-$name/worker_0.log" || \
    fail "inference.py ($name) generated other tokens than PyTorch"
}
# evaluate_qwen25_0point5b_ptd.sh's flags after the model's, shrunk (seq 2048: the 5-shot prompts are ~700 tokens);
# fp32 (its --bf16 dropped) for the comparison
EVAL=("$LLM/evaluation.py" --ai-framework mindspore "${MODEL[@]}" --seq-length 2048 --max-position-embeddings 2048
      --task-data-path "$WORK/mmlu/test" --task mmlu --micro-batch-size 1 --max-new-tokens 1 --tokenizer-not-use-fast
      --exit-on-missing-checkpoint --no-load-rng --no-load-optim --use-flash-attn --no-chat-template)
evaluate() {  # evaluate NAME CHECKPOINT HF_DIR [flags]: evaluation.py's mmlu on MindSpore vs the same on PyTorch
  local name=$1 load=$2 hf=$3; shift 3
  if ! MSPATH="$MSPATH:$WORK/evaldeps" msrun 1 "$WORK/log-$name" "$HELP" observe "${EVAL[@]}" --load "$load" "$@" \
       > "$WORK/$name.out" 2>&1; then
    tail -n 30 "$WORK/$name.out" "$WORK/log-$name"/worker_*.log >&2 || true
    fail "evaluation.py ($name) stopped on MindSpore"
  fi
  PYTHONPATH="$REFPATH" "$REF" "$ROOT/scripts/real_mindspeed_llm_evaluate.py" reference "$hf" "$WORK/mmlu/test" \
    "$LLM/mindspeed_llm/tasks/evaluation/eval_impl/fewshot_template/mmlu_5shot_template.json" \
    > "$WORK/$name-ref.json" 2> "$WORK/$name-ref.err" || \
    { tail "$WORK/$name-ref.err" >&2; fail "the PyTorch MMLU predictions ($name) stopped"; }
  "$PY" "$ROOT/scripts/real_mindspeed_llm_evaluate.py" judge "$WORK/$name-ref.json" "$WORK/log-$name/worker_0.log" || \
    fail "evaluation.py ($name) predicted other answers than PyTorch"
}
# dpo_llama2_7b_full_ptd.sh's RL flags (--stage dpo --dpo-loss-type sigmoid --is-pairwise-dataset), the model's and
# tuning flags as above; --finetune added (the converted checkpoint is iteration 1); fp32
dpo() {  # dpo NAME [flags]: posttrain_gpt.py --stage dpo, all 16 pairs in one micro-batch, one iteration
  local name=$1; shift
  if ! msrun 1 "$WORK/log-$name" "$LLM/posttrain_gpt.py" --ai-framework mindspore "${MODEL[@]}" --variable-seq-lengths \
       --micro-batch-size 16 --global-batch-size 16 --train-iters 1 --lr 1e-4 --lr-decay-style cosine \
       --init-method-std 0.01 --use-flash-attn --weight-decay 0.0 --clip-grad 1.0 --adam-beta1 0.9 --adam-beta2 0.95 \
       --no-load-optim --no-load-rng --tokenizer-not-use-fast --data-path "$DATA/pairs-ms/pairs" --split 100,0,0 \
       --is-instruction-dataset --stage dpo --dpo-loss-type sigmoid --is-pairwise-dataset --log-interval 1 \
       --eval-interval 1000 --eval-iters 0 --load "$WORK/mg" --finetune "$@" > "$WORK/$name.out" 2>&1; then
    tail -n 30 "$WORK/$name.out" "$WORK/log-$name"/worker_*.log >&2 || true
    fail "posttrain_gpt.py --stage dpo ($name) stopped on MindSpore"
  fi
  cat "$WORK/log-$name"/worker_*.log > "$WORK/$name.log"
}
FLOWS="${FLOWS:-preprocess,sft,inference,lora,evaluate,dpo}"
for flow in ${FLOWS//,/ }; do
  case "$flow" in
    preprocess)
      echo "=== preprocess_data.py (Alpaca-style instruction data, --prompt-type qwen): MindSpore vs PyTorch"
      rm -rf "$DATA"; mkdir -p "$DATA/ms" "$DATA/pt"
      ref data "$DATA" > "$WORK/data.log" 2>&1 || { tail "$WORK/data.log" >&2; fail "building the tokenizer"; }
      PRE=("$LLM/preprocess_data.py" --input "$DATA/alpaca.json" --tokenizer-name-or-path "$DATA/tokenizer"
           --handler-name AlpacaStyleInstructionHandler --tokenizer-type PretrainedFromHF --workers 1
           --log-interval 1000 --prompt-type qwen)
      ms "$PY" "${PRE[@]}" --output-prefix "$DATA/ms/alpaca" > "$WORK/preprocess-ms.log" 2>&1 || \
        { tail -n 30 "$WORK/preprocess-ms.log" >&2; fail "preprocess_data.py stopped on MindSpore"; }
      (cd "$WORK" && ref bare "${PRE[@]}" --output-prefix "$DATA/pt/alpaca") > "$WORK/preprocess-pt.log" 2>&1 || \
        { tail -n 30 "$WORK/preprocess-pt.log" >&2; fail "preprocess_data.py stopped on PyTorch"; }
      same=0
      for f in "$DATA"/pt/*; do
        cmp "$f" "$DATA/ms/$(basename "$f")" && same=$((same + 1)) || fail "$(basename "$f") differs"
      done
      [ "$same" = 6 ] || fail "expected 6 .bin/.idx files, found $same"
      echo "  6 files (input_ids, attention_mask, labels: .bin + .idx), $(du -cb "$DATA"/ms/* | tail -1 | cut -f1)" \
           "bytes, equal byte for byte" ;;
    sft)
      echo "=== posttrain_gpt.py --stage sft on MindSpore vs HF Qwen2 on PyTorch"
      rm -rf "$WORK/hf" "$WORK/mg" "$WORK/sft-ckpt"
      ref hf "$WORK/hf" > "$WORK/hf.log" 2>&1 || { tail "$WORK/hf.log" >&2; fail "building the HF model"; }
      cp "$DATA"/tokenizer/* "$WORK/hf/"
      CWD="$LLM" ms "$PY" convert_ckpt.py --use-mcore-models --model-type GPT --load-model-type hf \
        --save-model-type mg --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1 --add-qkv-bias \
        --load-dir "$WORK/hf" --save-dir "$WORK/mg" --tokenizer-model "$WORK/hf/tokenizer.json" \
        --model-type-hf llama2 --params-dtype fp32 > "$WORK/convert.log" 2>&1 || \
        { tail -n 30 "$WORK/convert.log" >&2; fail "convert_ckpt.py (hf -> mg) stopped on MindSpore"; }
      ref loss "$WORK/hf" "$DATA/ms/alpaca" 128 > "$WORK/loss-ref.json" 2> "$WORK/loss-ref.err" || \
        { tail "$WORK/loss-ref.err" >&2; fail "the PyTorch reference loss stopped"; }
      sft whole 1 64 64 1
      "$PY" "$HELP" judge-loss "$WORK/loss-ref.json" "$WORK/whole.log" || fail "SFT loss differs from PyTorch's"
      sft dp1 1 32 64 3
      sft dp2 2 32 64 3
      "$PY" "$HELP" judge-dp "$WORK/dp1.log" "$WORK/dp2.log" || fail "1 and 2 workers differ"
      sft field 2 8 16 4 --bf16 --initial-loss-scale 4096
      "$PY" "$HELP" judge-field "$WORK/field.log" 4 || fail "the field-flag SFT run"
      # the checkpoint inference reads: trained further (lr 1e-2, 12 iterations of 16) so that its generation is
      # not the random model's
      sft save 1 16 16 12 --lr 1e-2 --save "$WORK/sft-ckpt" --save-interval 12
      "$PY" "$HELP" judge-field "$WORK/save.log" 12 || fail "the SFT run whose checkpoint inference reads" ;;
    inference)
      echo "=== inference.py --task greedy on MindSpore vs HF generate on PyTorch"
      generate infer-converted "$WORK/mg" "$WORK/hf"
      rm -rf "$WORK/hf-sft"; cp -r "$WORK/hf" "$WORK/hf-sft"
      CWD="$LLM" ms "$PY" convert_ckpt.py --use-mcore-models --model-type GPT --model-type-hf llama2 \
        --load-model-type mg --save-model-type hf --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1 \
        --add-qkv-bias --load-dir "$WORK/sft-ckpt" --save-dir "$WORK/hf-sft" --params-dtype fp32 \
        > "$WORK/convert-back.log" 2>&1 || \
        { tail -n 30 "$WORK/convert-back.log" >&2; fail "convert_ckpt.py (mg -> hf) stopped on MindSpore"; }
      cp "$DATA"/tokenizer/* "$WORK/hf-sft/mg2hf/"
      generate infer-sft "$WORK/sft-ckpt" "$WORK/hf-sft/mg2hf" ;;
    lora)
      echo "=== posttrain_gpt.py --stage sft --lora-* on MindSpore vs HF Qwen2 + peft LoRA on PyTorch"
      rm -rf "$WORK/lora-first" "$WORK/lora-ckpt" "$WORK/hf-lora" "$WORK/hf-lora-ref"
      # the first iteration: B starts at zero (peft), A's gradient is zero with it, so the checkpoint's A is the start's
      sft lora-first 1 64 64 1 "${LORA[@]}" --save "$WORK/lora-first" --save-interval 1
      lora lora-loss "$WORK/hf" "$DATA/ms/alpaca" 128 "$WORK/lora-first" 8 16 zero-b > "$WORK/lora-first-ref.json" \
        2> "$WORK/lora-first-ref.err" || { tail "$WORK/lora-first-ref.err" >&2; fail "the PyTorch LoRA loss stopped"; }
      "$PY" "$HELP" judge-loss "$WORK/lora-first-ref.json" "$WORK/lora-first.log" || fail "LoRA loss differs"
      lora frozen "$WORK/mg" "$WORK/lora-first" || fail "LoRA training changed a base weight"
      sft lora-train 1 16 16 12 "${LORA[@]}" --lr 1e-2 --save "$WORK/lora-ckpt" --save-interval 12
      "$PY" "$HELP" judge-field "$WORK/lora-train.log" 12 || fail "the LoRA run whose checkpoint the rest reads"
      lora frozen "$WORK/mg" "$WORK/lora-ckpt" || fail "LoRA training changed a base weight"
      # from the trained LoRA (--lora-load): B is not zero, A's gradient is the sum over q/k/v (gate/up)
      sft lora-resume 1 64 64 1 "${LORA[@]}" --lora-load "$WORK/lora-ckpt"
      lora lora-loss "$WORK/hf" "$DATA/ms/alpaca" 128 "$WORK/lora-ckpt" 8 16 > "$WORK/lora-resume-ref.json" \
        2> "$WORK/lora-resume-ref.err" || { tail "$WORK/lora-resume-ref.err" >&2; fail "the PyTorch LoRA loss stopped"; }
      "$PY" "$HELP" judge-loss "$WORK/lora-resume-ref.json" "$WORK/lora-resume.log" || fail "LoRA loss differs"
      sft lora-field 2 8 16 4 "${LORA[@]}" --padded-samples --use-distributed-optimizer --bf16 \
        --initial-loss-scale 4096 --lr 1e-3
      "$PY" "$HELP" judge-field "$WORK/lora-field.log" 4 || fail "the field-flag LoRA run"
      # ckpt_convert_qwen25_mcore2hf_lora.sh: the LoRA merged into the HF weights
      cp -r "$WORK/hf" "$WORK/hf-lora"
      CWD="$LLM" ms "$PY" convert_ckpt.py --use-mcore-models --model-type GPT --model-type-hf llama2 \
        --load-model-type mg --save-model-type hf --target-tensor-parallel-size 1 --target-pipeline-parallel-size 1 \
        --add-qkv-bias "${LORA_CONVERT[@]}" --load-dir "$WORK/mg" --lora-load "$WORK/lora-ckpt" \
        --save-dir "$WORK/hf-lora" --params-dtype fp32 > "$WORK/convert-lora.log" 2>&1 || \
        { tail -n 30 "$WORK/convert-lora.log" >&2; fail "convert_ckpt.py --lora-load stopped on MindSpore"; }
      lora lora-merge "$WORK/hf" "$WORK/lora-ckpt" 8 16 "$WORK/hf-lora-ref" > "$WORK/lora-merge.log" 2>&1 || \
        { tail "$WORK/lora-merge.log" >&2; fail "peft's merge on PyTorch stopped"; }
      cp "$DATA"/tokenizer/* "$WORK/hf-lora-ref/"
      lora merged-equal "$WORK/hf-lora-ref" "$WORK/hf-lora/mg2hf" || fail "convert_ckpt.py merged other weights"
      # generate_qwen25_7b_lora_ptd.sh: the base checkpoint with --lora-load
      generate infer-lora "$WORK/mg" "$WORK/hf-lora-ref" "${LORA[@]}" --lora-load "$WORK/lora-ckpt" ;;
    evaluate)
      echo "=== evaluation.py --task mmlu on MindSpore vs the same predictions by HF Qwen2 on PyTorch"
      if [ ! -f "$WORK/evaldeps/.complete" ]; then  # evaluation.py imports needlebench's, which imports tiktoken
        "$PY" -m pip install -q --no-deps --target "$WORK/evaldeps" tiktoken==0.9.0
        touch "$WORK/evaldeps/.complete"
      fi
      rm -rf "$WORK/mmlu"
      "$PY" "$ROOT/scripts/real_mindspeed_llm_evaluate.py" data "$WORK/mmlu"
      evaluate eval-converted "$WORK/mg" "$WORK/hf"
      evaluate eval-lora "$WORK/mg" "$WORK/hf-lora-ref" "${LORA[@]}" --lora-load "$WORK/lora-ckpt" ;;
    dpo)
      echo "=== preprocess_data.py (pairwise) and posttrain_gpt.py --stage dpo on MindSpore vs DPO on PyTorch"
      rm -rf "$DATA/pairs-ms" "$DATA/pairs-pt"; mkdir -p "$DATA/pairs-ms" "$DATA/pairs-pt"
      "$PY" "$ROOT/scripts/real_mindspeed_llm_dpo.py" data "$DATA/pairs.jsonl"
      # data_convert_llama2_pairwise.sh's flags, --prompt-type qwen
      PAIR=("$LLM/preprocess_data.py" --input "$DATA/pairs.jsonl" --tokenizer-type PretrainedFromHF
            --tokenizer-not-use-fast --tokenizer-name-or-path "$DATA/tokenizer" --workers 1 --log-interval 1000
            --handler-name AlpacaStylePairwiseHandler --prompt-type qwen --seq-length 128
            --map-keys '{"prompt":"question", "query":"", "system":"system"}')
      ms "$PY" "${PAIR[@]}" --output-prefix "$DATA/pairs-ms/pairs" > "$WORK/pairs-ms.log" 2>&1 || \
        { tail -n 30 "$WORK/pairs-ms.log" >&2; fail "preprocess_data.py (pairwise) stopped on MindSpore"; }
      (cd "$WORK" && ref bare "${PAIR[@]}" --output-prefix "$DATA/pairs-pt/pairs") > "$WORK/pairs-pt.log" 2>&1 || \
        { tail -n 30 "$WORK/pairs-pt.log" >&2; fail "preprocess_data.py (pairwise) stopped on PyTorch"; }
      same=0
      for f in "$DATA"/pairs-pt/*; do
        cmp "$f" "$DATA/pairs-ms/$(basename "$f")" && same=$((same + 1)) || fail "$(basename "$f") differs"
      done
      [ "$same" = 8 ] || fail "expected 8 pairwise .bin/.idx files, found $same"
      echo "  8 files (chosen/rejected input ids and labels), equal byte for byte"
      dpo_ref() {  # dpo_ref NAME REFERENCE_HF
        PYTHONPATH="$REFPATH" "$REF" "$ROOT/scripts/real_mindspeed_llm_dpo.py" loss "$WORK/hf" "$2" \
          "$DATA/pairs-ms/pairs" 0.1 > "$WORK/$1-ref.json" 2> "$WORK/$1-ref.err" || \
          { tail "$WORK/$1-ref.err" >&2; fail "the PyTorch DPO loss ($1) stopped"; }
        "$PY" "$HELP" judge-loss "$WORK/$1-ref.json" "$WORK/$1.log" || fail "DPO loss ($1) differs from PyTorch's"
      }
      # the reference model is the policy's start (loss ln 2, the gradient not zero), then the SFT checkpoint
      dpo dpo-self
      dpo_ref dpo-self "$WORK/hf"
      dpo dpo-sft-ref --ref-model "$WORK/sft-ckpt"
      dpo_ref dpo-sft-ref "$WORK/hf-sft/mg2hf" ;;
    *) echo "unknown flow $flow (preprocess, sft, inference, lora, evaluate, dpo)" >&2; exit 2 ;;
  esac
done
echo "PASS: $FLOWS"
