#!/bin/bash
# Mixtral-8x7B pretraining; torch elastic options spelled with hyphens (torch >= 2.1).
export HCCL_CONNECT_TIMEOUT=1200
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
source /usr/local/Ascend/ascend-toolkit/set_env.sh

MASTER_ADDR=localhost
NNODES=${NNODES:-4}
NODE_RANK=${NODE_RANK:-0}

DATA_PATH=/data/mixtral/enwiki_text_document
TOKENIZER_MODEL=/models/Mixtral-8x7B/
CKPT_LOAD_DIR=/ckpt/mixtral-8x7b-mcore
CKPT_SAVE_DIR=/ckpt/mixtral-8x7b-save

MOE_ARGS="
    --num-experts 8 \
    --expert-model-parallel-size 8 \
    --moe-router-topk 2 \
    --moe-router-load-balancing-type aux_loss \
    --moe-aux-loss-coeff 0.02 \
    --moe-token-dispatcher-type alltoall \
    --moe-grouped-gemm
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 4 \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --seq-length 32768 \
    --max-position-embeddings 32768 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_MODEL} \
    --micro-batch-size 1 \
    --global-batch-size 128 \
    --use-flash-attn \
    --bf16
"

mkdir -p logs
CUDA_DEVICE_MAX_CONNECTIONS=1 mindspeed-ms run -- msrun --local_worker_num 8 --worker_num $((8*NNODES)) --node_rank $NODE_RANK \
    --master_addr "$MASTER_ADDR" --master_port 29500 --log_dir ./torch_logs \
    --join=False \
    --cluster_time_out=300 \
    --bind_core=True \
    pretrain_gpt.py \
    $GPT_ARGS \
    $MOE_ARGS \
    --use-fusion-attn-v2 \
    --data-path $DATA_PATH \
    --split 99990,8,2 \
    --load $CKPT_LOAD_DIR \
    --save $CKPT_SAVE_DIR \
    --distributed-backend nccl \
    --ai-framework mindspore > logs/pretrain_mixtral_8x7b.log 2>&1
