#!/bin/bash
# Qwen2.5-14B pretraining on 2 nodes, options written inline with '='.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_CONNECT_TIMEOUT=1200
source /usr/local/Ascend/ascend-toolkit/set_env.sh

GPUS_PER_NODE=8
MASTER_ADDR=192.168.0.10
NNODES=2
NODE_RANK=${1:-0}
WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES))

CKPT_SAVE_DIR="/ckpt/qwen25-14b-save"
CKPT_LOAD_DIR="/ckpt/qwen25-14b-mcore"
DATA_PATH="/data/qwen25/alpaca_text_document"
TOKENIZER_PATH="/models/Qwen2.5-14B/"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 2 \
    --num-layers 48 \
    --hidden-size 5120 \
    --num-attention-heads 40 \
    --group-query-attention \
    --num-query-groups 8 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --use-distributed-optimizer \
    --o2-optimizer \
    --bf16
"

DATA_ARGS="
    --data-path $DATA_PATH \
    --split 100,0,0
"

OUTPUT_ARGS="
    --log-interval 1 \
    --save-interval 2000 \
    --eval-interval 2000 \
    --eval-iters 0
"

msrun \
    --local_worker_num=8 \
    --worker_num=16 \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --master_port=29500 \
    --log_dir=msrun_log \
    --join=False \
    --cluster_time_out=300 \
    --bind_core=True \
    pretrain_gpt.py \
    $GPT_ARGS \
    $DATA_ARGS \
    $OUTPUT_ARGS \
    --distributed-backend nccl \
    --load ${CKPT_LOAD_DIR} \
    --save ${CKPT_SAVE_DIR} \
    --ai-framework mindspore \
    2>&1 | tee logs/pretrain_qwen25_14b.log
