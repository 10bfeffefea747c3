#!/bin/bash
# Seed sweep for Yi-34B: the launch lives in a function that a loop calls once per seed.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
CKPT_ROOT=/ckpt/yi-34b-sweep
DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --master_port 6001"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 1 \
    --num-layers 60 \
    --hidden-size 7168 \
    --num-attention-heads 56 \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --train-iters 200 \
    --data-path /data/yi/enwiki_text_document \
    --use-distributed-optimizer \
    --reuse-fp32-param \
    --swap-optimizer \
    --bf16
"

run_seed() {
    local seed=$1
    mkdir -p "$CKPT_ROOT/seed_$seed"
    torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
        $GPT_ARGS \
        --seed $seed \
        --hccl-group-buffer "dp:3;tp:1" \
        --save "$CKPT_ROOT/seed_$seed" \
        | tee "logs/seed_$seed.log"
}

for seed in 1234 4321 2025; do
    run_seed "$seed"
done
