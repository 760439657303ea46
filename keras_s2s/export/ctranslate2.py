"""The Transformer as a CTranslate2 model, and translating with it.

`export_ctranslate2` maps a trained `Transformer`'s weights onto CTranslate2's
`TransformerSpec` (pre- or post-norm as the card says, sinusoidal or learned
positions, shared or separate embeddings) and carries the SentencePiece
model(s) along; `quantization` stores the weights as `int8`,
`int8_float32`, `int8_float16`, `int16`, `float16` or `bfloat16`.
`CTranslate2Translator` translates with the exported model using the model's
own tokenizer, so text goes in and out exactly as `model.translate` takes and
gives it. GNMT and ConvS2S have no CTranslate2 spec (CTranslate2 models
Transformers only) and are refused by name.

Needs the optional extra: `pip install "keras-s2s[ctranslate2]"`.

Example:
    >>> export_ctranslate2(model, "exported/transformer-ct2", quantization="int8")
    >>> translator = CTranslate2Translator("exported/transformer-ct2")
    >>> translator.translate(["the dog sees a cat"], beam_width=4)
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

import keras
import numpy as np

from keras_s2s.config import LENGTH_PENALTY, MissingExtra
from keras_s2s.files import staging_folder
from keras_s2s.models import seq2seq_lm
from keras_s2s.precision import cpu_info
from keras_s2s.text.tokenizer import SubwordTokenizer, TokenizerPair

log = logging.getLogger("keras_s2s")

QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int16", "float16", "bfloat16")
TOKENIZER_FILES = ("source.model", "target.model")  # beside CTranslate2's model.bin
MAX_POSITIONS = 4096  # rows of the sinusoidal table written for models without a position limit


def require_ctranslate2():
    """The `ctranslate2` module, or an ImportError saying how to install it.

    CTranslate2 uses oneDNN for int8 on CPUs that are not Intel's; on an AMD EPYC Zen 3 (AVX2) its int8
    output was garbage (held-out BLEU 36.33 where float32 gave 91.33, the same int8 weights dequantized
    92.84) and Intel MKL's int8 kernels right (93.28): MKL is asked for unless `CT2_USE_MKL` is set."""
    if (
        "ctranslate2" in sys.modules
        and "CT2_USE_MKL" not in os.environ
        and cpu_info("vendor_id") != "GenuineIntel"
    ):
        log.warning(
            "CTranslate2 was loaded before keras-s2s could ask for Intel MKL's int8 kernels: on this CPU "
            "its int8 output may be wrong; set CT2_USE_MKL=1 in the environment (or import keras-s2s first)"
        )
    os.environ.setdefault("CT2_USE_MKL", "1")  # read once, when the library loads
    try:
        import ctranslate2
    except ImportError:
        raise MissingExtra(
            'CTranslate2 is not installed: pip install "keras-s2s[ctranslate2]" (or pip install ctranslate2)'
        ) from None
    return ctranslate2


def _dense(spec, layer) -> None:
    """A Keras Dense ([in, out] kernel) into a CTranslate2 LinearSpec ([out, in] weight)."""
    spec.weight = np.ascontiguousarray(keras.ops.convert_to_numpy(layer.kernel).T, np.float32)
    spec.bias = keras.ops.convert_to_numpy(layer.bias).astype(np.float32)


def _fused(spec, layers) -> None:
    """Several Dense layers of one input as one LinearSpec (their outputs concatenated)."""
    spec.weight = np.concatenate(
        [keras.ops.convert_to_numpy(layer.kernel).T for layer in layers]
    ).astype(np.float32)
    spec.bias = np.concatenate([keras.ops.convert_to_numpy(layer.bias) for layer in layers]).astype(
        np.float32
    )


def _norm(spec, layer) -> None:
    spec.gamma = keras.ops.convert_to_numpy(layer.gamma).astype(np.float32)
    spec.beta = keras.ops.convert_to_numpy(layer.beta).astype(np.float32)


