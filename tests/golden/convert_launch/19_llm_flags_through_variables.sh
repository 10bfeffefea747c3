#!/bin/bash
# MindSpeed-LLM style: flag values through variables, the DualPipe block, memory flags
NPUS_PER_NODE=8
NNODES=1
CP_ALGO=hybrid_cp_algo
DISPATCHER=alltoall

DISTRIBUTED_ARGS="
    --nproc_per_node $NPUS_PER_NODE \
    --nnodes $NNODES
"

MOE_ARGS="
    --moe-token-dispatcher-type ${DISPATCHER} \
    --moe-grouped-gemm \
    --gemm-gradient-accumulation-fusion
"

DUALPIPE_ARGS="
    --moe-fb-overlap \
    --schedules-method dualpipev
"

MEM_ARGS="
    --use-distributed-optimizer \
    --swap-optimizer \
    --swap-attention \
    --recompute-granularity full \
    --recompute-method uniform \
    --recompute-num-layers 1 \
    --manual-gc \
    --manual-gc-interval 50 \
    --overlap-grad-reduce
"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $MOE_ARGS \
    $DUALPIPE_ARGS \
    $MEM_ARGS \
    --context-parallel-algo ${CP_ALGO} \
    --bf16
