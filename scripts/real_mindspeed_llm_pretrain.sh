#!/usr/bin/env bash
# MindSpeed-LLM 2.2.0's own pretrain_gpt.py, unchanged, on mindspeed_ms (MindSpore CPU backend), in the field's
# canonical set-up: source checkouts of MindSpeed, MindSpeed-LLM and Megatron-LM on PYTHONPATH, nothing of them
# pip-installed, no CANN, launched as `mindspeed-ms run -- msrun ...`. A local check, not CI (the sources are not on
# the package index). CONFIGS picks what runs (comma-separated; default `dp`, `all` = every one):
#   dp       a tiny LLaMA-shaped mcore model, every fusion off, mock data, 20 iterations on 1 msrun worker and on 2
#            (data parallel 2, same global batch): the two runs' losses within 1e-3 (scripts/real_entry_figures.py llm)
#   llama2   examples/mcore/llama2/pretrain_llama2_7b_ptd.sh     } every feature flag of the example script kept
#   qwen25   examples/mcore/qwen25/pretrain_qwen25_0point5_32k_ptd.sh } (fused RMSNorm/SwiGLU/RoPE, flash attention,
#   qwen25cp the same in its own layout, context parallel 2     } --bf16, distributed optimizer, overlapped grad
#            (MindSpeed's ring attention, megatron_cp_algo)      }
#   mixtral  examples/mcore/mixtral/pretrain_mixtral_8x7b_ptd.sh  } reduce, GQA, MoE ...), only the sizes shrunk
#   qwen2moe examples/mcore/qwen2_moe/pretrain_qwen2_57b_a14b_4k_ptd.sh } (Ulysses CP2 + EP2, shared experts;
#            --swap-attention left out: NPU-to-host activation swapping)
#   deepseek3 examples/mcore/deepseek3/pretrain_deepseek3_671b_4k_ptd.sh (multi-latent attention, packed sequences
#            (--reset-position-ids: TND flash attention), sigmoid group-limited router with expert bias, MTP, yarn;
#            EP2; 4 layers: dense, 2 MoE, no-op; dualpipev/fb overlap, optimizer swapping, LCAL kernels left out)
#   deepseek3dualpipe the same with the example's --moe-fb-overlap --schedules-method dualpipev: PP2 x EP2 on 4
#            workers, global batch 8
#            (2 layers, hidden 64, 4 heads, seq 32, vocab 4096, mock data/NullTokenizer, 6 iterations, 2 workers;
#            layouts in the table below): losses finite, no skipped/NaN iteration, first loss ~ ln(4096), MindSpeed's
#            manager adopted (scripts/real_entry_figures.py field)
#   parity   the llama2 flags (fp32, 1 worker) against Megatron-LM's own pretrain_gpt.py under real PyTorch with the
#            same model unfused: `mindspeed-ms parity --candidate-script`, same weights and batches, losses within
#            1e-4 relative at every step (needs MINDSPEED_MS_REFERENCE_PYTHON)
#   cpparity the qwen25cp flags (fp32, CP2 on 2 workers) against Megatron-LM's pretrain_gpt.py without context
#            parallelism (1 worker, unfused, real PyTorch): `mindspeed-ms parity --candidate-context-parallel 2`,
#            each CP rank fed its sequence slice of the reference's batches; losses within 1e-4, CP-mean first-step
#            gradients within 1e-5 (needs MINDSPEED_MS_REFERENCE_PYTHON)
#
# Usage: [CONFIGS=all] scripts/real_mindspeed_llm_pretrain.sh MINDSPEED_DIR MINDSPEED_LLM_DIR MEGATRON_LM_DIR [WORK_DIR]
#   MINDSPEED_DIR      checkout of Ascend/MindSpeed, branch 2.2.0_core_r0.12.1
#   MINDSPEED_LLM_DIR  checkout of Ascend/MindSpeed-LLM, tag 2.2.0
#   MEGATRON_LM_DIR    checkout of NVIDIA/Megatron-LM, tag core_v0.12.1
# Environment: MINDSPEED_MS_PYTHON  the interpreter with mindspore, msadapter, megatron-core and mindspeed_ms
#                                   (default: python3 on PATH); its bin/ must hold msrun and mindspeed-ms
#              MINDSPEED_MS_REFERENCE_PYTHON  real CPU PyTorch + megatron-core (the parity configs only)
#              MASTER_PORT          msrun's port (default 8129)
# The only mindspeed_ms setting used: MINDSPEED_MS_MISSING_TARGETS=skip (MindSpeed-LLM 2.2.0 patches
# PretrainedConfig.dict_torch_dtype_to_str, which its own transformers pin 4.57.1 renamed), plus
# MINDSPEED_MS_TRACE/_TRACE_FILE to read status() at exit.
# Prints each run's per-iteration losses; exits non-zero when a run stops or a figure is out of tolerance.
set -euo pipefail
if [ $# -lt 3 ]; then sed -n '2,40p' "$0" >&2; exit 2; fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MS="$(cd "$1" && pwd)"; LLM="$(cd "$2" && pwd)"; MEG="$(cd "$3" && pwd)"
WORK="$(mkdir -p "${4:-$ROOT/.realcheck/mindspeed-llm-pretrain}" && cd "${4:-$ROOT/.realcheck/mindspeed-llm-pretrain}" && pwd)"
PY="${MINDSPEED_MS_PYTHON:-$(command -v python3)}"
BIN="$(dirname "$PY")"
PORT="${MASTER_PORT:-8129}"
VOCAB=4096; ITERS=20
# MindSpeed-LLM's own pins, and what they import, each pinned (networkx: MindSpeed's --swap-attention imports it,
# unpinned there; pandas and SQLAlchemy: MindSpeed's --use-ascend-coc imports mindspeed.core.training, which imports
# its auto_settings, which imports both, unpinned in its requirements.txt); --no-deps: torch is MSAdapter's here
if [ ! -f "$WORK/deps/.complete-3" ]; then
  "$PY" -m pip install -q --no-deps --target "$WORK/deps" transformers==4.57.1 accelerate==1.10.1 peft==0.7.1 \
    tqdm==4.67.1 huggingface_hub==0.36.2 tokenizers==0.22.2 regex==2024.11.6 pyyaml==6.0.2 filelock==3.16.1 \
    fsspec==2024.10.0 six==1.16.0 networkx==3.6.1 pandas==2.2.3 python-dateutil==2.9.0.post0 pytz==2024.2 \
    tzdata==2024.2 SQLAlchemy==2.0.36
  touch "$WORK/deps/.complete-3"
fi
export PYTHONPATH="$MS:$LLM:$MEG:$WORK/deps${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$BIN:$PATH" GLOG_v=3 MINDSPEED_MS_MISSING_TARGETS=skip MINDSPEED_MS_TRACE=1
cd "$WORK"
CONFIGS="${CONFIGS:-dp}"
[ "$CONFIGS" = all ] && CONFIGS="dp,llama2,qwen25,qwen25cp,mixtral,qwen2moe,deepseek3,deepseek3dualpipe,parity,cpparity"
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
# The example scripts' flags in their order, sizes shrunk (the examples' own values in the comments where changed).
SIZES="--num-layers 2 --hidden-size 64 --ffn-hidden-size 172 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --tokenizer-type NullTokenizer --vocab-size $VOCAB --make-vocab-size-divisible-by 1 \
  --micro-batch-size 1 --global-batch-size 4 --train-iters 6 --mock-data --log-interval 1 --eval-iters 0 \
  --distributed-backend gloo"
# llama2 7b: TP1 PP2 (the example's layout), 32 layers/4096 hidden/32 heads/seq 4096/gbs 256
LLAMA2_FLAGS="--use-mcore-models --sequence-parallel --lr 1.25e-6 --lr-decay-style cosine \
  --untie-embeddings-and-output-weights --disable-bias-linear --attention-dropout 0.0 --init-method-std 0.01 \
  --hidden-dropout 0.0 --position-embedding-type rope --normalization RMSNorm --use-fused-rmsnorm --swiglu \
  --use-flash-attn --no-masked-softmax-fusion --attention-softmax-in-fp32 --min-lr 1.25e-7 --weight-decay 1e-1 \
  --lr-warmup-fraction 0.01 --clip-grad 1.0 --adam-beta1 0.9 --initial-loss-scale 65536 --adam-beta2 0.95 \
  --no-gradient-accumulation-fusion --no-load-optim --no-load-rng --use-distributed-optimizer --use-fused-swiglu \
  --use-fused-rotary-pos-emb --overlap-grad-reduce --split 949,50,1 --eval-interval 1000 --seed 1234"
CONFIG_llama2="--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 $LLAMA2_FLAGS --bf16"
# qwen2.5 0.5b: 24 layers/896 hidden/14 heads/2 query groups/vocab 151936/seq 32768; layout TP1 CP2 (qwen25cp) and
# TP2 (qwen25: tensor + sequence parallel). The padded vocabulary must hold the tokenizer's, as the example's 151936
# does: NullTokenizer's end-of-document id is VOCAB (its vocabulary VOCAB + 1); VOCAB + 64 keeps it divisible by TP
# (with --padded-vocab-size VOCAB the mock data's first document end is out of the embedding's range at TP1)
QWEN25_FLAGS="--use-mcore-models --use-cp-send-recv-overlap --use-fused-ring-attention-update \
  --pipeline-model-parallel-size 1 --context-parallel-algo megatron_cp_algo --sequence-parallel \
  --use-distributed-optimizer --group-query-attention --num-query-groups 2 --rotary-base 1000000 \
  --normalization RMSNorm --norm-epsilon 1e-06 --swiglu --add-qkv-bias --disable-bias-linear --attention-dropout 0.0 \
  --hidden-dropout 0.0 --padded-vocab-size $((VOCAB + 64)) --lr 1.25e-6 --lr-decay-style cosine --lr-warmup-fraction 0.01 \
  --init-method-std 0.01 --position-embedding-type rope --use-fused-rmsnorm --use-fused-rotary-pos-emb \
  --use-rotary-position-embeddings --use-fused-swiglu --overlap-grad-reduce --use-flash-attn \
  --no-masked-softmax-fusion --attention-softmax-in-fp32 --min-lr 1.25e-7 --weight-decay 1e-1 --clip-grad 1.0 \
  --adam-beta1 0.9 --adam-beta2 0.95 --initial-loss-scale 4096 --no-gradient-accumulation-fusion --no-load-optim \
  --no-load-rng --seed 42 --bf16 --split 100,0,0 --eval-interval 1000"
CONFIG_qwen25="--tensor-model-parallel-size 2 --context-parallel-size 1 $QWEN25_FLAGS"
CONFIG_qwen25cp="--tensor-model-parallel-size 1 --context-parallel-size 2 $QWEN25_FLAGS"
# mixtral 8x7b: 32 layers/4096 hidden/32 heads/8 query groups/seq 32768/TP8 CP4 EP1; layout EP2 (dp 2)
CONFIG_mixtral="--num-experts 8 --expert-model-parallel-size 2 --moe-router-topk 2 \
  --moe-router-load-balancing-type aux_loss --moe-aux-loss-coeff 0.02 --moe-permutation-async-comm \
  --moe-token-dispatcher-type alltoall_seq --moe-grouped-gemm --moe-layer-freq -1 --moe-permute-fusion \
  --first-k-dense-replace -1 --use-cp-send-recv-overlap --use-mcore-models --disable-bias-linear \
  --init-method-std 0.01 --attention-dropout 0.0 --hidden-dropout 0.0 --normalization RMSNorm \
  --position-embedding-type rope --swiglu --untie-embeddings-and-output-weights --group-query-attention \
  --num-query-groups 2 --rotary-base 1000000 --no-masked-softmax-fusion --use-fused-rotary-pos-emb --use-flash-attn \
  --use-fused-swiglu --use-fused-rmsnorm --no-check-for-nan-in-loss-and-grad --overlap-grad-reduce \
  --overlap-param-gather --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --sequence-parallel \
  --use-distributed-optimizer --context-parallel-size 1 --context-parallel-algo megatron_cp_algo --lr 1e-5 \
  --lr-decay-iters 4 --lr-decay-style cosine --min-lr 1.0e-6 --weight-decay 0.1 --lr-warmup-iters 2 --clip-grad 1.0 \
  --bf16 --no-load-optim --no-load-rng --no-shared-storage --split 99990,8,2 --eval-interval 5001 --seed 1234"
# qwen2 57b-a14b (qwen2_moe/pretrain_qwen2_57b_a14b_4k_ptd.sh): 28 layers/3584 hidden/28 heads/4 query groups/64
# experts top-8 + 8 shared (gated)/seq 4096/TP1 PP4 EP4 CP4 Ulysses; layout EP2 CP2 Ulysses, 8 experts top-2, 2 shared.
# --swap-attention left out: it swaps activations between NPU and host memory (torch_npu.npu.init, NPU memory
# statistics), and on the CPU backend there is no device memory to swap from
CONFIG_qwen2moe="--use-mcore-models --spec mindspeed_llm.tasks.models.spec.qwen2_moe_spec layer_spec \
  --padded-vocab-size $((VOCAB + 64)) --rotary-base 1000000 --untie-embeddings-and-output-weights \
  --disable-bias-linear --position-embedding-type rope --normalization RMSNorm --swiglu --attention-softmax-in-fp32 \
  --add-qkv-bias --no-gradient-accumulation-fusion --group-query-attention --num-query-groups 2 --split 100,0,0 \
  --num-experts 8 --moe-router-topk 2 --n-shared-experts 2 --shared-expert-gate \
  --moe-router-load-balancing-type softmax_topk --moe-ffn-hidden-size 32 --moe-grouped-gemm \
  --moe-permutation-async-comm --moe-token-dispatcher-type allgather --moe-aux-loss-coeff 0.001 --moe-layer-freq -1 \
  --eval-interval 1000 --no-load-optim --no-load-rng --use-flash-attn --use-fused-rotary-pos-emb \
  --use-rotary-position-embeddings --use-fused-swiglu --use-fused-rmsnorm --no-masked-softmax-fusion \
  --use-distributed-optimizer --lr 1.25e-6 --lr-decay-style cosine --min-lr 1.25e-7 --weight-decay 1e-1 \
  --lr-warmup-fraction 0.01 --attention-dropout 0.0 --init-method-std 0.01 --hidden-dropout 0.0 --clip-grad 1.0 \
  --adam-beta1 0.9 --adam-beta2 0.95 --initial-loss-scale 4096 --seed 42 --bf16 --no-shared-storage \
  --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --expert-model-parallel-size 2 \
  --context-parallel-size 2 --context-parallel-algo ulysses_cp_algo"
# deepseek3 671b (deepseek3/pretrain_deepseek3_671b_4k_ptd.sh, its deepseek_spec): 64 layers (61..63 no-op)/7168
# hidden/128 heads/MLA q-lora 1536 kv-lora 512 qk 128+64 v 128/256 experts top-8 in 8 groups (top-4 groups) + 1
# shared/MTP 1 layer/yarn 40x of 4096/TP4 PP8 EP32, dualpipev; layout EP2 (TP1 PP1, dp 2): 4 layers (the first dense,
# the last no-op), MLA q-lora 32 kv-lora 16 qk 16+8 v 16, 8 experts top-2 in 4 groups (top-2 groups) + 1 shared,
# yarn 40x of 32 positions (max positions 1280: the example's ratio, which MindSpeed-LLM checks). Left out:
#   --moe-fb-overlap --schedules-method dualpipev  fb overlap needs EP > 1 and dualpipev PP > 1: 4 workers at least
#                                                  (config deepseek3dualpipe below: PP2 EP2, global batch 8)
#   --swap-optimizer --swap-optimizer-times 4      optimizer states swapped between NPU and pinned host memory
#                                                  (torch.empty_like(pin_memory=True): "Create device context failed")
#   --coc-fused-kernel                             LCAL's fused matmul + collective kernels (CANN NNAL's ATB library:
#                                                  "please install cann-nnal package first"); --use-ascend-coc kept
CONFIG_deepseek3="--spec mindspeed_llm.tasks.models.spec.deepseek_spec layer_spec --reset-position-ids \
  --gemm-gradient-accumulation-fusion --noop-layers 3 --manual-gc --manual-gc-interval 50 --no-shared-storage \
  --use-flash-attn --use-mcore-models --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 \
  --expert-model-parallel-size 2 --sequence-parallel --context-parallel-size 1 --context-parallel-algo ulysses_cp_algo \
  --num-layers 4 --max-position-embeddings 1280 --lr 1.0e-5 --lr-decay-style cosine \
  --untie-embeddings-and-output-weights --disable-bias-linear --attention-dropout 0.0 --init-method-std 0.02 \
  --hidden-dropout 0.0 --position-embedding-type rope --normalization RMSNorm --use-fused-rotary-pos-emb \
  --use-rotary-position-embeddings --use-fused-swiglu --use-fused-rmsnorm --swiglu --no-masked-softmax-fusion \
  --attention-softmax-in-fp32 --min-lr 1.0e-7 --weight-decay 1e-2 --lr-warmup-iters 2 --clip-grad 1.0 \
  --adam-beta1 0.9 --adam-beta2 0.999 --initial-loss-scale 65536 --padded-vocab-size $((VOCAB + 64)) \
  --rotary-base 10000 --norm-epsilon 1e-6 --no-load-optim --no-load-rng --bf16 --use-ascend-coc \
  --distributed-timeout-minutes 120 --split 100,0,0 --eval-interval 2000 --no-save-optim --no-save-rng \
  --multi-latent-attention --qk-pos-emb-head-dim 8 --qk-head-dim 16 --q-lora-rank 32 --kv-lora-rank 16 \
  --v-head-dim 16 --qk-layernorm --mla-fa-without-pad --beta-fast 32 --beta-slow 1 --rope-scaling-factor 40 \
  --rope-scaling-mscale 1.0 --rope-scaling-mscale-all-dim 1.0 --rope-scaling-original-max-position-embeddings 32 \
  --rope-scaling-type yarn --moe-router-dtype fp32 --moe-grouped-gemm --moe-permutation-async-comm \
  --moe-token-dispatcher-type alltoall --moe-permute-fusion --first-k-dense-replace 1 --moe-layer-freq 1 \
  --n-shared-experts 1 --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 32 \
  --moe-router-load-balancing-type none --moe-router-num-groups 4 --moe-router-group-topk 2 \
  --moe-router-topk-scaling-factor 2.5 --moe-aux-loss-coeff 0.0001 --seq-aux --norm-topk-prob \
  --moe-router-score-function sigmoid --moe-router-enable-expert-bias --expert-tensor-parallel-size 1 \
  --mtp-num-layers 1 --mtp-loss-scaling-factor 0.3 --mtp-mem-efficient-logits --use-distributed-optimizer \
  --recompute-method uniform --recompute-granularity full --recompute-num-layers 1"
# deepseek3 with the example's dualpipev schedule and forward/backward overlap of the MoE layers (PP2 x EP2: 4 workers)
CONFIG_deepseek3dualpipe="$CONFIG_deepseek3 --pipeline-model-parallel-size 2 --moe-fb-overlap \
  --schedules-method dualpipev --global-batch-size 8"
field() {  # field NAME: the shrunk example script on 2 workers (deepseek3dualpipe: 4)
  local name=$1 flags="CONFIG_$1" workers=2
  [ "$name" = deepseek3dualpipe ] && workers=4
  rm -rf "$WORK/log-$name"
  # shellcheck disable=SC2086  # the flags are word lists
  MINDSPEED_MS_TRACE_FILE="$WORK/status-$name.json" "$BIN/mindspeed-ms" run -- "$BIN/msrun" \
    --worker_num="$workers" --local_worker_num="$workers" --master_port="$PORT" --join=True --cluster_time_out=300 \
    --log_dir="$WORK/log-$name" "$LLM/pretrain_gpt.py" --ai-framework mindspore $SIZES ${!flags} \
    > "$WORK/msrun-$name.out" 2>&1
}
parity() {  # the llama2 flags in fp32 on 1 worker against Megatron-LM's pretrain_gpt.py, unfused, on real PyTorch
  local common="--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --num-layers 2 --hidden-size 64 \
    --ffn-hidden-size 172 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --tokenizer-type NullTokenizer --vocab-size $VOCAB --make-vocab-size-divisible-by 1 --micro-batch-size 2 \
    --global-batch-size 4 --train-iters 6 --mock-data --log-interval 1 --eval-iters 0 --distributed-backend gloo"
  local megatron="--transformer-impl local --lr 1.25e-6 --lr-decay-style cosine --untie-embeddings-and-output-weights \
    --disable-bias-linear --attention-dropout 0.0 --init-method-std 0.01 --hidden-dropout 0.0 \
    --position-embedding-type rope --normalization RMSNorm --swiglu --no-masked-softmax-fusion \
    --attention-softmax-in-fp32 --min-lr 1.25e-7 --weight-decay 1e-1 --lr-warmup-fraction 0.01 --clip-grad 1.0 \
    --adam-beta1 0.9 --adam-beta2 0.95 --no-gradient-accumulation-fusion --no-load-optim --no-load-rng \
    --use-distributed-optimizer --no-bias-swiglu-fusion --no-rope-fusion --no-bias-dropout-fusion \
    --no-persist-layer-norm --split 949,50,1 --eval-interval 1000 --seed 1234"
  rm -rf "$WORK/parity"
  # shellcheck disable=SC2086
  "$BIN/mindspeed-ms" parity --reference-python "${MINDSPEED_MS_REFERENCE_PYTHON:?the parity config needs it}" \
    --work-dir "$WORK/parity" --loss-rtol 1e-4 --timeout 1500 --candidate-script "$LLM/pretrain_gpt.py" \
    --candidate-args "--ai-framework mindspore $common ${LLAMA2_FLAGS/--sequence-parallel /}" \
    -- "$MEG/pretrain_gpt.py" $common $megatron
}
cpparity() {  # the qwen25cp flags in fp32 (CP2, 2 workers) against Megatron-LM's pretrain_gpt.py without CP, unfused,
  # on real PyTorch (1 worker): the same model, weights and batches (each CP rank's sequence slice of them)
  local common="--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --num-layers 2 --hidden-size 64 \
    --ffn-hidden-size 172 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 \
    --tokenizer-type NullTokenizer --vocab-size $VOCAB --make-vocab-size-divisible-by 64 --micro-batch-size 2 \
    --global-batch-size 4 --train-iters 6 --mock-data --log-interval 1 --eval-iters 0 --distributed-backend gloo"
  local megatron="--transformer-impl local --group-query-attention --num-query-groups 2 --rotary-base 1000000 \
    --normalization RMSNorm --norm-epsilon 1e-06 --swiglu --add-qkv-bias --disable-bias-linear --attention-dropout 0.0 \
    --hidden-dropout 0.0 --lr 1.25e-6 --lr-decay-style cosine --lr-warmup-fraction 0.01 --init-method-std 0.01 \
    --position-embedding-type rope --no-masked-softmax-fusion --attention-softmax-in-fp32 --min-lr 1.25e-7 \
    --weight-decay 1e-1 --clip-grad 1.0 --adam-beta1 0.9 --adam-beta2 0.95 --no-gradient-accumulation-fusion \
    --no-load-optim --no-load-rng --use-distributed-optimizer --no-bias-swiglu-fusion --no-rope-fusion \
    --no-bias-dropout-fusion --no-persist-layer-norm --split 100,0,0 --eval-interval 1000 --seed 42"
  local candidate="${QWEN25_FLAGS/--sequence-parallel /}"
  rm -rf "$WORK/cpparity"
  # shellcheck disable=SC2086
  "$BIN/mindspeed-ms" parity --reference-python "${MINDSPEED_MS_REFERENCE_PYTHON:?the cpparity config needs it}" \
    --work-dir "$WORK/cpparity" --loss-rtol 1e-4 --timeout 1500 --candidate-script "$LLM/pretrain_gpt.py" \
    --candidate-context-parallel 2 --candidate-args "--ai-framework mindspore $common \
    --context-parallel-size 2 ${candidate/ --bf16/}" -- "$MEG/pretrain_gpt.py" $common $megatron
}
status=0
for config in ${CONFIGS//,/ }; do
  case "$config" in
    dp)
      for workers in 1 2; do
        if ! run "$workers"; then
          echo "FAIL: MindSpeed-LLM pretrain_gpt.py stopped on $workers worker(s); last lines of its log:" >&2
          tail -n 30 "$WORK/msrun-$workers.out" "$WORK/log$workers"/worker_*.log >&2 || true
          status=1
        fi
      done
      "$PY" "$ROOT/scripts/real_entry_figures.py" llm --vocab $VOCAB --iterations $ITERS --status "$WORK/status-1.json" \
        "$WORK/log1" "$WORK/log2" || status=1 ;;
    llama2|qwen25|qwen25cp|mixtral|qwen2moe|deepseek3|deepseek3dualpipe)
      if ! field "$config"; then
        echo "FAIL: $config stopped; last lines of its log:" >&2
        tail -n 30 "$WORK/msrun-$config.out" "$WORK/log-$config"/worker_*.log >&2 || true
        status=1
      fi
      "$PY" "$ROOT/scripts/real_entry_figures.py" field --vocab $VOCAB --iterations 6 \
        --status "$WORK/status-$config.json" "$config" "$WORK/log-$config" || status=1 ;;
    parity)
      parity || { echo "FAIL: MindSpeed-LLM (fused flags) vs Megatron-LM (PyTorch) parity" >&2; status=1; } ;;
    cpparity)
      cpparity || { echo "FAIL: MindSpeed-LLM CP2 (ring attention) vs Megatron-LM (PyTorch) parity" >&2; status=1; } ;;
    *) echo "unknown config $config (dp, llama2, qwen25, qwen25cp, mixtral, qwen2moe, deepseek3, deepseek3dualpipe, parity, cpparity, all)" >&2; exit 2 ;;
  esac
done
exit $status
