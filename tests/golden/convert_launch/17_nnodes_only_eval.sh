#!/bin/bash
# MMLU evaluation of a converted checkpoint: one process per node on two nodes.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6011
NNODES=2
NODE_RANK=${NODE_RANK:-0}

CHECKPOINT="./model_weights/llama2-7b-mcore-tp1pp2"
TOKENIZER_PATH="./model_from_hf/llama-2-7b-hf/"
DATA_PATH="./mmlu/test/"
TASK="mmlu"

DISTRIBUTED_ARGS="--nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

torchrun $DISTRIBUTED_ARGS evaluation.py \
    --use-mcore-models \
    --task-data-path $DATA_PATH \
    --task $TASK \
    --seq-length 4096 \
    --max-new-tokens 1 \
    --max-position-embeddings 4096 \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 2 \
    --num-layers 32 \
    --hidden-size 4096 \
    --num-attention-heads 32 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --load ${CHECKPOINT} \
    --micro-batch-size 1 \
    --bf16 \
    --seed 42 | tee logs/evaluation_llama2_7b_${TASK}.log
