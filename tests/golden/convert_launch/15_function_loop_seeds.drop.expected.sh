#!/bin/bash
# Seed sweep for Yi-34B: the launch lives in a function that a loop calls once per seed.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
CKPT_ROOT=/ckpt/yi-34b-sweep
DISTRIBUTED_ARGS="--local_worker_num $NPUS_PER_NODE --master_port 6001 --worker_num=$NPUS_PER_NODE --log_dir=msrun_log --join=False --cluster_time_out=300 --bind_core=True"

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
    msrun $DISTRIBUTED_ARGS pretrain_gpt.py \
        $GPT_ARGS \
        --seed $seed \
        --save "$CKPT_ROOT/seed_$seed" \
        --ai-framework mindspore \
        | tee "logs/seed_$seed.log"
}

for seed in 1234 4321 2025; do
    run_seed "$seed"
done
