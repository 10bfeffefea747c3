#!/bin/bash
# LLaMA3-8B with context parallelism; launched through torch.distributed.run.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6000
NNODES=1
NODE_RANK=0

CKPT_DIR=./ckpt/llama3-8b
DATA_PATH=./dataset/llama3/alpaca_text_document
TOKENIZER_PATH=./model_from_hf/llama3-8b-hf/

DISTRIBUTED_ARGS="--local_worker_num ${NPUS_PER_NODE} --worker_num $((NPUS_PER_NODE*NNODES)) --node_rank ${NODE_RANK} --master_addr ${MASTER_ADDR} --master_port ${MASTER_PORT} --log_dir=msrun_log --join=False --cluster_time_out=300 --bind_core=True"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 1 \
    --context-parallel-size 2 \
    --context-parallel-algo ulysses_cp_algo \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --seq-length 8192 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --bf16
"

DATA_ARGS="--data-path $DATA_PATH --split 100,0,0"
OUTPUT_ARGS="--log-interval 1 --save-interval 1000 --eval-interval 1000 --eval-iters 0 --save $CKPT_DIR"

msrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS $DATA_ARGS $OUTPUT_ARGS --distributed-backend nccl --ai-framework mindspore | tee logs/pretrain_llama3_8b.log
