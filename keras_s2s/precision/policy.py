"""Mixed-precision policy selection.

`auto` picks, on TensorFlow: `mixed_float16` on NVIDIA GPUs with compute
capability >= 7.0, `mixed_bfloat16` on CPUs with AVX512-BF16 or AMX, else
`float32`. On JAX: `mixed_bfloat16` on NVIDIA GPUs of compute capability >= 8.0
(no loss scaling needed), `mixed_float16` on 7.x, and `float32` on a CPU (XLA:CPU
ran bfloat16 slower than float32 on both CPU kinds measured, docs/performance.md).
Variables stay float32 under every policy (Keras keeps master weights).

Example:
    >>> set_precision("auto")   # logs e.g. "precision auto -> mixed_bfloat16 (CPU has amx_bf16)"
    'mixed_bfloat16'
"""

from __future__ import annotations

import logging

import keras

from keras_s2s.backend import is_jax, tf
from keras_s2s.backend import name as backend_name
from keras_s2s.config import PRECISIONS

log = logging.getLogger("keras_s2s")

BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_info(field: str, cpuinfo: str = "/proc/cpuinfo") -> str:
    """The value of the first `field` line of /proc/cpuinfo ("" if absent or unreadable).

    >>> cpu_info("vendor_id")  # doctest: +SKIP
    'AuthenticAMD'
    """
    try:
        with open(cpuinfo, encoding="utf-8") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name.strip() == field:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str]:
    """The CPU feature flags listed in /proc/cpuinfo (empty if unreadable)."""
    return set(cpu_info("flags", cpuinfo).split())


def gpu_compute_capabilities() -> list[tuple[int, int]]:
    """Compute capability of each visible NVIDIA GPU."""
    if is_jax():
        import jax

        capabilities = []
        for device in jax.devices():
            version = getattr(device, "compute_capability", None)  # e.g. "9.0" on CUDA devices
            if device.platform == "gpu" and version:
                capabilities.append(tuple(int(part) for part in str(version).split(".")[:2]))
        return capabilities
    capabilities = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        if details.get("compute_capability"):
            capabilities.append(tuple(details["compute_capability"]))
    return capabilities


def choose_precision(
    gpu_capabilities: list[tuple[int, int]], flags: set[str], backend: str = "tensorflow"
) -> tuple[str, str]:
    """Pick a policy for this hardware and Keras backend; returns (policy, reason)."""
    if backend == "jax":
        return _choose_for_jax(gpu_capabilities)
    if gpu_capabilities:
        if min(gpu_capabilities) >= (7, 0):
            cc = ".".join(map(str, min(gpu_capabilities)))
            return "mixed_float16", f"NVIDIA GPU with compute capability {cc}"
        return "float32", "GPU older than compute capability 7.0 (no fast float16)"
    found = [flag for flag in BF16_CPU_FLAGS if flag in flags]
    if found:
        return "mixed_bfloat16", f"CPU has {', '.join(found)}"
    return "float32", "no GPU and no bfloat16 instructions on the CPU"


def _choose_for_jax(gpu_capabilities: list[tuple[int, int]]) -> tuple[str, str]:
    if not gpu_capabilities:
        return (
            "float32",
            "JAX on a CPU: XLA:CPU runs bfloat16 slower than float32; Keras's TensorFlow backend, "
            "where installed, trains faster on a CPU (docs/performance.md)",
        )
    cc = min(gpu_capabilities)
    shown = ".".join(map(str, cc))
    if cc >= (8, 0):
        return (
            "mixed_bfloat16",
            f"JAX on an NVIDIA GPU of compute capability {shown} (bfloat16 tensor cores)",
        )
    if cc >= (7, 0):
        return (
            "mixed_float16",
            f"JAX on an NVIDIA GPU of compute capability {shown} (float16 tensor cores)",
        )
    return "float32", f"JAX on a GPU of compute capability {shown} (no 16-bit tensor cores)"


def resolve_precision(name: str) -> str:
    """Turn a card's `precision` value into a Keras policy name."""
    if name not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {name!r}")
    if name != "auto":
        return name
    policy, reason = choose_precision(gpu_compute_capabilities(), cpu_flags(), backend_name())
    log.info("precision auto -> %s (%s)", policy, reason)
    return policy


def set_precision(name: str) -> str:
    """Resolve `name` and make it Keras's global dtype policy; returns the policy."""
    policy = resolve_precision(name)
    keras.mixed_precision.set_global_policy(policy)
    return policy


def is_mixed() -> bool:
    """Whether the global policy computes in a 16-bit type."""
    return keras.mixed_precision.global_policy().compute_dtype in ("float16", "bfloat16")
