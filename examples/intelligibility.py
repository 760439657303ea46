"""How intelligible is a trained synthesizer? Let a speech recognizer listen.

    python examples/intelligibility.py runs/tacotron2_demo --count 30 --seed 7

Speaks new sentences of the demo grammar (seeded; written with digits and
punctuation as demo-tts writes them) with the synthesizer and Griffin-Lim,
transcribes the audio with a recognizer (default: the shipped `jasper_demo`
preset, which learned from eSpeak NG voices, never from this synthesizer)
and prints each pair and the word error rate. The recognizer's own WER on
eSpeak speech is about 0.5%, so the WER here is mostly the synthesizer's.
"""

import argparse
import random
import re

import keras_s2s
from keras_s2s.audio import resample
from keras_s2s.corpora import DemoTTS
from keras_s2s.metrics import error_rates
from keras_s2s.text import normalize_text

parser = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
)
parser.add_argument("run", help="run directory of a trained speech synthesizer")
parser.add_argument(
    "--recognizer", help="run directory of a speech recognizer (default: the jasper_demo preset)"
)
parser.add_argument("--count", type=int, default=30)
parser.add_argument("--seed", type=int, default=7)
args = parser.parse_args()

synthesizer = keras_s2s.load_model(args.run)
recognizer = (
    keras_s2s.load_model(args.recognizer)
    if args.recognizer
    else keras_s2s.zoo.load("jasper_demo", weights="demo", precision="float32")
)
rng = random.Random(args.seed)
texts = [DemoTTS().sentence(rng) for _ in range(args.count)]
audio = [
    resample(samples, synthesizer.extractor.sample_rate, recognizer.extractor.sample_rate)
    for samples in synthesizer.synthesize(texts)
]
hypotheses = recognizer.transcribe(audio)
# what a recognizer can write
references = [re.sub(r"[^a-z' ]", " ", normalize_text(text)) for text in texts]
references = [" ".join(r.split()) for r in references]
for text, hypothesis, reference in zip(texts, hypotheses, references):
    print(f"{'ok ' if hypothesis == reference else '   '} {text}\n    -> {hypothesis}")
rates = error_rates(hypotheses, references)
exact = sum(h == r for h, r in zip(hypotheses, references))
print(
    f"\n{exact}/{len(texts)} sentences recognized exactly; WER {rates['wer']:.2f}%, CER {rates['cer']:.2f}%"
)
