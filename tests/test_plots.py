"""Plots: a PNG people can look at, written whole."""

import pytest

pytest.importorskip("matplotlib")

from keras_s2s.plots import plot_grouped_bars  # noqa: E402


def test_grouped_bars_draw_one_cluster_per_group_and_leave_gaps(tmp_path):
    import matplotlib.image

    values = {
        "espeak ng": {"greedy": 49.1, "beam + LM": 37.5, "pocketsphinx": 90.6},
        "flite awb": {"greedy": 77.5, "beam + LM": 71.1, "pocketsphinx": 37.0},
        "pico en-GB": {"greedy": 88.0},  # the others missing: a gap, not an error
    }
    path = plot_grouped_bars(values, tmp_path / "plots" / "wer.png", "WER %", "unseen voices")
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 400
    assert image[..., :3].std() > 0.05, "not a blank canvas"
    assert [p.name for p in path.parent.iterdir()] == ["wer.png"], "nothing half-written left"
    with pytest.raises(ValueError, match="at least one group"):
        plot_grouped_bars({}, tmp_path / "empty.png", "WER %")
