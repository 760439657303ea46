"""Helpers shared by the benchmark scripts: timing and the matmul reference."""

from __future__ import annotations

import statistics
import time

import tensorflow as tf


def median_seconds(fn, repeats: int = 3) -> float:
    """Median wall time of `fn()` over `repeats` calls."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_medians(functions: dict, repeats: int, warmups: int = 1) -> dict:
    """Median wall time of each `fn()` in `functions`, called in turn (A/B/A/B) after `warmups` calls each."""
    for fn in functions.values():
        for _ in range(warmups):
            fn()
    times = {key: [] for key in functions}
    for _ in range(repeats):
        for key, fn in functions.items():
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    return {key: statistics.median(values) for key, values in times.items()}


def matmul_gflops(dtype, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of an n x n x n matmul in `dtype`: the machine's practical peak."""
    a = tf.cast(tf.random.normal((n, n), dtype="float32"), dtype)
    f = tf.function(lambda x: tf.matmul(x, x))
    f(a).numpy()
    return 2 * n**3 / median_seconds(lambda: f(a).numpy(), repeats) / 1e9


def interleaved_step_times(models: dict, inputs, labels, steps: int, repeats: int) -> dict:
    """Median seconds per `train_on_batch` of each model, timed A/B/C/A/B/C after two warm-up steps."""
    for model in models.values():  # trace, compile and warm up
        for _ in range(2):
            model.train_on_batch(inputs, labels)

    def run_steps(model):
        for _ in range(steps):
            model.train_on_batch(inputs, labels)

    runs = {key: (lambda model=model: run_steps(model)) for key, model in models.items()}
    return {key: s / steps for key, s in interleaved_medians(runs, repeats, warmups=0).items()}
