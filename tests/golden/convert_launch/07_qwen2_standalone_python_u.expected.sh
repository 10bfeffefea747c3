#!/bin/bash
# Full-parameter fine-tuning of Qwen2-7B on a single machine (rendezvous via --standalone).
export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_DETERMINISTIC=True
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=4

CKPT_LOAD_DIR="./model_weights/qwen2-7b-mcore/"
CKPT_SAVE_DIR="./ckpt/qwen2-7b-sft/"
DATA_PATH="./finetune_dataset/alpaca"
TOKENIZER_PATH="./model_from_hf/qwen2-7b-hf/"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --num-layers 28 \
    --hidden-size 3584 \
    --num-attention-heads 28 \
    --tokenizer-type PretrainedFromHF \
    --tokenizer-name-or-path ${TOKENIZER_PATH} \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 32 \
    --use-distributed-optimizer \
    --bf16
"

DATA_ARGS="
    --data-path $DATA_PATH \
    --split 100,0,0
"

TUNE_ARGS="
    --finetune \
    --stage sft \
    --is-instruction-dataset \
    --prompt-type qwen \
    --variable-seq-lengths
"

msrun --local_worker_num $NPUS_PER_NODE --worker_num=$NPUS_PER_NODE --master_addr=127.0.0.1 --log_dir=msrun_log --join=False --cluster_time_out=300 --bind_core=True posttrain_gpt.py \
    $GPT_ARGS \
    $DATA_ARGS \
    $TUNE_ARGS \
    --load ${CKPT_LOAD_DIR} \
    --save ${CKPT_SAVE_DIR} \
    --distributed-backend nccl \
    --ai-framework mindspore \
    | tee logs/tune_qwen2_7b_full.log
