"""Training FLOPs of one step, counted analytically for every zoo architecture.

A weight that takes part in a matmul or convolution (embedding and position
tables and biases excluded) costs 2 FLOPs per element at every position it
is applied to in the forward pass, and twice that in the backward pass:
6 x size x positions. Positions are tokens (text), output frames after the
time reduction (speech recognition), characters, decoder steps or frames
(speech synthesis), or time x frequency positions (DeepSpeech2's 2-D
convolutions). Attention scores and weighted sums are added as 3 x their
forward FLOPs.

Example:
    >>> training_flops("transformer", model, {"batch": 64, "length": 24})
    9.1e10
"""

from __future__ import annotations

import numpy as np

TEXT = ("gnmt", "transformer", "convs2s")


def _is_matmul_weight(weight) -> bool:
    path = weight.path
    return len(weight.shape) >= 2 and not any(
        part in path for part in ("embedding", "positions", "bias")
    )


def _text_positions(weight, shape) -> float:
    return shape["batch"] * shape["length"]


def _speech_positions(model, shape):
    frames = shape["batch"] * -(-shape["frames"] // model.time_reduction)

    def positions(weight, _):
        if len(weight.shape) == 4:  # DeepSpeech2's 2-D convolutions: time x frequency outputs
            frequency = (
                model.num_features // 2
                if weight.path.endswith("conv_0/kernel")
                else model.num_features // 4
            )
            return frames * frequency
        return frames

    return positions


def _synthesis_positions(model, shape):
    steps = shape["batch"] * shape["frames"] // model.reduction_factor

    def positions(weight, _):
        path = weight.path
        if "encoder" in path or "attention/memory" in path:
            return shape["batch"] * shape["characters"]
        if "postnet" in path:
            return shape["batch"] * shape["frames"]
        # applied to every character at every decoder step
        if "location" in path or "energy" in path:
            return steps * shape["characters"]
        return steps

    return positions


def attention_flops(architecture: str, model, shape) -> float:
    """Forward FLOPs of attention scores and weighted sums (source and target `length` long)."""
    if architecture == "tacotron2":
        memory = model.attention.memory_layer.kernel.shape[0]  # encoder output size
        pairs = shape["batch"] * shape["frames"] // model.reduction_factor * shape["characters"]
        return pairs * (3 * model.attention.units + 2 * memory)
    if architecture not in TEXT:
        return 0.0
    pairs = shape["batch"] * shape["length"] * shape["length"]
    if architecture == "transformer":
        layers = len(model.encoder_blocks) + 2 * len(model.decoder_blocks)  # decoder: self + cross
        return layers * 4 * pairs * model.d_model
    if architecture == "gnmt":
        units = model.attention_units or model.units
        # add + tanh + v-dot per pair, then the weighted sum
        return pairs * (3 * units + 2 * model.units)
    # convs2s: every decoder layer attends
    return len(model.channels) * 4 * pairs * model.embedding_dim


def training_flops(architecture: str, model, shape: dict) -> float:
    """FLOPs of one training step (forward + backward) of `model` on a batch of `shape`.

    `shape`: {"batch", "length"} for text; {"batch", "frames"} for speech
    recognition; {"batch", "frames", "characters"} for speech synthesis.
    """
    if architecture in TEXT:
        positions = _text_positions
    elif architecture == "tacotron2":
        positions = _synthesis_positions(model, shape)
    else:
        positions = _speech_positions(model, shape)
    total = sum(
        6.0 * int(np.prod(w.shape)) * positions(w, shape)
        for w in model.trainable_weights
        if _is_matmul_weight(w)
    )
    # the shared embedding is also the output projection
    if getattr(model, "share_embeddings", False):
        total += 6.0 * model.vocab_size * model.d_model * _text_positions(None, shape)
    return total + 3.0 * attention_flops(architecture, model, shape)
