"""Plots: a PNG people can look at, written whole."""

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from keras_s2s.plots import plot_curves, plot_grouped_bars  # noqa: E402


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


def test_curves_draw_one_line_per_run_of_any_length(tmp_path):
    import matplotlib.image

    curves = {"dropout 0.1": [1.07, 9.55, 14.48, 17.60], "no dropout": [2.45, 10.16, 13.24]}
    path = plot_curves(curves, tmp_path / "curves.png", "dev BLEU", title="25 minutes")
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] > 400
    assert image[..., :3].std() > 0.05, "not a blank canvas"
    with pytest.raises(ValueError, match="at least one series"):
        plot_curves({"empty": []}, tmp_path / "empty.png", "dev BLEU")
    assert not (tmp_path / "empty.png").exists()


def test_the_run_curves_script_plots_a_metric_of_each_runs_history(tmp_path, capsys):
    script = Path(__file__).resolve().parents[1] / "examples" / "plot_runs.py"
    spec = importlib.util.spec_from_file_location("plot_runs", script)
    plot_runs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot_runs)
    for name, bleu in (("before", [1.0, 9.5]), ("after", [2.4, 10.1, 13.2])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "history.json").write_text(json.dumps({"val_bleu": bleu, "loss": bleu}))
    out = tmp_path / "curves.png"
    runs = [f"dropout 0.1={tmp_path / 'before'}", str(tmp_path / "after")]
    assert plot_runs.main(runs + ["--out", str(out)]) == 0 and out.stat().st_size > 1000
    assert plot_runs.read_curve(runs[1], "val_bleu") == ("after", [2.4, 10.1, 13.2])
    with pytest.raises(SystemExit, match="no 'val_chrf' \\(it has loss, val_bleu\\)"):
        plot_runs.main(runs + ["--metric", "val_chrf", "--out", str(out)])
    with pytest.raises(SystemExit, match="missing: no history.json"):
        plot_runs.main([str(tmp_path / "missing"), "--out", str(out)])
