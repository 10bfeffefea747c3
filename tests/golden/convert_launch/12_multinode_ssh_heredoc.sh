#!/bin/bash
# Four-node job started from node 0: workers are launched over ssh, node 0 runs locally.
export CUDA_DEVICE_MAX_CONNECTIONS=1
source /usr/local/Ascend/ascend-toolkit/set_env.sh

HOSTS=(node1 node2 node3)
NPUS_PER_NODE=8
MASTER_ADDR=node0
MASTER_PORT=6000
NNODES=4
WORLD_SIZE=$(($NPUS_PER_NODE*$NNODES))

DISTRIBUTED_ARGS="--nproc_per_node $NPUS_PER_NODE --nnodes $NNODES --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

GPT_ARGS="
    --use-mcore-models \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 4 \
    --num-layers 80 \
    --hidden-size 8192 \
    --num-attention-heads 64 \
    --seq-length 4096 \
    --micro-batch-size 1 \
    --global-batch-size 1024 \
    --data-path /shared/data/llama2/enwiki_text_document \
    --bf16
"

start_worker() {
    echo "starting torchrun on $1 (node_rank $2)"
    ssh "$1" <<EOF
cd /workspace/MindSpeed-LLM
source /usr/local/Ascend/ascend-toolkit/set_env.sh
torchrun $DISTRIBUTED_ARGS --node_rank $2 pretrain_gpt.py $GPT_ARGS > logs/node_$2.log 2>&1
EOF
}

rank=1
for host in "${HOSTS[@]}"; do
    start_worker "$host" "$rank" &
    rank=$((rank + 1))
done

# node 0 runs here; the other nodes were started with torchrun over ssh above
torchrun $DISTRIBUTED_ARGS --node_rank 0 pretrain_gpt.py \
    $GPT_ARGS \
    --save /shared/ckpt/llama2-70b \
    2>&1 | tee logs/node_0.log
wait
