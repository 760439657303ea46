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


def matmul_gflops(dtype, n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of an n x n x n matmul in `dtype`: the machine's practical peak."""
    a = tf.cast(tf.random.normal((n, n), dtype="float32"), dtype)
    f = tf.function(lambda x: tf.matmul(x, x))
    f(a).numpy()
    return 2 * n**3 / median_seconds(lambda: f(a).numpy(), repeats) / 1e9
