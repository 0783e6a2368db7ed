"""``algos plot``: the held-out curve of a run, before, during and after training."""

import json

import pytest

from agent_gym.episode import wilson_interval
from algos.plot import held_out_points, plot_run

pytest.importorskip("matplotlib")


def _summary(won: int, n: int = 64) -> dict:
    ci = list(wilson_interval(won, n))
    return {
        "episodes": n,
        "success_rate": won / n,
        "success_ci95": ci,
        "data_sources": ["generated:keypad"],
    }


def test_the_held_out_curve_joins_before_every_evaluation_during_and_after(tmp_path):
    rows = [
        {"iteration": 1, "rollout/success_rate": 0.5, "rollout/episodes": 64},
        {"iteration": 2, "rollout/success_rate": 0.75, "rollout/episodes": 64,
         "eval/success_rate": 44 / 64},
        {"iteration": 3, "rollout/success_rate": 0.875, "rollout/episodes": 64},
    ]  # fmt: skip
    evals = {"random": _summary(0), "before": _summary(41), "after": _summary(58)}
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "eval.json").write_text(json.dumps(evals))

    points = held_out_points(rows, evals, last=3)

    assert [(x, round(y * 64)) for x, y, *_ in points] == [(0, 41), (2, 44), (3, 58)]
    assert points[1][2:] == (*wilson_interval(44, 64), 64)
    assert all(lo < y < hi for _, y, lo, hi, _ in points)
    written = plot_run(tmp_path)
    assert [p.name for p in written] == ["curves.png", "success.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_a_run_without_held_out_games_has_no_held_out_curve():
    rows = [{"iteration": 1, "rollout/success_rate": 0.5, "eval/success_rate": 0.5}]
    assert held_out_points(rows, {}, last=1) == []


def test_the_success_legend_says_where_the_held_out_games_come_from(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    legends = {}
    save = Figure.savefig

    def record(fig, path, *args, **kwargs):
        legend = fig.axes[0].get_legend()
        legends[path.name] = [t.get_text() for t in legend.get_texts()]
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    row = {"iteration": 1, "rollout/success_rate": 0.5, "rollout/episodes": 64}
    (tmp_path / "metrics.jsonl").write_text(json.dumps(row) + "\n")
    evals = {"random": _summary(0), "before": _summary(41), "after": _summary(58)}
    (tmp_path / "eval.json").write_text(json.dumps(evals))

    plot_run(tmp_path)

    held = [t for t in legends["success.png"] if t.startswith("held-out games (")]
    assert held == ["held-out games (n=64, generated:keypad), 95% interval"]


def test_a_metrics_file_that_is_not_json_lines_names_the_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('[1, 2]\n{"iteration": 1}\n')
    with pytest.raises(ValueError, match="metrics.jsonl: line 1 is not a JSON object"):
        plot_run(tmp_path)
    path.write_bytes(b"\xff\xfe garbage\n")
    with pytest.raises(ValueError, match="metrics.jsonl: not a JSON-lines text file"):
        plot_run(tmp_path)


def test_a_cloning_run_plots_its_nll_per_epoch_from_the_untrained_model(tmp_path, monkeypatch):
    """`algos plot` of an `algos sft` run drew only tokens/s, against "iteration"."""
    from matplotlib.figure import Figure

    panels = {}
    save = Figure.savefig

    def record(fig, path, *args, **kwargs):
        for ax in fig.axes:
            lines = {line.get_label(): line.get_xydata().tolist() for line in ax.get_lines()}
            panels[ax.get_title()] = (ax.get_xlabel(), lines)
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    rows = [{"iteration": e, "sft/loss": 1.0 / e, "sft/val_nll": 2.0 / e} for e in (1, 2)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "sft.json").write_text(json.dumps({"val_nll_before": 5.5, "finished": True}))

    assert [p.name for p in plot_run(tmp_path)] == ["curves.png"]  # no success panel to draw
    xlabel, lines = panels["cloning NLL"]
    assert xlabel == "epoch"
    assert lines["held-out demonstrations"] == [[0, 5.5], [1, 2.0], [2, 1.0]]
    assert lines["training demonstrations"] == [[1, 1.0], [2, 0.5]]
