"""Train the demo presets shipped in keras_s2s/zoo/presets/ and registered in the cards.

    python examples/train_demo_presets.py            # about 6 minutes on 2 CPU cores

The same command with the same seed gives the same model up to oneDNN's
non-deterministic float rounding (held-out BLEU within a few points). It
trains `gnmt_demo` at a small size (2+2 LSTM x 128, 1,000 subwords) so that
the preset stays small enough for the repository, packs the run's preset
reproducibly and prints the sha256 and size to put in the card.
After installing, `zoo.load("gnmt_demo", weights="demo")` loads it offline.
"""

import json
import tempfile
from pathlib import Path

from keras_s2s.presets import pack_preset
from keras_s2s.training.runner import train

SETTINGS = {"units": 128, "vocab_size": 1000, "seed": 0}
target = Path(__file__).resolve().parents[1] / "keras_s2s" / "zoo" / "presets" / "gnmt_demo.tar.gz"

with tempfile.TemporaryDirectory() as folder:
    run = Path(folder) / "gnmt_demo"
    result = train("gnmt_demo", data="demo", out=run, overrides=SETTINGS, verbose=2)
    metadata_path = run / "preset" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["trained_by"] = "python examples/train_demo_presets.py"
    metadata_path.write_text(json.dumps(metadata, indent=2))
    (run / "preset").rename(run / "gnmt_demo")
    target.parent.mkdir(parents=True, exist_ok=True)
    sha256 = pack_preset(run / "gnmt_demo", target)
print(f"BLEU {result['bleu']}; wrote {target} ({target.stat().st_size} bytes)\nsha256: {sha256}")
