"""Synthesize sentences the model has never heard and transcribe them.

    python examples/transcribe_fresh_speech.py runs/jasper_demo --count 20 --seed 123

Each sentence comes from the demo grammar with a random voice, rate and pitch
(seeded); the script writes the WAV files to a temporary folder, transcribes
them with `keras-s2s`'s Python API and prints each pair and the WER.
"""

import argparse
import random
import tempfile
from pathlib import Path

import keras_s2s
from keras_s2s.audio import resample, write_wav
from keras_s2s.corpora import DemoSpeech, synthesize
from keras_s2s.metrics import error_rates

parser = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
)
parser.add_argument("run", help="run directory of a trained speech recognizer")
parser.add_argument("--count", type=int, default=20)
parser.add_argument("--seed", type=int, default=123)
args = parser.parse_args()

model = keras_s2s.load_model(args.run)
demo, rng = DemoSpeech(), random.Random(args.seed)
texts, paths = [], []
with tempfile.TemporaryDirectory() as folder:
    for i in range(args.count):
        text = demo.sentence(rng)
        samples, rate = synthesize(text, **demo.utterance_settings(rng))
        path = Path(folder) / f"fresh-{i}.wav"
        write_wav(
            path, resample(samples, rate, model.extractor.sample_rate), model.extractor.sample_rate
        )
        texts.append(text)
        paths.append(path)
    hypotheses = model.transcribe(paths)
exact = sum(h == t for h, t in zip(hypotheses, texts))
for text, hypothesis in zip(texts, hypotheses):
    print(f"{'ok ' if hypothesis == text else '   '} {text}\n    -> {hypothesis}")
rates = error_rates(hypotheses, texts)
print(
    f"\n{exact}/{len(texts)} sentences exactly right; WER {rates['wer']:.2f}%, CER {rates['cer']:.2f}%"
)
