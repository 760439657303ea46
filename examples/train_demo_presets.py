"""Train the demo preset shipped in keras_s2s/zoo/presets/ and registered in the convs2s cards.

    python examples/train_demo_presets.py            # about 4 minutes on 2 CPU cores

The same command with the same seed gives the same model up to oneDNN's
non-deterministic float rounding (held-out BLEU within a few points). It
trains `convs2s_demo` at a small size (3+3 convolutions x 128, 1,000
subwords; ConvS2S aligns fastest of the three on the demo task) so that the
preset stays small enough for the repository, packs the run's preset
reproducibly and prints the sha256 and size to put in the cards.
After installing, `zoo.load("convs2s_demo", weights="demo")` loads it offline.
"""

import json
import tempfile
from pathlib import Path

from keras_s2s.presets import pack_preset
from keras_s2s.training.runner import train

SETTINGS = {"embedding_dim": 128, "channels": [128, 128, 128], "kernel_sizes": [3, 3, 3], "out_embedding_dim": 128,
            "vocab_size": 1000, "seed": 0}
target = Path(__file__).resolve().parents[1] / "keras_s2s" / "zoo" / "presets" / "convs2s_demo.tar.gz"

with tempfile.TemporaryDirectory() as folder:
    run = Path(folder) / "convs2s_demo"
    result = train("convs2s_demo", data="demo", out=run, overrides=SETTINGS, verbose=2)
    metadata_path = run / "preset" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    metadata["trained_by"] = "python examples/train_demo_presets.py"
    metadata_path.write_text(json.dumps(metadata, indent=2))
    (run / "preset").rename(run / "convs2s_demo")
    target.parent.mkdir(parents=True, exist_ok=True)
    sha256 = pack_preset(run / "convs2s_demo", target)
print(f"BLEU {result['bleu']}; wrote {target} ({target.stat().st_size} bytes)\nsha256: {sha256}")