def _ffn(spec, block) -> None:
    _norm(spec.layer_norm, block.ffn_norm)
    _dense(spec.linear_0, block.ffn_in)
    _dense(spec.linear_1, block.ffn_out)


def _position_table(model) -> np.ndarray:
    """The position encodings the model adds, one row per position (as the model computes them)."""
    rows = model.max_positions if model.positions == "learned" else MAX_POSITIONS
    dummy = keras.ops.zeros((1, rows, model.d_model), model.position_encoding.compute_dtype)
    positions = keras.ops.arange(rows)[None, :]
    if model.positions == "sinusoidal":
        positions = keras.ops.cast(positions, model.position_encoding.compute_dtype)
    table = model.position_encoding(dummy, positions=positions)
    return np.asarray(keras.ops.convert_to_numpy(table), np.float32).reshape(rows, model.d_model)


def _embedding_matrix(embedding) -> np.ndarray:
    return keras.ops.convert_to_numpy(embedding.embeddings).astype(np.float32)


def _output_matrix(embedding) -> np.ndarray:
    """The output projection [V, D]: the embedding itself when tied, else its reverse matrix."""
    if embedding.tie_weights:
        return _embedding_matrix(embedding)
    return keras.ops.convert_to_numpy(embedding.reverse_embeddings).T.astype(np.float32)


def transformer_spec(model):
    """CTranslate2's `TransformerSpec` holding `model`'s weights and vocabularies."""
    from keras_s2s.models import Transformer

    ctranslate2 = require_ctranslate2()
    if not isinstance(model, Transformer):
        raise ValueError(
            f"CTranslate2 export is for the Transformer; a {type(model).__name__} has no CTranslate2 model "
            "spec (export it as a SavedModel: --format saved_model)"
        )
    tokenizer = model.tokenizer
    if tokenizer is None or not all(
        isinstance(t, SubwordTokenizer) for t in (tokenizer.source, tokenizer.target)
    ):
        raise ValueError("CTranslate2 export needs the model's SentencePiece tokenizer(s)")
    specs = ctranslate2.specs
    spec = specs.TransformerSpec.from_config(
        (len(model.encoder_blocks), len(model.decoder_blocks)),
        model.num_heads,
        pre_norm=model.normalize_first,
        activation=specs.Activation.RELU,
    )
    table = _position_table(model)
    spec.encoder.embeddings[0].weight = _embedding_matrix(model.source_embedding)
    spec.decoder.embeddings.weight = _embedding_matrix(model.target_embedding)
    for side in (spec.encoder, spec.decoder):
        side.scale_embeddings = True  # x * sqrt(d_model), as Transformer._embed does
        side.position_encodings.encodings = table
    for layer, block in zip(spec.encoder.layer, model.encoder_blocks):
        attention = block.self_attention
        _fused(
            layer.self_attention.linear[0],
            [attention.query_dense, attention.key_dense, attention.value_dense],
        )
        _dense(layer.self_attention.linear[1], attention.output_dense)
        _norm(layer.self_attention.layer_norm, block.attention_norm)
        _ffn(layer.ffn, block)
    for layer, block in zip(spec.decoder.layer, model.decoder_blocks):
        own, cross = block.self_attention, block.cross_attention
        _fused(layer.self_attention.linear[0], [own.query_dense, own.key_dense, own.value_dense])
        _dense(layer.self_attention.linear[1], own.output_dense)
        _norm(layer.self_attention.layer_norm, block.self_norm)
        _dense(layer.attention.linear[0], cross.query_dense)
        _fused(layer.attention.linear[1], [cross.key_dense, cross.value_dense])
        _dense(layer.attention.linear[2], cross.output_dense)
        _norm(layer.attention.layer_norm, block.cross_norm)
        _ffn(layer.ffn, block)
    if model.normalize_first:
        _norm(spec.encoder.layer_norm, model.encoder_norm)
        _norm(spec.decoder.layer_norm, model.decoder_norm)
    spec.decoder.projection.weight = _output_matrix(model.target_embedding)
    spec.decoder.projection.bias = np.zeros(model.vocab_size, np.float32)
    spec.config.layer_norm_epsilon = float(model.encoder_blocks[0].ffn_norm.epsilon)
    spec.config.add_source_eos = True  # sources end with EOS, as in training
    spec.register_source_vocabulary(tokenizer.source.pieces())
    spec.register_target_vocabulary(tokenizer.target.pieces())
    return spec


