"""JAX against TensorFlow on this machine, in one interleaved run: every demo card, float32 and bfloat16.

Two worker processes, one per Keras backend (TensorFlow blocked in the JAX
one, as on the GPU machine), build the same card at its own batch size on the
same synthetic batch, each as a user gets it (TensorFlow with the card's CPU
settings, JAX compiled). The parent asks them in turn (TensorFlow, JAX,
TensorFlow, JAX, ...) to time `--steps` training steps, `--repeats` times, so
the machine's drift falls on both alike. Printed per card and precision:
s/step on each backend (each step timed by a callback, JAX waiting for it;
the median of every repeat's median), JAX / TensorFlow, and the compile time
of each (the warm-up call less its steps).

    python benchmarks/bench_backends.py                         # every demo card, both precisions
    python benchmarks/bench_backends.py --cards gnmt_demo --precisions float32 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BACKENDS = ("tensorflow", "jax")
PRECISIONS = ("float32", "mixed_bfloat16")


# --- the worker: one backend, commands on stdin, one JSON line per answer on stdout -------------


class Worker:
    """Builds a card and times its training steps, on the backend this process runs."""

    def __init__(self, args):
        self.args, self.model, self.inputs = args, None, None

    def build(self, card: str, precision: str, warmup: int) -> dict:
        import keras
        import numpy as np
        from synthetic import synthetic_batch

        from keras_s2s import zoo

        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        overrides = dict(precision=precision, strategy="default")
        card_obj = zoo.get_card(card, **overrides)
        self.batch = int(card_obj.data["batch_size"])
        start = time.perf_counter()
        self.model = zoo.load(card, **overrides)
        build = time.perf_counter() - start
        rng = np.random.default_rng(0)
        inputs, labels, _, self.units, self.unit = synthetic_batch(
            card_obj.architecture, self.model, self.batch, self.args, rng
        )
        copies = max(warmup, self.args.steps) + 1  # fit slices one batch per step, as from a corpus
        self.x = {key: np.concatenate([value] * copies) for key, value in inputs.items()}
        self.y = np.concatenate([labels] * copies)
        start = time.perf_counter()
        step = self.run(warmup)
        warm = time.perf_counter() - start - step * (warmup + 1)  # compiling and fit's start-up
        return {"build_seconds": build, "compile_seconds": max(warm, 0.0), "units": self.units,
                "unit": self.unit, "batch": self.batch}  # fmt: skip

    def run(self, steps: int) -> float:
        """Seconds per step: the median of `steps` steps, each timed by a callback (the first one, which
        starts fit's iterator, and fit's own start-up are left out; JAX waits for each step)."""
        import keras

        jax = keras.backend.backend() == "jax"
        times = []

        class StepTimer(keras.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                self.start = time.perf_counter()

            def on_train_batch_end(self, batch, logs=None):
                if jax:
                    import jax as jax_module

                    jax_module.block_until_ready([v.value for v in self.model.trainable_variables])
                times.append(time.perf_counter() - self.start)

        self.model.fit(self.x, self.y, batch_size=self.batch, steps_per_epoch=steps + 1, epochs=1,
                       shuffle=False, verbose=0, callbacks=[StepTimer()])  # fmt: skip
        return statistics.median(times[1:])


def worker_main(args) -> None:
    sys.path.insert(0, str(HERE))
    worker = Worker(args)
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "build":
            answer = worker.build(command["card"], command["precision"], command["warmup"])
        else:
            answer = {"seconds": worker.run(command["steps"])}
        print(json.dumps(answer), flush=True)


# --- the parent: two workers, timed in turn ------------------------------------------------------


def start_worker(backend: str, args) -> subprocess.Popen:
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    blocker = [str(ROOT / "tests" / "no_tensorflow.py")] if backend == "jax" else []
    script = [str(Path(__file__).resolve()), "--worker", "--steps", str(args.steps)]
    return subprocess.Popen([sys.executable, *blocker, *script], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip


def ask(worker: subprocess.Popen, **command) -> dict:
    worker.stdin.write(json.dumps(command) + "\n")
    worker.stdin.flush()
    line = worker.stdout.readline()
    if not line:
        raise RuntimeError(f"a benchmark worker stopped while asked {command}")
    return json.loads(line)


def compare(card: str, precision: str, workers: dict, args) -> dict:
    """One card at one precision on both backends, timed interleaved."""
    built = {b: ask(w, do="build", card=card, precision=precision, warmup=args.warmup)
             for b, w in workers.items()}  # fmt: skip
    times = {backend: [] for backend in workers}
    for _ in range(args.repeats):
        for backend, worker in workers.items():  # A/B/A/B
            times[backend].append(ask(worker, do="time", steps=args.steps)["seconds"])
    row = {"card": card, "precision": precision, "batch": built["jax"]["batch"]}
    for backend in workers:
        step = statistics.median(times[backend])
        row[backend] = {
            "seconds_per_step": step,
            "units_per_second": built[backend]["units"] / step,
            "compile_seconds": built[backend]["compile_seconds"],
            "build_seconds": built[backend]["build_seconds"],
        }
    row["unit"] = built["jax"]["unit"]
    row["jax_over_tensorflow"] = (
        row["jax"]["seconds_per_step"] / row["tensorflow"]["seconds_per_step"]
    )
    return row


def print_table(rows: list[dict]) -> None:
    print(
        "\n| card | precision | TF s/step | JAX s/step | JAX / TF | TF compile s | JAX compile s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        tf_, jax_ = r["tensorflow"], r["jax"]
        print(f"| {r['card']} | {r['precision']} | {tf_['seconds_per_step']:.3f} | "
              f"{jax_['seconds_per_step']:.3f} | {r['jax_over_tensorflow']:.2f}x | "
              f"{tf_['compile_seconds']:.1f} | {jax_['compile_seconds']:.1f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cards = ["gnmt_demo", "transformer_demo", "convs2s_demo", "deepspeech2_demo",
             "wave2letter_demo", "jasper_demo", "tacotron2_demo"]  # fmt: skip
    parser.add_argument("--cards", nargs="+", default=cards)
    parser.add_argument("--precisions", nargs="+", default=list(PRECISIONS), choices=PRECISIONS)
    parser.add_argument("--steps", type=int, default=4, help="timed steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="steps before timing (compiles)")
    parser.add_argument("--length", type=int, default=24, help="tokens per sentence (text)")
    parser.add_argument("--seconds", type=float, default=3.0, help="audio per utterance (ASR)")
    parser.add_argument("--tts-seconds", type=float, default=2.0, help="audio per utterance (TTS)")
    parser.add_argument("--characters", type=int, default=40, help="characters per sentence (TTS)")
    parser.add_argument("--json", help="also write the rows to this JSON file (after every card)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_main(args)
    workers = {backend: start_worker(backend, args) for backend in BACKENDS}
    rows = []
    try:
        for card in args.cards:
            for precision in args.precisions:
                rows.append(compare(card, precision, workers, args))
                r = rows[-1]
                print(f"{card} {precision}: TF {r['tensorflow']['seconds_per_step']:.3f} s/step, "
                      f"JAX {r['jax']['seconds_per_step']:.3f} s/step "
                      f"({r['jax_over_tensorflow']:.2f}x)", flush=True)  # fmt: skip
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait(timeout=60)
    print_table(rows)


if __name__ == "__main__":
    main()
