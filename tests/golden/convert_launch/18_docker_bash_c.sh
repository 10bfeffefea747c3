#!/bin/bash
# Runs a short sanity job inside the training container, then the real job on the host.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

CONTAINER=mindspeed-llm
NPUS_PER_NODE=8
MASTER_PORT=6000

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 4 \
    --pipeline-model-parallel-size 2 \
    --num-layers 32 \
    --hidden-size 4096 \
    --num-attention-heads 32 \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --data-path /data/llama2/enwiki_text_document \
    --fp16
"

# sanity check: 10 iterations with torchrun inside the container
docker exec -i "$CONTAINER" bash -c "cd /workspace/MindSpeed-LLM && \
    torchrun --nproc_per_node $NPUS_PER_NODE --master_port $MASTER_PORT pretrain_gpt.py $GPT_ARGS --train-iters 10"

torchrun --nproc_per_node=$NPUS_PER_NODE --master_port=$MASTER_PORT pretrain_gpt.py \
    $GPT_ARGS \
    --train-iters 5000 \
    --save /ckpt/llama2-7b \
    2>&1 | tee logs/pretrain_llama2_7b.log
