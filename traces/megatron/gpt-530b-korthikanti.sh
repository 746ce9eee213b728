#!/bin/bash
# GPT 530B as Korthikanti et al. ran it ("Reducing Activation Recomputation in
# Large Transformer Models", https://arxiv.org/abs/2205.05198, Tables 3 and 5;
# tests/data/validation/korthikanti2022_a100.csv): 280 A100 (35 nodes), TP8 PP35,
# global batch 280, selective recomputation + sequence parallelism, fp16. The
# paper publishes no launch script: this follows Megatron-LM's SC21 scripts
# (Narayanan et al.), whose Table 1 530B case also runs TP8 PP35 with one layer
# per virtual stage (3 per pipeline rank):
# https://github.com/NVIDIA/Megatron-LM/blob/f2e72c8a16124dc98af19a2cfe36ba8fac5758df/examples/academic_paper_scripts/sc21/CONFIG.sh
# https://github.com/NVIDIA/Megatron-LM/blob/f2e72c8a16124dc98af19a2cfe36ba8fac5758df/examples/academic_paper_scripts/sc21/run_table_1.sh
# with the 2022 paper's batch, recomputation and sequence parallelism. srun
# starts one process per GPU, so the world size (280) is not in the arguments.
# --accumulate-allreduce-grads-in-fp32: the paper's parameter and optimizer memory
# (Fig. 1: 45.5625 GiB per GPU for 22B and 175B) is 18 bytes per parameter, Megatron's
# count for fp16 parameters with fp32 gradients.
# --no-overlap-p2p-communication: the 2022 runs predate Megatron's overlapped
# pipeline sends (added 2023-05), which it now turns on with interleaving.
# Test input of tests/e2e/from_args_test.py: it must give configs/workloads/gpt-530b.json.

#SBATCH --nodes=35 --ntasks-per-node=8 --exclusive

TP=8
PP=35
MBS=1
GBS=280
NLS=105
HS=20480
NAH=128
DDP=local
MEGATRON_EXTRA_PARAMS="--num-layers-per-virtual-pipeline-stage 1 --sequence-parallel --recompute-activations --tokenizer-type GPT2BPETokenizer --accumulate-allreduce-grads-in-fp32 --no-overlap-p2p-communication "

: "${MEGATRON_DATA:?Set MEGATRON_DATA, e.g. /path/to/megatron_processed_data}"
: "${BPE_VOCAB_FILE:?Set BPE_VOCAB_FILE, e.g. /path/to/gpt2-vocab.json}"
: "${BPE_MERGE_FILE:?Set BPE_MERGE_FILE, e.g. /path/to/gpt2-merges.txt}"

export MEGATRON_PARAMS=" ${MEGATRON_EXTRA_PARAMS} \
	--tensor-model-parallel-size ${TP} \
	--pipeline-model-parallel-size ${PP} \
	--micro-batch-size ${MBS} \
	--global-batch-size ${GBS} \
        --num-layers ${NLS} \
        --hidden-size ${HS} \
        --num-attention-heads ${NAH} \
	--DDP-impl ${DDP} \
	--data-path ${MEGATRON_DATA} \
	--vocab-file ${BPE_VOCAB_FILE} \
	--merge-file ${BPE_MERGE_FILE} \
        --log-interval 5 \
        --seq-length 2048 \
        --max-position-embeddings 2048 \
        --train-iters 500 \
        --lr-decay-iters 320 \
        --lr 0.0001 \
	--min-lr 0.00001 \
        --lr-decay-style cosine \
        --lr-warmup-fraction 0.01 \
        --split 969,30,1 \
        --eval-iters 100 \
        --eval-interval 1000 \
        --clip-grad 1.0 \
        --fp16 \
	--loss-scale 8192 "

srun -l python -u pretrain_gpt.py ${MEGATRON_PARAMS}
