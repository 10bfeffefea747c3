#!/bin/bash
# Qwen3-32B on the MindSpore backend: this script was already moved from torchrun to msrun.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_CONNECT_TIMEOUT=1800
source /usr/local/Ascend/ascend-toolkit/set_env.sh

basepath=$(cd "$(dirname "$0")"; pwd)
NPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=9110
NNODES=2
NODE_RANK=0
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))

CKPT_LOAD_DIR="your model ckpt path"
CKPT_SAVE_DIR="your model save ckpt path"
DATA_PATH="your data path"
TOKENIZER_PATH="your tokenizer path"

DISTRIBUTED_ARGS="
    --worker_num $WORLD_SIZE \
    --local_worker_num $NPUS_PER_NODE \
    --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT \
    --log_dir=msrun_log \
    --join=False \
    --cluster_time_out=300
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 2 \
    --num-layers 64 \
    --hidden-size 5120 \
    --num-attention-heads 64 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 16 \
    --use-distributed-optimizer \
    --reuse-fp32-param \
    --bf16
"

mindspeed-ms run -- msrun $DISTRIBUTED_ARGS $basepath/pretrain_gpt.py \
    $GPT_ARGS \
    --data-path $DATA_PATH \
    --split 100,0,0 \
    --load ${CKPT_LOAD_DIR} \
    --save ${CKPT_SAVE_DIR} \
    --distributed-backend nccl \
    --ai-framework mindspore \
    2>&1 | tee logs/ms_pretrain_qwen3_32b.log
