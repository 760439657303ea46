"""Writes the tutorial notebooks in this folder (stored without outputs): python examples/make_notebooks.py"""

import hashlib
from pathlib import Path

import nbformat as nbf


def notebook(cells):
    nb = nbf.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbf.v4.new_markdown_cell(c[3:]) if c.startswith("md:") else nbf.v4.new_code_cell(c)
        for c in cells
    ]
    for cell in nb.cells:  # ids from the text: a rewrite changes only the cells that changed
        cell.id = hashlib.sha256(cell.source.encode()).hexdigest()[:8]
    return nb


translation = notebook(
    [
        """md:# Translation with keras-s2s: train, evaluate, beam search, attention

This notebook trains a small GNMT on the built-in demo task (a generated language pair, nothing to
download), scores it with sacreBLEU, compares greedy decoding with beam search, and plots where the
model attends. It runs in a few minutes on a CPU; the settings are small on purpose — the
`gnmt_demo` card trains for ten minutes and reaches BLEU 87 (see `docs/demo_task.md`).""",
        """import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

import keras_s2s
from keras_s2s.metrics import score

keras.utils.set_random_seed(0)""",
        """md:## Data

`load_parallel_data` generates the demo corpus, learns a SentencePiece vocabulary and builds bucketed
`tf.data` pipelines; a `Batching` plan says how (batch size, shuffling, repetition, padding, seed).
Any `tf.data.Dataset` of `({"source", "target_in"}, target)` batches works with `fit`.""",
        """data = keras_s2s.data.load_parallel_data("demo", num_train=3000, num_valid=64, num_test=24,
                                         vocab_size=800, max_length=48,
                                         batching=keras_s2s.data.Batching(batch_size=64))
print(data.tokenizer.vocab_size, "subwords;", data.test_sources[0], "->", data.test_targets[0])""",
        """md:## Model and training

`zoo.load` reads the model card, applies overrides and returns a compiled Keras model.""",
        """model = keras_s2s.zoo.load("gnmt_demo", tokenizer=data.tokenizer, units=96, precision="float32",
                           learning_rate=0.005, warmup_steps=50)
history = model.fit(data.train, validation_data=data.valid, epochs=2, steps_per_epoch=40, verbose=2)""",
        """md:## Evaluation: greedy vs beam search""",
        """sources, references = data.test_sources, data.test_targets
for width in (1, 4):
    hypotheses = model.translate(sources, beam_width=width)
    print(f"beam width {width}:", score(hypotheses, references))
print(sources[0], "->", model.translate(sources[:1], beam_width=4)[0])""",
        """md:## Where does the model look?

Every translation model's decoder state carries the attention of the last step over the source
(`state["attention"]`). Stepping the decoder over its own greedy output collects the alignment.""",
        """source_text = sources[0]
source = np.array([data.tokenizer.tokenize([source_text])[0] + [3]], "int32")
output = model.generate(source, max_length=30)
encoded = model.encode(tf.constant(source))
state = model.initial_decoder_state(encoded, tf.constant(output.shape[1]))
rows, token = [], tf.constant([2])
for t in range(output.shape[1]):
    _, state = model.decode_step(token, state, encoded)
    rows.append(state["attention"].numpy()[0])
    token = tf.constant(output[:, t])
    if output[0, t] == 3:
        break
pieces = lambda ids: [data.tokenizer._processor.id_to_piece(int(i)) for i in ids]
plt.figure(figsize=(6, 4))
plt.imshow(np.array(rows), cmap="viridis", aspect="auto")
plt.xticks(range(source.shape[1]), pieces(source[0]), rotation=90)
plt.yticks(range(len(rows)), pieces(output[0, :len(rows)]))
plt.xlabel("source"); plt.ylabel("output"); plt.title("attention")
plt.tight_layout(); plt.show()""",
        """md:## The same with a Transformer

The decoding code is shared: the Transformer's key/value cache and ConvS2S's convolution buffers plug
into the same greedy and beam search.""",
        """transformer = keras_s2s.zoo.load("transformer_demo", tokenizer=data.tokenizer, num_layers=2, d_model=64,
                                 num_heads=4, ffn_dim=128, precision="float32", warmup_steps=50)
transformer.fit(data.train, epochs=1, steps_per_epoch=30, verbose=2)
print(score(transformer.translate(sources, beam_width=4), references))""",
    ]
)

