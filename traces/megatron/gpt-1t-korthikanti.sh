#!/bin/bash
# GPT 1T as Korthikanti et al. ran it ("Reducing Activation Recomputation in
# Large Transformer Models", https://arxiv.org/abs/2205.05198, Tables 3 and 5;
# tests/data/validation/korthikanti2022_a100.csv): 512 A100 (64 nodes), TP8
# PP64, global batch 512, selective recomputation + sequence parallelism, fp16,
# no interleaving. The paper publishes no launch script: this is Megatron-LM's
# examples/gpt3/train_gpt3_175b_distributed.sh
# (https://github.com/NVIDIA/Megatron-LM/blob/fa0dcc48720ed9f440f36c7973fe5e7a54c7d208/examples/gpt3/train_gpt3_175b_distributed.sh)
# with the paper's model, plan and batch.
# --accumulate-allreduce-grads-in-fp32: the paper's parameter and optimizer memory
# (Fig. 1: 45.5625 GiB per GPU for 22B and 175B) is 18 bytes per parameter, Megatron's
# count for fp16 parameters with fp32 gradients.
# Test input of tests/e2e/from_args_test.py: it must give configs/workloads/gpt-1t.json.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=${NUM_NODES:-64}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000
NODE_RANK=${NODE_RANK:-0}

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 128
    --hidden-size 25600
    --num-attention-heads 160
    --seq-length 2048
    --max-position-embeddings 2048
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 512
    --train-iters 500000
    --weight-decay 0.1
    --clip-grad 1.0
    --fp16
    --accumulate-allreduce-grads-in-fp32
    --lr 6.0e-5
    --lr-decay-style cosine
    --recompute-activations
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 64
    --sequence-parallel
)

DATA_ARGS=(
    --data-path "$1"
    --tokenizer-type GPT2BPETokenizer
    --vocab-file "$2"
    --merge-file "$3"
    --split 949,50,1
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${GPT_MODEL_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "${MODEL_PARALLEL_ARGS[@]}" \
    "${DATA_ARGS[@]}" \
    --log-interval 100
