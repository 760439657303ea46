#!/usr/bin/env bash
# The accelerator benchmarks in one go, for the NVIDIA machine (JAX, no TensorFlow), in under 8 minutes:
#   1. the machine: GPU, driver, JAX / Keras / PyTorch versions;
#   2. every zoo card at full size on Keras's JAX backend (bench_gpu.py, one process per card, each
#      under its own timeout): transformer and gnmt in float32 (TF32 off), TF32, mixed_bfloat16 and
#      mixed_float16 (dynamic loss scaling); the others in mixed_bfloat16 and TF32; a bfloat16
#      8192^3 matmul as the measured peak;
#   3. the PyTorch peers at the same batch shapes (peer_torch.py: nn.Transformer with AMP bfloat16 and
#      torch.compile; a GNMT-size cuDNN LSTM encoder-decoder);
#   4. the tables (gpu_tables.py).
# Parts run in priority order; one that would pass the suite's deadline is skipped and says so.
# Everything lands in $OUT (else benchmarks/gpu_out): gpu_suite.log, gpu_suite.jsonl, gpu_tables.md.
# Wheels the machine lacks (keras, keras-hub, ...) are installed from .whl/ when it is there.
#
#   bash benchmarks/gpu_suite.sh            # the GPU run
#   DRY_RUN=1 bash benchmarks/gpu_suite.sh  # tiny cards and shapes, TensorFlow blocked (a CPU check)
#   SUITE_CARDS="transformer gnmt" ...       # only these cards (and their peers)
#
# Before a GPU run, fetch the wheels the machine lacks into .whl/ (ignored by git; carry it):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl keras==3.15.1 namex optree keras-hub==0.32.0 regex kagglehub==1.0.2 kagglesdk==0.1.28
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/gpu_out}"
mkdir -p "$out"
log="$out/gpu_suite.log"
json="$out/gpu_suite.jsonl"
: >"$json"
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
deadline=$((SECONDS + ${SUITE_SECONDS:-450}))
dry="${DRY_RUN:-}"
# python with `import tensorflow` blocked, as on the GPU machine
runpy="python3 tests/no_tensorflow.py"

part() {  # part NAME LIMIT_SECONDS COMMAND...
  local name=$1 limit=$2 left
  shift 2
  # a dry run compiles on a CPU that may be shared: its parts get three times the GPU's budget (the
  # suite's deadline still bounds them)
  [ -n "$dry" ] && limit=$((limit * 3))
  left=$((deadline - SECONDS))
  if ((left < 15)); then
    echo "== $name: skipped (the suite's deadline is reached)"
    return
  fi
  ((limit > left)) && limit=$left
  echo "== $name (at most ${limit} s)"
  local start=$SECONDS
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "== $name: TIMED OUT after $limit s"
  ((rc != 0 && rc != 124 && rc != 137)) && echo "== $name: exit status $rc"
  echo "== $name: $((SECONDS - start)) s"
}

wanted() { [ -z "${SUITE_CARDS:-}" ] || [[ " $SUITE_CARDS " == *" $1 "* ]]; }

bench() {  # bench CARD LIMIT PRECISIONS...
  local card=$1 limit=$2
  shift 2
  wanted "$card" || return 0
  if [ -n "$dry" ]; then
    part "$card" "$limit" $runpy benchmarks/bench_gpu.py --card "${card}_demo" --batch 4 --steps 2 \
      --warmup 1 --length 8 --seconds 0.5 --tts-seconds 0.5 --characters 8 --precisions "$@" --json "$json"
  else
    part "$card" "$limit" $runpy benchmarks/bench_gpu.py --card "$card" --steps 10 --warmup 2 \
      --length 64 --seconds 3 --precisions "$@" --json "$json" ${MATMUL:+--matmul $MATMUL}
  fi
  MATMUL=
}

peer() {  # peer MODEL LIMIT
  wanted "$1" || return 0
  if ! python3 -c "import torch" 2>/dev/null; then
    echo "== pytorch $1: skipped (no torch here)"
    return 0
  fi
  if [ -n "$dry" ]; then
    part "pytorch $1" "$2" python3 benchmarks/peer_torch.py --model "$1" --small --batch 4 --length 8 \
      --vocab 100 --steps 2 --warmup 1 --json "$json"
  else
    part "pytorch $1" "$2" python3 benchmarks/peer_torch.py --model "$1" --batch 128 --length 64 \
      --steps 20 --warmup 3 --json "$json"
  fi
}

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader || echo "no nvidia-smi"
  $runpy -c "import jax, keras; print('jax', jax.__version__, jax.devices(), 'keras', keras.__version__)"
  python3 -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" || echo "no torch"
  MATMUL=$([ -n "$dry" ] && echo 256 || echo 8192)
  bench transformer 110 mixed_bfloat16 mixed_float16 tf32 float32
  peer transformer 70
  bench gnmt 110 mixed_bfloat16 mixed_float16 tf32 float32
  peer gnmt 45
  bench convs2s 70 mixed_bfloat16 tf32
  bench jasper 70 mixed_bfloat16 tf32
  bench tacotron2 70 mixed_bfloat16 tf32
  bench deepspeech2 60 mixed_bfloat16 tf32
  bench wave2letter 60 mixed_bfloat16 tf32
  [ -z "$dry" ] && bench transformer_big 60 mixed_bfloat16
  python3 benchmarks/gpu_tables.py "$json" >"$out/gpu_tables.md" && cat "$out/gpu_tables.md"
  echo "suite: $SECONDS s"
} 2>&1 | grep --line-buffered -v -E "^(I|W)0000 |UserWarning|warnings.warn|^\s*$" | tee "$log"