precision = notebook(
    [
        """md:# Mixed precision and distribution

How keras-s2s picks a precision, keeps float32 master weights, scales the loss under float16, and
trains data-parallel with `tf.distribute`. The distribution part uses two *logical* CPU devices, so it
runs anywhere; on a GPU machine pass the GPU names instead.""",
        """import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]  # two logical devices, before TensorFlow starts
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras
import numpy as np
import keras_s2s
from keras_s2s import precision
from keras_s2s.optimizers import build_optimizer""",
        """md:## Choosing a precision

`precision: auto` picks mixed_float16 on NVIDIA GPUs with compute capability >= 7.0, mixed_bfloat16
on CPUs with AVX512-BF16 or AMX, else float32.""",
        """print("this machine:", precision.resolve_precision("auto"))
print("a V100 machine:", precision.choose_precision([(7, 0)], set()))
print("an old CPU:", precision.choose_precision([], {"avx2"}))""",
        """md:## Master weights stay float32

Under a mixed policy, layers compute in 16 bits but their variables, the logits, the attention softmax
and the loss stay float32.""",
        """data = keras_s2s.data.load_parallel_data("demo", num_train=2000, num_valid=32, num_test=16,
                                         vocab_size=500, max_length=40,
                                         batching=keras_s2s.data.Batching(batch_size=32))
model = keras_s2s.zoo.load("transformer_demo", tokenizer=data.tokenizer, num_layers=1, d_model=32,
                           num_heads=2, ffn_dim=64, precision="mixed_bfloat16")
inputs, labels = next(iter(data.train))
print("compute dtype:", model.compute_dtype, "| variable dtypes:", {w.dtype for w in model.weights})
print("logits:", model(inputs).dtype)""",
        """md:## Loss scaling under float16

With mixed_float16 the optimizer is a `LossScaleOptimizer`: the loss is multiplied by a scale before
the backward pass; a step whose gradients overflow changes no weight and halves the scale.""",
        """keras.mixed_precision.set_global_policy("float32")
variable = keras.Variable(np.ones(3, "float32"))
optimizer = build_optimizer({"optimizer": "sgd", "learning_rate": 0.1,
                             "loss_scale": {"initial_scale": 1024, "growth_interval": 2000}}, "mixed_float16")
optimizer.build([variable])
print(type(optimizer).__name__, "scale", float(optimizer.dynamic_scale))
optimizer.apply([tf.constant([np.inf, 1.0, 1.0])], [variable])   # an overflowing step
print("after overflow: weights", variable.numpy(), "scale", float(optimizer.dynamic_scale))
optimizer.apply([tf.constant([1.0, 1.0, 1.0])], [variable])      # a good step
print("after a good step: weights", variable.numpy())""",
        """md:## Data-parallel training

`get_strategy("mirrored", devices=...)` returns a `MirroredStrategy`; `zoo.load(..., strategy=...)`
builds and compiles inside its scope; the card's batch size is the global batch.""",
        """devices = [d.name for d in tf.config.list_logical_devices("CPU")]
strategy = keras_s2s.distribution.get_strategy("mirrored", devices=devices)
print(strategy.num_replicas_in_sync, "replicas on", devices)
plan = keras_s2s.data.Batching(batch_size=32, repeat=True, drop_remainder=True)
data = keras_s2s.data.load_parallel_data("demo", num_train=2000, num_valid=32, num_test=16, vocab_size=500,
                                         max_length=40, batching=plan)
model = keras_s2s.zoo.load("gnmt_demo", tokenizer=data.tokenizer, units=32, precision="float32",
                           strategy=strategy)
history = model.fit(data.train, epochs=1, steps_per_epoch=10, verbose=2)""",
        """md:## Hybrid data-model parallel (GNMT)

`strategy="hybrid"` (Ono et al. 2019) puts LSTM layer i of the encoder and of the decoder on device
i mod N (model parallel) and runs attention, the output projection and the loss on one batch shard per
device (data parallel); gradients are computed where their forward ops ran. `time_chunks` splits each
sequence so that the next layer can start on the first piece while this one works on the second.""",
        """from keras_s2s.distribution import HybridParallel

hybrid = HybridParallel(devices, time_chunks=2)
model = keras_s2s.zoo.load("gnmt_demo", tokenizer=data.tokenizer, units=32, precision="float32", strategy=hybrid)
print(model.placement.describe())
print("decoder layer 1 weights on", model.decoder_layers[1].cell.kernel.value.device)
history = model.fit(data.train, epochs=1, steps_per_epoch=10, verbose=2)""",
        """md:On GPUs, hybrid pays when the LSTMs are latency-bound (small per-device batches): see
`python benchmarks/cost_model.py` and `docs/performance.md` for when to use which strategy.""",
    ]
)

