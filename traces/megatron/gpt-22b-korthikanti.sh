#!/bin/bash
# GPT 22B as Korthikanti et al. ran it ("Reducing Activation Recomputation in
# Large Transformer Models", https://arxiv.org/abs/2205.05198, Tables 3 and 5;
# tests/data/validation/korthikanti2022_a100.csv): 8 A100, TP8 PP1, batch 4,
# selective recomputation + sequence parallelism, fp16. The paper publishes no
# launch script: this one is reconstructed from its tables in the argument style
# of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
# (https://github.com/NVIDIA/Megatron-LM/blob/fa0dcc48720ed9f440f36c7973fe5e7a54c7d208/examples/gpt3/train_gpt3_175b_distributed.sh).
# --accumulate-allreduce-grads-in-fp32: the paper's parameter and optimizer memory
# (Fig. 1: 45.5625 GiB per GPU for 22B and 175B) is 18 bytes per parameter, Megatron's
# count for fp16 parameters with fp32 gradients.
# Test input of tests/e2e/from_args_test.py: it must give configs/workloads/gpt-22b.json.

export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NNODES=1
TP=8
PP=1
VOCAB_FILE=$1 # gpt2-vocab.json
MERGE_FILE=$2 # gpt2-merges.txt
DATA_PATH=$3

torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py \
    --tensor-model-parallel-size $TP \
    --pipeline-model-parallel-size $PP \
    --sequence-parallel \
    --recompute-activations \
    --num-layers 48 \
    --hidden-size 6144 \
    --num-attention-heads 64 \
    --seq-length 2048 \
    --max-position-embeddings 2048 \
    --micro-batch-size 4 \
    --global-batch-size 4 \
    --train-iters 100 \
    --lr 6.0e-5 \
    --lr-decay-style cosine \
    --clip-grad 1.0 \
    --fp16 \
    --accumulate-allreduce-grads-in-fp32 \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$VOCAB_FILE" \
    --merge-file "$MERGE_FILE" \
    --data-path "$DATA_PATH" \
    --split 949,50,1 \
    --log-interval 1
