"""The loop guard of greedy and beam search: no span of 2 to `MAX_LOOP_PERIOD` tokens is emitted a
third time in a row unless the source itself repeats a span so.

A translation model that has not learned a sentence well (list-like sources: package lists,
enumerations) can fall into a loop, "Eingabe incrementally Eingabe incrementally ..." until the
output limit. The guard follows, for every hypothesis and every period n, how many tokens in a row
have equalled the token n before them (`update_runs`); once 2n - 1 have, the next token that would
complete a third copy of the span is blocked (`block_loops`), and the search takes the best other
token. It is in `keras.ops`, so it runs in the compiled decoders and the SavedModel alike.

Example:
    >>> runs = initial_runs((batch,))
    >>> scores = block_loops(scores, runs, outputs, step, exempt)
    >>> runs = update_runs(runs, outputs, chosen, step)   # before `chosen` is written at `step`
"""

from __future__ import annotations

from keras import ops

MAX_LOOP_PERIOD = 12  # a loop of two German words is a loop of up to ~12 subword pieces
PERIODS = tuple(range(2, MAX_LOOP_PERIOD + 1))
REPEATS = 3  # a span emitted this many times in a row is a loop
NEG_INF = -1e9


def initial_runs(shape: tuple):
    """Run lengths [*shape, len(PERIODS)] at the start: nothing repeats yet."""
    return ops.zeros((*shape, len(PERIODS)), "int32")


def _token_back(sequences, step, period: int):
    """The token `period` steps before `step` in `sequences` [..., L] (position 0 when there is none)."""
    return ops.take(sequences, ops.maximum(step - period, 0), axis=-1)


def update_runs(runs, sequences, tokens, step):
    """`runs` [..., P] after `tokens` [...] is chosen at `step` (`sequences` [..., L] holds the steps
    before it): a run grows where the token equals the one a period before, else starts over."""
    same = ops.stack(
        [
            ops.logical_and(ops.equal(tokens, _token_back(sequences, step, n)), step >= n)
            for n in PERIODS
        ],
        axis=-1,
    )
    return ops.where(same, runs + 1, 0)


def block_loops(scores, runs, sequences, step, exempt):
    """`scores` [..., V] with the token that would complete a loop set to -inf, where `exempt` [...]
    (the source repeats itself) is False. One scatter of the few blocked tokens, not a pass over
    the vocabulary per period."""
    shape = ops.shape(scores)
    flat = ops.reshape(scores, (-1, shape[-1]))
    rows = ops.shape(flat)[0]
    periods = ops.convert_to_tensor(PERIODS, "int32")
    tokens = ops.stack([_token_back(sequences, step, n) for n in PERIODS], axis=-1)  # [..., P]
    looping = ops.logical_and(runs >= (REPEATS - 1) * periods - 1, step >= periods)
    looping = ops.logical_and(looping, ops.logical_not(exempt)[..., None])
    penalty = ops.reshape(ops.where(looping, NEG_INF, 0.0), (-1,))
    row_of = ops.repeat(ops.arange(rows, dtype="int32"), len(PERIODS))
    indices = ops.stack([row_of, ops.reshape(ops.cast(tokens, "int32"), (-1,))], axis=1)
    blocked = ops.scatter(indices, ops.cast(penalty, flat.dtype), ops.shape(flat))
    return ops.reshape(flat + blocked, shape)


def source_repeats(source_ids):
    """bool [B]: whether a source row [B, S] itself holds a span of 2 to `MAX_LOOP_PERIOD` tokens
    three times in a row (its translation may then repeat one too)."""
    real = ops.not_equal(source_ids, 0)
    found = ops.zeros(ops.shape(source_ids)[:1], "bool")
    for n in PERIODS:
        same = ops.logical_and(ops.equal(source_ids[:, n:], source_ids[:, :-n]), real[:, n:])
        # a span repeated three times: 2n positions in a row equal to the token n before
        counts = ops.cumsum(ops.cast(same, "int32"), axis=1)
        padded = ops.pad(counts, [[0, 0], [(REPEATS - 1) * n, 0]])
        window = counts - padded[:, : ops.shape(counts)[1]]
        found = ops.logical_or(found, ops.any(window >= (REPEATS - 1) * n, axis=1))
    return found


def has_loop(words: list[str], min_span: int = 2) -> bool:
    """Whether `words` holds a span of `min_span` or more words three times in a row.

    Example:
        >>> has_loop("Eingabe schrittweise Eingabe schrittweise Eingabe schrittweise".split())
        True
        >>> has_loop("sehr sehr sehr gut".split())   # one word three times: not a span of two
        False
    """
    count = len(words)
    for span in range(min_span, count // REPEATS + 1):
        for start in range(count - REPEATS * span + 1):
            first = words[start : start + span]
            if all(
                words[start + k * span : start + (k + 1) * span] == first for k in range(1, REPEATS)
            ):
                return True
    return False


def count_loops(hypotheses: list[str], sources: list[str]) -> int:
    """How many hypotheses loop (`has_loop` on their words) where their source does not."""
    return sum(
        has_loop(hypothesis.split()) and not has_loop(source.split())
        for hypothesis, source in zip(hypotheses, sources, strict=True)
    )
