#!/bin/bash
# GLM4-9B: pretrain or fine-tune depending on STAGE (two torchrun launches).
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

STAGE=${STAGE:-pretrain}
NPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6010
NNODES=2
NODE_RANK=0

DISTRIBUTED_ARGS="
    --local_worker_num $NPUS_PER_NODE
    --worker_num $((NPUS_PER_NODE*NNODES))
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
    --log_dir=msrun_log
    --join=False
    --cluster_time_out=300
    --bind_core=True
"
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))
echo "world size: $WORLD_SIZE"

CKPT_SAVE_DIR=/ckpt/glm4-9b
GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 2 \
    --num-layers 40 \
    --hidden-size 4096 \
    --num-attention-heads 32 \
    --seq-length 8192 \
    --micro-batch-size 1 \
    --global-batch-size 64 \
    --use-ascend-mc2 \
    --sequence-parallel \
    --bf16
"
DATA_ARGS="--data-path /data/glm4/pretrain_text_document --split 100,0,0"
TUNE_ARGS="--finetune --stage sft --data-path /data/glm4/alpaca --is-instruction-dataset"

if [ "$STAGE" = "pretrain" ]; then
    msrun $DISTRIBUTED_ARGS pretrain_gpt.py \
        $GPT_ARGS \
        $DATA_ARGS \
        --save $CKPT_SAVE_DIR \
        --ai-framework mindspore \
        | tee logs/pretrain_glm4_9b.log
else
    msrun $DISTRIBUTED_ARGS posttrain_gpt.py \
        $GPT_ARGS \
        $TUNE_ARGS \
        --load $CKPT_SAVE_DIR \
        --save $CKPT_SAVE_DIR/sft \
        --ai-framework mindspore \
        | tee logs/tune_glm4_9b.log
fi
