"""Train the demo presets shipped in zoo/presets/ and registered in the cards.

    python examples/train_demo_presets.py convs2s_demo   # about 4 minutes on 2 CPU cores
    python examples/train_demo_presets.py jasper_demo    # about 10 minutes on 2 CPU cores
    python examples/train_demo_presets.py gnmt_demo      # about 20 minutes on 2 CPU cores

The same command with the same seed gives the same model up to oneDNN's
non-deterministic float rounding (held-out BLEU / WER within a few points).
Each preset is its demo card at a smaller size, so that the archive stays
small enough for the repository: ConvS2S with 3+3 convolutions x 128 and
1,000 subwords (it aligns fastest of the three translation models on the
demo task), GNMT as its demo card (2+2 LSTM layers of 256 units; a smaller
one aligns several times later) with 1,000 subwords and its weights stored in
float16 (half the bytes; they load into float32), Jasper
with 3 blocks of 96-128 channels. The script packs the
run's preset reproducibly and prints the sha256 and size to put in the cards.
After installing, `zoo.load("convs2s_demo", weights="demo")`,
`zoo.load("gnmt_demo", weights="demo")` (and `"gnmt"`) and
`zoo.load("jasper_demo", weights="demo")` load them offline.
"""

import argparse
import json
import tempfile
from pathlib import Path

from keras_s2s.data import read_splits
from keras_s2s.presets import load_preset, load_preset_directory, pack_preset, save_to_preset
from keras_s2s.tasks.translation import evaluate_translation
from keras_s2s.training import train

EPOCHS_GNMT = 6  # of 300 steps: longer than the card's 4 (alignment comes at a seed-dependent step)

PRESETS = {
    "convs2s_demo": {
        "data": "demo",
        "settings": {
            "embedding_dim": 128,
            "channels": [128, 128, 128],
            "kernel_sizes": [3, 3, 3],
            "out_embedding_dim": 128,
            "vocab_size": 1000,
            "seed": 0,
        },
    },
    "gnmt_demo": {
        "data": "demo",
        "settings": {"vocab_size": 1000, "epochs": EPOCHS_GNMT, "seed": 0},
        "weights_dtype": "float16",
    },
    "jasper_demo": {
        "data": "demo-speech",
        "settings": {
            "prologue_channels": 64,
            "channels": [96, 96, 128],
            "kernels": [11, 13, 15],
            "dropouts": [0.1, 0.1, 0.1],
            "epilogue_channels": [192, 192],
            "epilogue_kernel": 11,
            "epochs": 5,
            "seed": 0,
        },
    },
}
PRESET_FOLDER = Path(__file__).resolve().parents[1] / "zoo" / "presets"


def train_preset(card: str) -> None:
    """Train `card` with its preset settings and pack RUN/preset as PRESET_FOLDER/CARD.tar.gz."""
    target = PRESET_FOLDER / f"{card}.tar.gz"
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / card
        result = train(
            card,
            data=PRESETS[card]["data"],
            out=run,
            overrides=PRESETS[card]["settings"],
            verbose=2,
        )
        metadata_path = run / "preset" / "metadata.json"
        metadata = json.loads(metadata_path.read_text())
        metadata["trained_by"] = f"python examples/train_demo_presets.py {card}"
        metadata_path.write_text(json.dumps(metadata, indent=2))
        # the same preset, smaller weights
        if PRESETS[card].get("weights_dtype", "float32") != "float32":
            metadata.pop("weights_dtype", None)
            save_to_preset(
                load_preset_directory(run / "preset"),
                run / card,
                metadata,
                weights_dtype=PRESETS[card]["weights_dtype"],
            )
        else:
            (run / "preset").rename(run / card)
        target.parent.mkdir(parents=True, exist_ok=True)
        sha256 = pack_preset(run / card, target)
        # what the stored weights score
        if PRESETS[card].get("weights_dtype", "float32") != "float32":
            _, _, test, _ = read_splits(
                PRESETS[card]["data"],
                **{
                    key: metadata["card"]["data"][key]
                    for key in ("num_train", "num_valid", "num_test", "seed")
                },
            )
            stored = evaluate_translation(load_preset(str(target), sha256=sha256), test)
            print(
                f"the packed {PRESETS[card]['weights_dtype']} weights: held-out BLEU {stored['bleu']} "
                f"(float32 weights: {result['bleu']})"
            )
    metrics = {key: value for key, value in result.items() if key in ("bleu", "wer", "cer")}
    print(f"{metrics}; wrote {target} ({target.stat().st_size} bytes)\nsha256: {sha256}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cards", nargs="+", choices=sorted(PRESETS))
    for name in parser.parse_args().cards:
        train_preset(name)
