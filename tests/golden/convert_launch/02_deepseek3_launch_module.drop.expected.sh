#!/bin/bash
# DeepSeek-V3 671B pretraining, 64 nodes x 8 NPUs (PyTorch backend).
export CUDA_DEVICE_MAX_CONNECTIONS=1
export HCCL_CONNECT_TIMEOUT=1800
source /usr/local/Ascend/ascend-toolkit/set_env.sh

NPUS_PER_NODE=8
MASTER_ADDR=localhost #主节点IP
MASTER_PORT=6000
NNODES=64
NODE_RANK=0
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))

CKPT_LOAD_DIR="your model ckpt path"
CKPT_SAVE_DIR="your model save ckpt path"
DATA_PATH="your data path"

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

MLA_ARGS="
    --multi-head-latent-attention \
    --qk-rope-head-dim 64 \
    --qk-nope-head-dim 128 \
    --qk-layernorm
"

MOE_ARGS="
    --moe-grouped-gemm \
    --use-fused-moe-token-permute-and-unpermute \
    --num-experts 256 \
    --moe-router-topk 8 \
    --moe-aux-loss-coeff 0.0001
"

DUALPIPE_ARGS="
    --moe-fb-overlap \
    --schedules-method dualpipev
"

MEM_ARGS="
    --recompute-activation-function \
    --recompute-granularity full \
    --recompute-num-layers 1
"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 8 \
    --expert-model-parallel-size 32 \
    --data-path $DATA_PATH \
    --use-distributed-optimizer \
    --bf16
"

msrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $GPT_ARGS \
    $MLA_ARGS \
    $MOE_ARGS \
    $DUALPIPE_ARGS \
    $MEM_ARGS \
    --distributed-backend nccl \
    --save $CKPT_SAVE_DIR \
    --load $CKPT_LOAD_DIR \
    --ai-framework mindspore \
    2>&1 | tee logs/pretrain_deepseek3_671b_4k_ptd.log
