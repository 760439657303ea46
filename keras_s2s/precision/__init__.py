"""Mixed precision: picking the policy for the machine, and loss scaling for float16.

Example:
    >>> from keras_s2s import precision
    >>> precision.set_precision("auto")        # 'mixed_bfloat16' on a CPU with AMX, 'mixed_float16' on a V100+
    'mixed_bfloat16'
"""

from keras_s2s.precision.loss_scale import build_loss_scale_optimizer
from keras_s2s.precision.policy import (
    choose_precision,
    cpu_flags,
    cpu_info,
    is_mixed,
    resolve_precision,
    set_precision,
)

__all__ = [
    "build_loss_scale_optimizer",
    "choose_precision",
    "cpu_flags",
    "cpu_info",
    "is_mixed",
    "resolve_precision",
    "set_precision",
]