def export_ctranslate2(model, path: str | Path, quantization: str | None = None) -> Path:
    """Write `model` (a trained Transformer) as a CTranslate2 model directory, atomically.

    The directory holds CTranslate2's `model.bin`, its vocabularies and
    `source.model` / `target.model` (the SentencePiece models), so
    `CTranslate2Translator(path)` needs nothing else.

    Args:
        model: Transformer. With its tokenizer (a model from a run directory has it).
        path: str | Path. A directory that does not exist yet.
        quantization: str | None. Stored weight type (see `QUANTIZATIONS`); None keeps float32.
    """
    ctranslate2 = require_ctranslate2()
    path = Path(path)
    if path.exists():
        raise ValueError(f"{path} already exists; choose another --out")
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}"
        )
    spec = transformer_spec(model)

    class _Converter(ctranslate2.converters.Converter):
        def _load(self):
            return spec

    tmp = staging_folder(path)
    try:
        _Converter().convert(str(tmp), quantization=quantization, force=True)
        model.tokenizer.source.save(tmp / TOKENIZER_FILES[0])
        model.tokenizer.target.save(tmp / TOKENIZER_FILES[1])
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


RUN_EXPORT = "ctranslate2"  # where translate --engine ctranslate2 keeps a run directory's export


class DamagedExport(ValueError):
    """A CTranslate2 export directory whose model or tokenizers do not load."""


def decoding_options(given: dict) -> dict:
    """The translation task's decoding options with `given` (the flags a person set) that
    CTranslate2 honours: a coverage penalty is refused by name; it has no loop guard, which it says
    when it decodes without one by default.

    Example:
        >>> decoding_options({"beam_width": 4})
        {'beam_width': 4, 'length_penalty': 1.0}
    """
    from keras_s2s import tasks

    if given.get("coverage_penalty"):
        raise ValueError("--coverage-penalty is a native-engine option (CTranslate2 has none)")
    if given.get("loop_guard") is None:
        log.info("CTranslate2 decodes without the loop guard (the native engine has it)")
    options = tasks.get("translation").decoding(**given)
    for native_only in ("coverage_penalty", "loop_guard"):
        options.pop(native_only)
    return options


def translator_for(path: str | Path, compute_type: str = "default", threads: int = 0):
    """A `CTranslate2Translator` for an export directory, or for a run directory (its model is exported
    once, in float32, to `RUN/ctranslate2/`; `compute_type` quantizes when loading).

    Example:
        >>> translator_for("runs/transformer_demo", compute_type="int8").translate(["..."], beam_width=4)
    """
    from keras_s2s import optimizers  # noqa: F401  registers the optimizer a run's model was compiled with

    path = Path(path)
    if (path / "model.keras").is_file() and not (path / "model.bin").is_file():
        export = path / RUN_EXPORT
        if export.exists():
            try:
                return CTranslate2Translator(export, compute_type=compute_type, threads=threads)
            except (DamagedExport, FileNotFoundError) as error:  # the run's own copy: rebuilt
                log.warning("%s; rebuilding it from %s", error, path / "model.keras")
                shutil.rmtree(export)
        export_ctranslate2(keras.saving.load_model(path / "model.keras"), export)
        path = export
    return CTranslate2Translator(path, compute_type=compute_type, threads=threads)


