"""One progress line on stderr, rewritten in place: what the long commands show while they work.

Example:
    >>> bar = Progress(60_000, "utterances", verb="synthesizing", show=True)
    >>> bar(64)   # synthesizing 64/60,000 utterances (0%), 85.0/s, 12m left
    >>> bar.close()
"""

from __future__ import annotations

import sys
import time


class Progress:
    """`VERB DONE[/TOTAL] UNIT [(P%)], R/s[, Nm left]`: advanced by calling it with a count; nothing
    is printed unless `show` (default: when stderr is a terminal). `done`: already done before
    (a resumed job), left out of the rate."""

    def __init__(
        self, total: int | None, unit: str, verb: str, show: bool | None = None, done: int = 0
    ):
        self.total, self.unit, self.verb, self.done, self.first = total, unit, verb, done, done
        self.show = sys.stderr.isatty() if show is None else show
        self.start = time.time()

    @property
    def seconds(self) -> float:
        return time.time() - self.start

    def __call__(self, count: int) -> None:
        self.done += count
        if not self.show:
            return
        rate = (self.done - self.first) / max(self.seconds, 1e-9)
        line = f"\r{self.verb} {self.done:,}"
        if self.total:
            left = (self.total - self.done) / rate / 60 if rate else 0
            line += f"/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f}%), "
            line += f"{rate:.1f}/s, {left:.0f}m left"
        else:
            line += f" {self.unit}, {rate:.1f}/s"
        print(line, end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        """End the line (where anything was printed)."""
        if self.show and self.done > self.first:
            print(file=sys.stderr)
