#!/bin/bash
# GPT 175B as Korthikanti et al. ran it ("Reducing Activation Recomputation in
# Large Transformer Models", https://arxiv.org/abs/2205.05198, Tables 3 and 5;
# tests/data/validation/korthikanti2022_a100.csv): 64 A100, TP8 PP8, global
# batch 64, selective recomputation + sequence parallelism, fp16; 3 virtual
# stages per pipeline rank as the Calculon reproduction (and the shipped config)
# assume, which the paper does not state. The paper publishes no launch script:
# this is Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
# (https://github.com/NVIDIA/Megatron-LM/blob/fa0dcc48720ed9f440f36c7973fe5e7a54c7d208/examples/gpt3/train_gpt3_175b_distributed.sh)
# with the paper's plan and batch, without its batch ramp-up and attention backend.
# --accumulate-allreduce-grads-in-fp32: the paper's parameter and optimizer memory
# (Fig. 1: 45.5625 GiB per GPU for 22B and 175B) is 18 bytes per parameter, Megatron's
# count for fp16 parameters with fp32 gradients.
# --no-overlap-p2p-communication: the 2022 runs predate Megatron's overlapped
# pipeline sends (added 2023-05), which it now turns on with interleaving.
# Test input of tests/e2e/from_args_test.py: it must give configs/workloads/gpt-175b.json.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
MASTER_ADDR=localhost
MASTER_PORT=6000
NUM_NODES=8
NODE_RANK=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))

CHECKPOINT_PATH=$1 #<Specify path>
VOCAB_FILE=$2 #<Specify path to file>/gpt2-vocab.json
MERGE_FILE=$3 #<Specify path to file>/gpt2-merges.txt
DATA_PATH=$4 #<Specify path and file prefix>_text_document

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr $MASTER_ADDR
    --master_port $MASTER_PORT
)

GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 64
    --train-iters 500000
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.95
    --init-method-std 0.006
    --clip-grad 1.0
    --fp16
    --accumulate-allreduce-grads-in-fp32
    --lr 6.0e-5
    --lr-decay-style cosine
    --min-lr 6.0e-6
    --lr-warmup-fraction .001
    --lr-decay-iters 430000
    --recompute-activations # selective: the attention core
)

MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8
	--pipeline-model-parallel-size 8
	--num-layers-per-virtual-pipeline-stage 4
	--sequence-parallel
	--no-overlap-p2p-communication
)

DATA_ARGS=(
    --data-path $DATA_PATH
    --tokenizer-type GPT2BPETokenizer
    --vocab-file $VOCAB_FILE
    --merge-file $MERGE_FILE
    --split 949,50,1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 100
    --save-interval 10000
    --eval-interval 1000
    --save $CHECKPOINT_PATH
    --load $CHECKPOINT_PATH
    --eval-iters 10
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${EVAL_AND_LOGGING_ARGS[@]}
