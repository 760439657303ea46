#!/usr/bin/env bash
# A real corpus trained on the accelerator machine (JAX, no TensorFlow) through the CLI, in minutes:
#   1. `keras-s2s train CARD --data CORPUS --time-limit LIMIT` (mixed_bfloat16 where the GPU has it:
#      `precision: auto`), validation every epoch, the best checkpoint kept;
#   2. `keras-s2s evaluate --beam-width 4` on the corpus's test split;
#   3. what comes back under $OUT (at most 8 files): gpu_translation.log, card.yaml, fit.json,
#      history.json, eval.json (greedy), eval-beam4.json and dev_bleu.png (the dev-BLEU curve).
# The weights stay there: a Transformer base is about 90 MB in float16, over what comes back.
#
# The corpus travels encoded (token ids, `keras-s2s encode`), in an ignored folder that is carried:
#   python examples/debian_gettext_corpus.py --out corpus_de         # here, once (see its --help)
#   keras-s2s encode --data corpus_de --out .gpu_corpus/de           # 48 MB of text -> 12 MiB
#   echo /.gpu_corpus/ >> .git/info/exclude
# and the wheels the machine lacks into .whl/ (benchmarks/gpu_suite.sh's header). Then, on the
# GPU, with carry [".whl", ".gpu_corpus"]:
#   OUT=$OUT bash benchmarks/gpu_translation.sh
#   CARD=transformer_big TIME_LIMIT=7m SETTINGS="warmup_steps=800" bash benchmarks/gpu_translation.sh
#   DRY_RUN=1 CORPUS=DIR bash benchmarks/gpu_translation.sh   # a tiny model for a few steps, here
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-benchmarks/gpu_out}"
mkdir -p "$out"
log="$out/gpu_translation.log"
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
corpus="${CORPUS:-.gpu_corpus/de}"
card="${CARD:-transformer}"
run="${RUN_DIR:-/tmp/gpu_translation_run}"
# python with `import tensorflow` blocked, as on the GPU machine
s2s="python3 tests/no_tensorflow.py -m keras_s2s.cli"
if [ -n "${DRY_RUN:-}" ]; then
  limit="${TIME_LIMIT:-20s}"
  settings="num_layers=1 d_model=32 num_heads=2 ffn_dim=64 batch_tokens=256 steps_per_epoch=3
    warmup_steps=2 num_valid=8 decode_max_length=16 ${SETTINGS:-}"
  train_seconds=240
  beam=2
else
  limit="${TIME_LIMIT:-7m}"
  # about 12k tokens a batch, a dev-BLEU point every 400 steps, warmup sized to a few thousand steps;
  # buckets 16 tokens wide: 6 batch shapes, so 6 compiled training steps (8 wide: 12, minutes of
  # compiling in a 7-minute budget; the log says how many)
  settings="batch_tokens=12288 bucket_width=16 steps_per_epoch=400 warmup_steps=800 num_valid=300
    ${SETTINGS:-}"
  train_seconds=660
  beam=4
fi
set_flags=()
for setting in $settings; do set_flags+=(--set "$setting"); done

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
  if [ ! -f "$corpus/encoded.json" ]; then
    echo "no encoded corpus at $corpus: keras-s2s encode --data CORPUS --out $corpus (see the header)"
    exit 2
  fi
  head -c 400 "$corpus/encoded.json"; echo
  rm -rf "$run"
  echo "== train $card on $corpus for $limit"
  start=$SECONDS
  timeout --kill-after=10 "$train_seconds" $s2s train "$card" --data "$corpus" --out "$run" \
    --time-limit "$limit" "${set_flags[@]}"
  echo "== train: exit status $?, $((SECONDS - start)) s"
  start=$SECONDS
  timeout --kill-after=10 300 $s2s evaluate --model "$run" --beam-width "$beam"
  echo "== evaluate (beam $beam): exit status $?, $((SECONDS - start)) s"
  # eval.json: greedy, written by train; eval-beamK.json by evaluate
  for name in card.yaml fit.json history.json eval.json "eval-beam$beam.json"; do
    [ -f "$run/$name" ] && cp "$run/$name" "$out/$name"
  done
  python3 tests/no_tensorflow.py examples/plot_runs.py "$card=$run" --out "$out/dev_bleu.png" \
    --title "$card on $(basename "$corpus"), $limit on the GPU"
  python3 - "$run" <<'EOF'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
fit = json.loads((run / "fit.json").read_text()) if (run / "fit.json").is_file() else {}
print("fit:", json.dumps(fit))
weights = sum(p.stat().st_size for p in run.glob("model.keras"))
print(f"weights: model.keras {weights / 2**20:.1f} MiB (float32; half that in float16)")
EOF
  echo "gpu_translation: $SECONDS s"
} 2>&1 | grep --line-buffered -v -E "^(I|W|E)0000 |UserWarning|warnings.warn|Unable to initialize backend|^\s*$" | tee "$log"
