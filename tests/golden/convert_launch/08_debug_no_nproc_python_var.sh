#!/bin/bash
# Single-process smoke test of a tiny GPT; no torchrun options, so one process is started.
set -e
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

PYTHON=${PYTHON:-python3}
DATA_PATH=/data/smoke/gpt_text_document
VOCAB=/data/smoke/gpt2-vocab.json
MERGES=/data/smoke/gpt2-merges.txt

echo "smoke test: launching with $PYTHON -m torch.distributed.launch (1 process)"

GPT_ARGS="
    --num-layers 2 \
    --hidden-size 256 \
    --num-attention-heads 4 \
    --seq-length 512 \
    --max-position-embeddings 512 \
    --micro-batch-size 2 \
    --global-batch-size 2 \
    --train-iters 10 \
    --lr 1e-4 \
    --auto-settings \
    --fp16
"

$PYTHON -m torch.distributed.launch pretrain_gpt.py $GPT_ARGS \
    --data-path $DATA_PATH \
    --vocab-file $VOCAB \
    --merge-file $MERGES \
    --split 98,1,1 \
    --log-interval 1 \
    --eval-iters 1 \
    --distributed-backend nccl

echo "smoke test finished"