speech = notebook(
    [
        """md:# Speech recognition: features, a Jasper model, CTC decoding

Synthesizes a small English corpus with eSpeak NG (offline, from pip), looks at its features,
trains a small Jasper with CTC and transcribes held-out sentences. Needs the audio extra
(`pip install ".[audio]"`).""",
        """import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

import keras_s2s
from keras_s2s.audio import read_audio
from keras_s2s.data import Batching, load_speech_data
from keras_s2s.metrics import error_rates

keras.utils.set_random_seed(0)""",
        """data = load_speech_data("demo-speech", num_train=400, num_valid=16, num_test=16,
                        features={"kind": "logmel", "num_features": 64}, batching=Batching(batch_size=16))
utterance = data.train_utterances[0]
samples = read_audio(utterance.path)
features = data.extractor(tf.constant(samples)).numpy()
print(utterance.transcript, f"({len(samples) / 16000:.1f} s, {features.shape[0]} frames)")
plt.figure(figsize=(8, 3))
plt.imshow(features.T, origin="lower", aspect="auto", cmap="magma")
plt.xlabel("frame (10 ms)"); plt.ylabel("mel band"); plt.title("normalized log-mel features")
plt.tight_layout(); plt.show()""",
        """model = keras_s2s.zoo.load("jasper_demo", vocabulary=data.vocabulary, extractor=data.extractor,
                           channels=[96, 96, 128], kernels=[11, 13, 15], dropouts=[0.1, 0.1, 0.1],
                           prologue_channels=96, epilogue_channels=[128, 128], precision="float32")
history = model.fit(data.train, validation_data=data.valid, epochs=2, steps_per_epoch=25, verbose=2)""",
        """references = [u.transcript for u in data.test_utterances]
hypotheses = model.transcribe([u.path for u in data.test_utterances], beam_width=4)
for ref, hyp in list(zip(references, hypotheses))[:3]:
    print(f"{ref}\\n  -> {hyp}")
print(error_rates(hypotheses, references))""",
        """md:With the `jasper_demo` card (`keras-s2s train jasper_demo --data demo-speech`, 6,000 utterances,
about 12 minutes on 2 CPU cores) the held-out WER is below 1%; see `docs/speech.md`.""",
    ]
)

