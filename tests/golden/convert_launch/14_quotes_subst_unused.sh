#!/bin/bash
# InternLM2-7B on one node; master address taken from this host, paths contain spaces.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
NNODES=1
NODE_RANK=0
MASTER_PORT=6000
CKPT_DIR="/ckpt/internlm2 7b"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 1 \
    --num-layers 32 \
    --hidden-size 4096 \
    --num-attention-heads 32 \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 32 \
    --tokenizer-type PretrainedFromHF \
    --bf16
"

# Memory options, kept for reference; not passed to the job below.
MEM_ARGS="
    --recompute-in-advance \
    --recompute-in-bubble \
    --recompute-granularity full
"

echo "Launching with torchrun --nproc_per_node $NPUS_PER_NODE (see torchrun --help)"
mkdir -p logs
torchrun --nproc_per_node $NPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK \
    --master_addr $(hostname -I | awk '{print $1}') --master_port $MASTER_PORT \
    pretrain_gpt.py \
    $GPT_ARGS \
    --data-path "/data/my set/internlm2_text_document" \
    --tokenizer-name-or-path "/models/internlm2 7b/" \
    --save "$CKPT_DIR" \
    --load "$CKPT_DIR" \
    --distributed-backend nccl \
    2>&1 | tee "logs/train internlm2 $(date +%F).log"
echo "torchrun exited with ${PIPESTATUS[0]}"
