"""One tiny model of every zoo architecture, and what it computes, for comparing the two backends.

`build(architecture)` makes the tiny model of a demo card; `batch(...)` a
synthetic batch; `outputs(model, ...)` the float32 loss, outputs and decoded ids
on whichever backend this process runs. `tests/test_backend_twin.py` trains each
model a little under TensorFlow, saves its weights, and runs this file as a
script under JAX with TensorFlow blocked:

    KERAS_BACKEND=jax python tests/no_tensorflow.py tests/backend_twin.py DIR

which writes DIR/ARCH.jax.npz from DIR/ARCH.weights.h5 and DIR/ARCH.batch.npz;
then trains each recurrent model one more epoch on JAX and writes its weights
and outputs (DIR/ARCH.jax.weights.h5, DIR/ARCH.jax-trained.npz) for
TensorFlow to load; and decodes with the shipped presets, trained on TensorFlow
(`preset_outputs`, DIR/presets.jax.npz).
"""

from __future__ import annotations

import sys

import keras
import numpy as np

ARCHITECTURES = {  # architecture -> (demo card, tiny overrides)
    "gnmt": ("gnmt_demo", dict(units=16, num_layers=2, vocab_size=40)),
    "transformer": (
        "transformer_demo",
        dict(d_model=16, num_layers=1, num_heads=2, ffn_dim=32, vocab_size=40),
    ),
    "convs2s": (
        "convs2s_demo",
        dict(
            embedding_dim=16,
            channels=[16, 16],
            kernel_sizes=[3, 3],
            out_embedding_dim=16,
            vocab_size=40,
        ),
    ),
    "deepspeech2": (
        "deepspeech2_demo",
        dict(conv_filters=4, num_rnn_layers=1, rnn_units=16, fc_units=16),
    ),
    "wave2letter": (
        "wave2letter_demo",
        dict(
            prologue_channels=16,
            channels=[16, 16],
            kernels=[5, 5],
            dropouts=[0.1, 0.1],
            epilogue_channels=[16, 16],
            epilogue_kernel=5,
        ),
    ),
    "jasper": (
        "jasper_demo",
        dict(
            prologue_channels=16,
            channels=[16, 16],
            kernels=[5, 5],
            dropouts=[0.1, 0.1],
            repeats=1,
            epilogue_channels=[16, 16],
            epilogue_kernel=5,
        ),
    ),
    "quartznet": (
        "quartznet_demo",
        dict(
            prologue_channels=16,
            prologue_kernel=7,
            channels=[16, 16],
            kernels=[5, 7],
            dropouts=[0.1, 0.1],
            repeats=1,
            block_strides=[2, 1],
            epilogue_channels=[16, 16],
            epilogue_kernel=5,
        ),
    ),
    "tacotron2": (
        "tacotron2_demo",
        dict(
            embedding_dim=16,
            encoder_channels=16,
            encoder_units=8,
            attention_units=8,
            location_filters=4,
            location_kernel=5,
            prenet_units=[16, 16],
            attention_lstm_units=16,
            decoder_lstm_units=16,
            postnet_channels=16,
            max_decoder_steps=12,
            dropout=0.0,  # the pre-net's dropout stays on at inference: off, so outputs repeat
        ),
    ),
}
TEXT = ("gnmt", "transformer", "convs2s")
# where the backends' layers differ most (TensorFlow's hoisted recurrence, JAX's Keras loop or scan):
# also trained on JAX and loaded on TensorFlow
RECURRENT = ("gnmt", "deepspeech2", "tacotron2")
# the decodings compared: greedy, beam 3, beam 2 with a coverage penalty (text only)
SEARCH_SETTINGS = {
    "greedy": {},
    "beam": {"beam_width": 3, "length_penalty": 0.6},
    "coverage": {"beam_width": 2, "length_penalty": 0.6, "coverage_penalty": 0.2},
}
SEARCHES = tuple(SEARCH_SETTINGS)


def build(architecture: str, **settings):
    """The tiny float32 model of `architecture` (learning rate high enough to move in a few steps)."""
    from keras_s2s import zoo

    card, overrides = ARCHITECTURES[architecture]
    keras.utils.set_random_seed(0)
    settings = {
        "strategy": "default",
        "precision": "float32",
        "schedule": "constant",
        "learning_rate": 0.003,
        **overrides,
        **settings,
    }
    return zoo.load(card, **settings)