synthesis = notebook(
    [
        """md:# Speech synthesis: text normalization, mel targets, Tacotron 2, alignment, Griffin-Lim

Synthesizes a one-voice English corpus with eSpeak NG (offline, from pip), turns it into mel-spectrogram
targets, trains a small Tacotron 2 for a minute, looks at its attention alignment and turns its output
into audio with Griffin-Lim. Needs the audio extra (`pip install ".[audio]"`). A minute of training only
starts the alignment; the `tacotron2_demo` card trains for about 20 minutes (see `docs/speech_synthesis.md`).""",
        """import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Audio

import keras_s2s
from keras_s2s.text import normalize_text
from keras_s2s.data import Batching, load_tts_data
from keras_s2s.decoding import GriffinLim

keras.utils.set_random_seed(0)""",
        """md:## Text normalization

The model reads characters, so numbers, abbreviations and symbols are spelled out first.""",
        """for text in ["Dr. Smith paid $3.50 for 2 apples.", "On May 1st, 1999 at 10:30, 45% said \\u201cyes\\u201d."]:
    print(f"{text}\\n  -> {normalize_text(text)}")""",
        """md:## Data: characters in, 80-band log-mel frames out

`load_tts_data` reads an LJSpeech-layout folder or a manifest (here the generated `demo-tts` corpus),
normalizes the text and computes the mel targets once (cached after the first epoch).""",
        """data = load_tts_data("demo-tts", num_train=160, num_valid=8, num_test=8, reduction_factor=3,
                     tail_steps=4, batching=Batching(batch_size=16, pad_to_multiple=1))
inputs, mel = next(iter(data.train))
print({name: tuple(value.shape) for name, value in inputs.items()})
plt.figure(figsize=(8, 3))
plt.imshow(mel[0, :inputs["mel_lengths"][0]].numpy().T, origin="lower", aspect="auto", cmap="magma")
plt.xlabel("frame (12.5 ms)"); plt.ylabel("mel band"); plt.title(data.vocabulary.decode(inputs["text"][0].numpy()))
plt.tight_layout(); plt.show()""",
        """md:## A small Tacotron 2, trained with teacher forcing

`fit` feeds the true previous frames; the loss adds mel MSE before and after the post-net, the stop
token and the guided-attention term that pulls attention toward the diagonal.""",
        """model = keras_s2s.zoo.load("tacotron2_demo", vocabulary=data.vocabulary, extractor=data.extractor,
                           embedding_dim=64, encoder_channels=64, encoder_units=32, attention_lstm_units=128,
                           decoder_lstm_units=128, postnet_channels=64, prenet_units=[64, 64],
                           learning_rate=0.003, warmup_steps=10, precision="float32")  # faster than bf16 on CPUs
history = model.fit(data.train, epochs=2, steps_per_epoch=15, verbose=2)""",
        """md:## Alignment

Each decoder step (x) attends to input characters (y). A trained model draws a clean diagonal
line; after a minute of training the diagonal is only beginning to form.""",
        """outputs = model(inputs, training=False)
plt.figure(figsize=(8, 3))
plt.imshow(outputs["alignment"][0].numpy().T, origin="lower", aspect="auto", vmin=0, vmax=1)
plt.xlabel("decoder step"); plt.ylabel("character"); plt.title("teacher-forced alignment")
plt.colorbar(); plt.tight_layout(); plt.show()""",
        """md:## Free-running synthesis and Griffin-Lim

`infer` runs the decoder on its own output until the stop token fires (or the step limit);
`GriffinLim` inverts the mel filterbank and recovers a phase. Any callable vocoder can replace it.""",
        """result = model.infer(["The 2 red dogs see a cat."], max_decoder_steps=200)[0]
print(f"{len(result['mel'])} frames, stopped by the stop token: {result['stopped']}")
vocoder = GriffinLim(data.extractor, iterations=30)
Audio(vocoder(result["mel"]), rate=vocoder.sample_rate)""",
        """md:From the command line, the same in full: `keras-s2s train tacotron2_demo --data demo-tts`, then
`keras-s2s synthesize --model runs/tacotron2_demo "The 2 red dogs see a cat." -o dogs.wav --plot`.""",
    ]
)

for name, nb in (
    ("translation", translation),
    ("mixed_precision_and_distribution", precision),
    ("speech_recognition", speech),
    ("speech_synthesis", synthesis),
):
    nbf.write(nb, Path(__file__).resolve().parent / f"{name}.ipynb")
print("written")