class CTranslate2Translator:
    """Translate raw text with an exported CTranslate2 model, tokenized as the keras_s2s model was.

    Args:
        path: str | Path. A directory written by `export_ctranslate2`.
        compute_type: str. CTranslate2's compute type: `default` (as stored),
            `int8`, `int8_float32`, `float32`, `bfloat16`, ...
        threads: int. Threads for one batch (0: CTranslate2's default, all cores).
    """

    def __init__(self, path: str | Path, compute_type: str = "default", threads: int = 0):
        ctranslate2 = require_ctranslate2()
        path = Path(path)
        if not (path / "model.bin").is_file() or not all(
            (path / f).is_file() for f in TOKENIZER_FILES
        ):
            raise FileNotFoundError(
                f"{path}: not a CTranslate2 export of keras-s2s (model.bin, {', '.join(TOKENIZER_FILES)}); "
                "write one with keras-s2s export --format ctranslate2"
            )
        try:
            self.translator = ctranslate2.Translator(
                str(path), device="cpu", compute_type=compute_type, intra_threads=threads
            )
            source, target = (SubwordTokenizer.load(path / name) for name in TOKENIZER_FILES)
        except (RuntimeError, ValueError, OSError) as error:  # CTranslate2 and SentencePiece
            raise DamagedExport(
                f"{path}: a damaged CTranslate2 export ({str(error)[:160]}); write it again with "
                "keras-s2s export --format ctranslate2"
            ) from None
        self.tokenizer = TokenizerPair(source, target)
        self.source_pieces = source.pieces()
        self.target_ids = {piece: i for i, piece in enumerate(target.pieces())}

    def translate(
        self,
        texts: list[str],
        batch_size: int = 64,
        beam_width: int = 1,
        length_penalty: float = LENGTH_PENALTY,
        max_length: int = 128,
        max_length_ratio: float = 2.0,
        max_length_offset: int = 10,
        progress=None,
        first_line: int = 1,
    ) -> list[str]:
        """Translate like `Seq2SeqLM.translate`: blank lines stay blank; each sentence gets at most
        `max_length_ratio * source tokens + max_length_offset` output tokens (and `max_length`).

        CTranslate2 normalizes beam scores by length ** `length_penalty` (GNMT's
        ((5 + length) / 6) ** alpha in the native decoder): beam outputs can
        differ a little; greedy ones (beam_width 1) are the model's argmax path in both.
        """
        texts = list(texts)
        limit_in = seq2seq_lm.MAX_SOURCE_TOKENS  # source tokens, EOS included
        results = [""] * len(texts)
        filled = [i for i in range(len(texts)) if texts[i].strip()]
        order = sorted(
            filled, key=lambda i: len(texts[i])
        )  # similar lengths per batch, as the native path
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            ids = self.tokenizer.source.tokenize([texts[i] for i in chunk])
            for row, i in enumerate(chunk):  # as the native decoder cuts them (+ EOS: the limit)
                if len(ids[row]) >= limit_in:
                    log.warning(
                        "line %d (%r...) has %d tokens; at most %d are translated at once "
                        "(keras_s2s.models.seq2seq_lm.MAX_SOURCE_TOKENS): translating its first %d",
                        first_line + i,
                        texts[i][:40],
                        len(ids[row]) + 1,
                        limit_in,
                        limit_in - 1,
                    )
                    ids[row] = ids[row][: limit_in - 1]
            tokens = [[self.source_pieces[t] for t in row] for row in ids]
            longest = max(len(row) + 1 for row in ids)  # + EOS
            limit = min(max_length, int(np.ceil(max_length_ratio * longest)) + max_length_offset)
            outputs = self.translator.translate_batch(
                tokens,
                beam_size=beam_width,
                length_penalty=length_penalty if beam_width > 1 else 0.0,
                max_decoding_length=max(1, limit - 1),  # the native limit counts the EOS
                max_input_length=limit_in,
                max_batch_size=batch_size,
            )
            for i, output in zip(chunk, outputs):
                hypothesis = [self.target_ids.get(piece, 1) for piece in output.hypotheses[0]]
                results[i] = self.tokenizer.target.detokenize([hypothesis])[0]
            if progress is not None:
                progress(len(chunk))
        return results
