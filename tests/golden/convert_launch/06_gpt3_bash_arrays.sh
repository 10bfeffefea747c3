#!/bin/bash
# GPT-3 style job with Megatron-LM bash arrays for every argument group.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=${MASTER_PORT:-6000}
NUM_NODES=${NUM_NODES:-1}
WORLD_SIZE=$(( NUM_NODES * GPUS_PER_NODE ))

CHECKPOINT_PATH=$1
TENSORBOARD_LOGS_PATH=$2
DATA_PATH=$3

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 24
    --hidden-size 2048
    --num-attention-heads 16
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 256
    --train-iters 50000
    --lr 6.0e-5
    --lr-decay-style cosine
    --tensor-model-parallel-size 4
    --tp-2d
    --use-distributed-optimizer
    --reuse-fp32-param
    --fp16
)

DATA_ARGS=(
    --data-path "$DATA_PATH"
    --vocab-file /data/gpt2-vocab.json
    --merge-file /data/gpt2-merges.txt
    --split 949,50,1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 100
    --save "$CHECKPOINT_PATH"
    --load "$CHECKPOINT_PATH"
    --tensorboard-dir "$TENSORBOARD_LOGS_PATH"
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    "${EVAL_AND_LOGGING_ARGS[@]}"
