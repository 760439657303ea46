"""The synthesis command: speak text with a trained synthesizer into WAV files."""

from __future__ import annotations

import logging
import os
import sys

from keras_s2s.commands.base import COUNT, Command, load_for
from keras_s2s.files import read_text
from keras_s2s.progress import Progress


def _synthesize_arguments(synthesize) -> None:
    synthesize.add_argument("--model", required=True, help="run directory of a speech synthesizer")
    synthesize.add_argument("text", nargs="*", help="text to say (or --input)")
    synthesize.add_argument("--input", help="a text file: one utterance per non-empty line")
    synthesize.add_argument(
        "-o",
        "--output",
        required=True,
        help="a .wav file for one text; a folder (0001.wav, ...) for several",
    )
    synthesize.add_argument(
        "--plot", action="store_true", help="also write NAME-alignment.png and NAME-mel.png"
    )
    synthesize.add_argument(
        "--iterations", type=COUNT, default=60, help="Griffin-Lim iterations (default 60)"
    )
    synthesize.add_argument(
        "--max-decoder-steps", type=COUNT, help="step limit (default: the model's)"
    )
    synthesize.add_argument("--batch-size", type=COUNT, default=8)


def _synthesize(args) -> None:
    """Each text -> a WAV file (atomically), with optional alignment and mel plots."""
    from pathlib import Path

    from keras_s2s.decoding.vocoder import GriffinLim
    from keras_s2s.tasks.synthesis import write_synthesis

    texts = list(args.text)
    if args.input:
        if not os.path.isfile(args.input):
            raise FileNotFoundError(f"{args.input}: input file not found")
        texts += [line.strip() for line in read_text(args.input).splitlines() if line.strip()]
    if not texts:
        raise ValueError("nothing to synthesize: give text arguments or --input FILE")
    output = Path(args.output)
    single = len(texts) == 1 and output.suffix.lower() == ".wav"
    if len(texts) > 1 and output.suffix.lower() == ".wav":
        raise ValueError(f"{len(texts)} texts need a folder for -o, not the file {output}")
    targets = [output] if single else [output / f"{i:04d}.wav" for i in range(1, len(texts) + 1)]
    model = load_for("synthesis", args.model)
    vocoder = GriffinLim(model.extractor, iterations=args.iterations)
    targets[0].parent.mkdir(parents=True, exist_ok=True)
    progress = Progress(
        len(texts), "texts", "synthesized", show=sys.stderr.isatty() and len(texts) > 1
    )
    try:
        for start in range(0, len(texts), args.batch_size):
            chunk = texts[start : start + args.batch_size]
            for text, target, item in zip(
                chunk, targets[start:], model.infer(chunk, args.max_decoder_steps)
            ):
                samples = write_synthesis(target, text, item, vocoder, plots=args.plot)
                if not item["stopped"]:
                    logging.getLogger("keras_s2s").warning(
                        "%s: no stop token within the step limit; the audio runs to the limit (%r)",
                        target,
                        text[:60],
                    )
                print(f"{target}\t{len(samples) / vocoder.sample_rate:.2f}s\t{text}")
            progress(len(chunk))
    finally:
        progress.close()


COMMANDS = (
    Command("synthesize", "speak text with a trained synthesizer into WAV files",
            _synthesize_arguments, _synthesize),
)  # fmt: skip
