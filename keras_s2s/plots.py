"""PNG plots people judge sequence models by: attention alignments, spectrograms, error rates,
learning curves.

Uses matplotlib's non-interactive Agg backend; files are written atomically.

Example:
    >>> plot_alignment(result["alignment"], "runs/tts/samples/0-alignment.png", title="the red dog")
    >>> plot_mels({"predicted": predicted, "target": target}, "runs/tts/samples/0-mel.png")
    >>> plot_grouped_bars({"flite awb": {"greedy": 77.5, "beam + LM": 71.1}}, "wer.png", "WER %")
    >>> plot_curves({"run a": [1.1, 9.6, 14.5], "run b": [2.5, 10.2]}, "curves.png", "dev BLEU")
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from keras_s2s.files import atomic_write


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError('plots need matplotlib: pip install "keras-s2s[audio]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path: str | Path) -> Path:
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda p: figure.savefig(p, format="png", dpi=100, bbox_inches="tight"))
    plt.close(figure)
    return path


def plot_alignment(
    alignment: np.ndarray,
    path: str | Path,
    title: str = "",
    xlabel: str = "decoder step",
    ylabel: str = "input character",
) -> Path:
    """Heat map of attention weights [output steps, input positions]: a good one is a clean diagonal."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(8, 4))
    image = axis.imshow(
        np.asarray(alignment).T,
        origin="lower",
        aspect="auto",
        cmap="viridis",
        vmin=0,
        vmax=1,
        interpolation="nearest",
    )
    axis.set(xlabel=xlabel, ylabel=ylabel, title=title[:90])
    figure.colorbar(image, ax=axis)
    return _save(figure, path)


def plot_mels(mels: dict, path: str | Path, title: str = "") -> Path:
    """One panel per named log-mel spectrogram [frames, bands], stacked, on a shared colour scale."""
    plt = _pyplot()
    figure, axes = plt.subplots(len(mels), 1, figsize=(8, 2.4 * len(mels)), squeeze=False)
    low = min(float(np.min(m)) for m in mels.values())
    high = max(float(np.max(m)) for m in mels.values())
    for axis, (name, mel) in zip(axes[:, 0], mels.items()):
        image = axis.imshow(
            np.asarray(mel).T, origin="lower", aspect="auto", cmap="magma", vmin=low, vmax=high
        )
        axis.set(ylabel=f"{name}\nmel band")
    axes[-1, 0].set_xlabel("frame")
    axes[0, 0].set_title(title[:90])
    figure.colorbar(image, ax=axes[:, 0].tolist())
    return _save(figure, path)


def plot_grouped_bars(
    values: dict[str, dict[str, float]], path: str | Path, ylabel: str, title: str = ""
) -> Path:
    """Bars of `values[group][series]`, one cluster per group (e.g. per voice: WER by decoder);
    a series missing from a group leaves a gap."""
    if not values:
        raise ValueError("plot_grouped_bars needs at least one group")
    plt = _pyplot()
    series = list(dict.fromkeys(name for row in values.values() for name in row))
    width = 0.8 / len(series)
    figure, axis = plt.subplots(figsize=(max(6.0, 0.25 * len(values) * len(series) + 2), 4))
    for index, name in enumerate(series):
        positions = [g + (index - (len(series) - 1) / 2) * width for g in range(len(values))]
        heights = [row.get(name, np.nan) for row in values.values()]
        axis.bar(positions, heights, width, label=name)
    axis.set_xticks(range(len(values)), list(values), rotation=30, ha="right")
    axis.set_ylabel(ylabel)
    axis.set_title(title[:90], pad=28)
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize="small", ncols=len(series), loc="lower center", bbox_to_anchor=(0.5, 1))
    return _save(figure, path)


def plot_curves(
    curves: dict[str, list[float]],
    path: str | Path,
    ylabel: str,
    xlabel: str = "epoch",
    title: str = "",
) -> Path:
    """One line per named series of values at steps 1, 2, ... (e.g. dev BLEU after each epoch of
    several runs); series may differ in length.

    Example:
        >>> plot_curves({"dropout 0.1": [1.1, 9.6, 14.5], "no dropout": [2.5, 10.2, 13.2]},
        ...             "curves.png", "dev BLEU")
    """
    if not any(len(values) for values in curves.values()):
        raise ValueError("plot_curves needs at least one series with values")
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, values in curves.items():
        axis.plot(range(1, len(values) + 1), values, marker="o", markersize=3, label=name)
    axis.set(xlabel=xlabel, ylabel=ylabel)
    axis.set_title(title[:90])
    axis.grid(alpha=0.3)
    axis.legend(fontsize="small")
    return _save(figure, path)
