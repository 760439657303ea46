"""SavedModel export: served in a clean process that never imports keras_s2s, same outputs as the Python API."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from tiny import TINY_GNMT

from keras_s2s import zoo
from keras_s2s.audio.features import FeatureExtractor
from keras_s2s.cli import main
from keras_s2s.export import export_saved_model
from keras_s2s.text.characters import CharVocabulary

SERVE = """
import json, sys
import numpy as np, tensorflow as tf, tensorflow_text  # noqa: F401  (registers the SentencePiece ops)
served = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
request = json.loads(sys.stdin.read())
if "text" in request:
    out = served(text=tf.constant(request["text"]))["translation"]
else:
    out = served(audio=tf.constant(np.array(request["audio"], "float32")),
                 audio_lengths=tf.constant(request["lengths"], tf.int32))["text"]
assert not [m for m in sys.modules if m.startswith("keras_s2s")], "keras_s2s was imported"
print(json.dumps([t.decode("utf-8") for t in out.numpy()]))
"""


def serve(path, request: dict) -> list[str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    result = subprocess.run(
        [sys.executable, "-c", SERVE, str(path)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd="/",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "card, sizes",
    [
        ("transformer", {"num_layers": 1, "d_model": 32, "num_heads": 2, "ffn_dim": 64}),
        ("gnmt", {"num_layers": 2, "units": 16}),
    ],
)
def test_a_translation_saved_model_translates_strings_like_the_python_api(
    card, sizes, demo_data, tmp_path, monkeypatch
):
    from keras_s2s.models import seq2seq_lm

    monkeypatch.setattr(seq2seq_lm, "MAX_SOURCE_TOKENS", 16)  # the served graph cuts as translate
    keras.utils.set_random_seed(1)
    # 3 steps of training leave near-ties between beams; past a dozen tokens of its repetitive
    # output the served graph's float sums have once broken one the other way (CI, a loaded CPU)
    model = zoo.load(
        card, tokenizer=demo_data.tokenizer, precision="float32", decode_max_length=12, **sizes
    )
    model.fit(demo_data.train, steps_per_epoch=3, epochs=1, verbose=0)
    export_saved_model(model, tmp_path / "served", beam_width=2)
    sentences = demo_data.test_sources[:5] + [" ".join(demo_data.test_sources[:6])]  # > 16 tokens
    assert serve(tmp_path / "served", {"text": sentences}) == model.translate(
        sentences, beam_width=2
    )
    with pytest.raises(ValueError, match="already exists"):
        export_saved_model(model, tmp_path / "served")


def test_a_speech_saved_model_transcribes_audio_like_the_python_api(tmp_path):
    from keras_s2s.models import Wave2Letter

    keras.utils.set_random_seed(2)
    extractor = FeatureExtractor(num_features=16, num_mels=16, dither=0.0)
    model = Wave2Letter(
        num_features=16,
        prologue_channels=16,
        channels=[16],
        kernels=[5],
        dropouts=[0.0],
        epilogue_channels=[16, 16],
        epilogue_kernel=5,
        vocabulary=CharVocabulary(),
        extractor=extractor,
    )
    model.build()
    export_saved_model(model, tmp_path / "served", beam_width=1)
    rng = np.random.default_rng(0)
    clips = [(0.1 * rng.normal(size=n)).astype("float32") for n in (8000, 5600, 12000)]
    padded = np.zeros((3, 12000), "float32")
    for row, clip in enumerate(clips):
        padded[row, : len(clip)] = clip
    served = serve(
        tmp_path / "served", {"audio": padded.tolist(), "lengths": [len(c) for c in clips]}
    )
    assert served == model.transcribe(clips)


def test_export_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "gnmt", "--steps", "2", "--out", str(out), *TINY_GNMT]) == 0
    assert (
        main(["export", "--model", str(out), "--out", str(tmp_path / "sm"), "--beam-width", "1"])
        == 0
    )
    assert (tmp_path / "sm" / "saved_model.pb").is_file()
    assert (
        main(
            ["export", "--model", str(out), "--format", "keras", "--out", str(tmp_path / "m.keras")]
        )
        == 0
    )
    assert keras.saving.load_model(tmp_path / "m.keras").tokenizer is not None
    assert (
        main(["export", "--model", str(out), "--format", "keras", "--out", str(tmp_path / "m.h5")])
        == 2
    )
    assert "must end with .keras" in capsys.readouterr().err
