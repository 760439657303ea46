#!/usr/bin/env bash
# The accelerator benchmarks in one go, for one NVIDIA GPU, in under 5 minutes:
#   1. precision x XLA: float32 (TF32 off) / TF32 / mixed_float16 / mixed_bfloat16, jit_compile off/on:
#      GNMT at the gnmt card's sizes (4+4 x 1024, vocabulary 32000, batch 128), tokens/s and peak memory;
#   2. the same for a Transformer-base step without XLA;
#   3. strategies (one device / mirrored / hybrid / hybrid + pipelining) on two slices of the GPU
#      (they share its cores: this checks that the modes run on a GPU and shows their overhead);
#   4. the cost model's prediction for 2 and 4 real GPUs.
# Results go to stdout and to $OUT/gpu_suite.txt when OUT is set (else benchmarks/gpu_suite.txt).
#
#   bash benchmarks/gpu_suite.sh
set -euo pipefail
cd "$(dirname "$0")/.."
log="${OUT:-benchmarks}/gpu_suite.txt"
export TF_CPP_MIN_LOG_LEVEL=2
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
  python -c "import tensorflow as tf, keras; print('tensorflow', tf.__version__, 'keras', keras.__version__)"
  time python benchmarks/bench_gpu.py --model gnmt --steps 5 --repeats 3
  time python benchmarks/bench_gpu.py --model transformer --units 512 --layers 6 --batch 64 --length 64 --no-xla
  time python benchmarks/bench_strategies.py --gpu --units 1024 --layers 4 --vocab 32000 --batch 128 --length 48 \
    --precision mixed_float16 --steps 5 --repeats 3
  python benchmarks/cost_model.py
} 2>&1 | grep -v -E "^(I|W)0000 " | tee "$log"
