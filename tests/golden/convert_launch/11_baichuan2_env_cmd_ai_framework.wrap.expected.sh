#!/bin/bash
# Baichuan2-13B; the script already passes --ai-framework (pytorch) and sets HCCL env through env(1).
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6000
NNODES=1
NODE_RANK=0
WORLD_SIZE=$(( $NNODES * $NPUS_PER_NODE ))

CKPT_LOAD_DIR=./model_weights/baichuan2-13b-mcore
CKPT_SAVE_DIR=./ckpt/baichuan2-13b
DATA_PATH=./dataset/baichuan2/alpaca_text_document
TOKENIZER_PATH=./model_from_hf/baichuan2-13b-hf

DISTRIBUTED_ARGS="
    --local_worker_num $NPUS_PER_NODE \
    --worker_num $WORLD_SIZE \
    --node_rank $NODE_RANK \
    --master_addr $MASTER_ADDR \
    --master_port $MASTER_PORT \
    --log_dir=msrun_log \
    --join=False \
    --cluster_time_out=300 \
    --bind_core=True
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 1 \
    --num-layers 40 \
    --hidden-size 5120 \
    --num-attention-heads 40 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path $TOKENIZER_PATH \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 32 \
    --disable-gloo-group \
    --ai-framework mindspore \
    --fp16
"

env HCCL_BUFFSIZE=200 TASK_QUEUE_ENABLE=2 mindspeed-ms run -- msrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $GPT_ARGS \
    --data-path $DATA_PATH \
    --split 949,50,1 \
    --load $CKPT_LOAD_DIR \
    --save $CKPT_SAVE_DIR \
    --distributed-backend nccl \
    | tee logs/train_baichuan2_13b.log