def batch(architecture: str, model, size: int = 4, seed: int = 0):
    """(inputs, labels) of a synthetic batch: text ends with EOS; speech and mel of a few frames."""
    rng = np.random.default_rng(seed)
    if architecture in TEXT:
        ids = rng.integers(4, model.vocab_size, (size, 7)).astype("int32")
        ids[:, -1] = 3  # EOS
        ids[1, 4:] = [3, 0, 0]
        target_in = np.concatenate([np.full((size, 1), 2, "int32"), ids[:, :-1]], axis=1)
        return {"source": ids, "target_in": target_in}, ids
    if architecture == "tacotron2":
        frames = 12
        mel = rng.normal(-4.0, 2.0, (size, frames, model.num_mels)).astype("float32")
        text = rng.integers(1, model.vocabulary.vocab_size, (size, 9)).astype("int32")
        lengths = np.full(size, frames, "int32")
        lengths[1] = 9
        return {"text": text, "mel": mel, "mel_lengths": lengths}, mel
    frames = 48
    inputs = {
        "features": rng.normal(size=(size, frames, model.num_features)).astype("float32"),
        "feature_lengths": np.array([frames, 40, frames, 32][:size], "int32"),
    }
    return inputs, rng.integers(1, model.vocab_size, (size, 6)).astype("int32")


def outputs(architecture: str, model, inputs, labels, searches=SEARCHES) -> dict:
    """Float32 loss and outputs of the model (inference mode), and the ids it decodes with each of
    `searches` (names of `SEARCH_SETTINGS`) where it decodes."""
    result = {
        "loss": np.float32(model.evaluate(inputs, labels, verbose=0, return_dict=True)["loss"])
    }
    predicted = model(inputs, training=False)
    if architecture == "tacotron2":
        result["mel"] = keras.ops.convert_to_numpy(predicted["mel_postnet"])
        result["stop"] = keras.ops.convert_to_numpy(predicted["stop"])
        return result
    result["logits"] = keras.ops.convert_to_numpy(predicted)
    if architecture in TEXT:
        for search in searches:
            settings = SEARCH_SETTINGS[search]
            result[search] = model.generate(inputs["source"], max_length=10, **settings)
        return result
    features, lengths = inputs["features"], inputs["feature_lengths"]
    for search in (search for search in searches if search != "coverage"):
        width = SEARCH_SETTINGS[search].get("beam_width", 1)
        decoded = model.decode(features, lengths, beam_width=width)
        result[search] = np.array(decoded, dtype=object).astype(str)
    return result


def preset_outputs(speech: str) -> dict:
    """Ids and transcripts of the shipped demo presets (GNMT and Jasper, trained on TensorFlow): a few
    demo sentences translated (greedy and beam 3), and the WAV file `speech` transcribed."""
    from keras_s2s import zoo

    sentences = ["the dog sees a cat", "a small bird sings in the old tree", "my friend is here"]
    translator = zoo.load("gnmt_demo", weights="demo")
    recognizer = zoo.load("jasper_demo", weights="demo")
    return {
        "greedy": np.asarray(translator.translate(sentences)),
        "beam": np.asarray(translator.translate(sentences, beam_width=3)),
        "transcript": np.asarray(recognizer.transcribe([speech])),
    }


def main(directory: str) -> None:
    for architecture in ARCHITECTURES:
        model = build(architecture)
        model.load_weights(f"{directory}/{architecture}.weights.h5")
        saved = np.load(f"{directory}/{architecture}.batch.npz")
        inputs = {key[3:]: saved[key] for key in saved.files if key.startswith("in_")}
        np.savez(
            f"{directory}/{architecture}.jax.npz",
            **outputs(architecture, model, inputs, saved["labels"]),
        )
        print(architecture, "done", flush=True)
        if architecture not in RECURRENT:
            continue
        model.fit(inputs, saved["labels"], epochs=1, verbose=0)  # weights only JAX has computed
        model.save_weights(f"{directory}/{architecture}.jax.weights.h5")
        np.savez(
            f"{directory}/{architecture}.jax-trained.npz",
            **outputs(architecture, model, inputs, saved["labels"], searches=()),
        )
    np.savez(f"{directory}/presets.jax.npz", **preset_outputs(f"{directory}/speech.wav"))


if __name__ == "__main__":
    main(sys.argv[1])
