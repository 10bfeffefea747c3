#!/bin/bash
# Elastic pretraining of LLaMA2-13B: 1 to 4 nodes join through a c10d rendezvous.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_CONNECT_TIMEOUT=1800
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
JOB_ID=${JOB_ID:-llama2-13b-elastic}
CKPT_DIR=/ckpt/llama2-13b
DATA_PATH=/data/llama2/enwiki_text_document
TOKENIZER_MODEL=/models/llama-2-13b-hf/tokenizer.model

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 1 \
    --num-layers 40 \
    --hidden-size 5120 \
    --num-attention-heads 40 \
    --tokenizer-type Llama2Tokenizer \
    --tokenizer-model ${TOKENIZER_MODEL} \
    --seq-length 4096 \
    --micro-batch-size 2 \
    --global-batch-size 512 \
    --bf16
"

torchrun \
    --nnodes 1:4 \
    --nproc_per_node $NPUS_PER_NODE \
    --rdzv_id $JOB_ID \
    --rdzv_backend c10d \
    --rdzv_endpoint $(hostname -I | awk '{print $1}'):29400 \
    --max_restarts 3 \
    --monitor_interval=5 \
    pretrain_gpt.py \
    $GPT_ARGS \
    --data-path $DATA_PATH \
    --split 949,50,1 \
    --save $CKPT_DIR \
    --load $CKPT_DIR \
    --distributed-backend nccl \
    2>&1 | tee logs/pretrain_llama2_13b_elastic.log
