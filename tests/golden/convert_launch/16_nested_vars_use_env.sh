#!/bin/bash
# LLaMA3-70B 128k with hybrid context parallelism; argument groups are combined into ALL_ARGS.
export CUDA_DEVICE_MAX_CONNECTIONS=1
export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=16
MASTER_ADDR=10.0.0.1
MASTER_PORT=6000
NNODES=2
NODE_RANK=${NODE_RANK:-0}
WORLD_SIZE=$((NPUS_PER_NODE*NNODES))
CKPT_SAVE_DIR=/ckpt/llama3-70b-128k

DISTRIBUTED_ARGS="
    --use_env \
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES \
    --node_rank $NODE_RANK \
    --master-addr $MASTER_ADDR \
    --master-port $MASTER_PORT
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 1 \
    --num-layers 80 \
    --hidden-size 8192 \
    --num-attention-heads 64 \
    --seq-length 131072 \
    --micro-batch-size 1 \
    --global-batch-size 8 \
    --data-path /data/llama3/long_text_document \
    --bf16
"

CP_ARGS="
    --context-parallel-size 4 \
    --context-parallel-algo hybrid_cp_algo \
    --ulysses-degree-in-cp 2 \
    --cp-attention-mask-type causal
"

ALL_ARGS="$GPT_ARGS $CP_ARGS --distributed-backend nccl"

python -m torch.distributed.launch $DISTRIBUTED_ARGS pretrain_gpt.py $ALL_ARGS \
    --save $CKPT_SAVE_DIR | tee logs/pretrain_llama3_70b_128k.log
