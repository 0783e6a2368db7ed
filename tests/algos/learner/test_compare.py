"""``algos compare``: the same starting point, task draws and budget; a table and a plot."""

from __future__ import annotations

import json

import pytest
from conftest import KEYPAD

from algos.backends.vllm import vllm_installed
from algos.compare import compare
from algos.config import dumps, load_config
from algos.metrics import read_metrics


def test_compare_two_algorithms_over_two_seeds(tmp_path):
    sets = [*KEYPAD, "env.num_tasks=2", "run.iterations=2", "run.eval_episodes=4",
            "run.eval_every=1", "model.init=sft", "sft.demos=4", "sft.val_demos=0",
            "sft.epochs=1"]  # fmt: skip
    out = compare(None, ["gigpo", "grpo"], [0, 1], out_dir=tmp_path / "cmp", overrides=sets,
                  log=lambda *_: None)  # fmt: skip
    result = json.loads((out / "comparison.json").read_text())
    assert set(result) == {"gigpo", "grpo"}
    for r in result.values():
        assert len(r["seeds"]) == 2 and r["final"] is not None
        # Held-out success at 0 (the shared start), 1 (eval_every) and 2 (after).
        assert sorted(int(i) for i in r["curve"]) == [0, 1, 2]
        for s in r["seeds"]:
            assert s["episodes"] == 1  # Keypad has one task, and a task is evaluated once
    starts = {s["before"] for r in result.values() for s in r["seeds"]}
    assert len(starts) == 1  # every run starts from the one cloned checkpoint
    # The same task draws: iteration 1 trains on the same tasks in every run.
    tasks = {
        tuple(json.loads(line)["task_id"] for line in (out / f"{a}-seed{k}" / "episodes.jsonl").read_text().splitlines()[:2])
        for a in ("gigpo", "grpo") for k in (0, 1)
    }  # fmt: skip
    assert len(tasks) == 1
    assert "eval/success_rate" in read_metrics(out / "gigpo-seed0")[0]
    assert (out / "comparison.png").stat().st_size > 0
    assert "| gigpo |" in (out / "comparison.md").read_text()


def test_more_seeds_later_keep_the_finished_runs(tmp_path):
    sets = [*KEYPAD, "env.num_tasks=2", "run.iterations=1", "run.eval_episodes=4",
            "model.init=sft", "sft.demos=4", "sft.val_demos=0", "sft.epochs=1"]  # fmt: skip
    out = tmp_path / "cmp"
    compare(None, ["grpo"], [0], out_dir=out, overrides=sets, log=lambda *_: None)
    first = out / "grpo-seed0"
    kept = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in first.glob("*.json*")}
    lines = []

    compare(None, ["grpo"], [0, 1], out_dir=out, overrides=sets, log=lines.append)

    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in first.glob("*.json*")} == kept
    assert any("already finished" in str(line) for line in lines)
    result = json.loads((out / "comparison.json").read_text())
    assert [s["run"] for s in result["grpo"]["seeds"]] == [str(first), str(out / "grpo-seed1")]
    evals = [json.loads((out / f"grpo-seed{k}" / "eval.json").read_text()) for k in (0, 1)]
    assert evals[1]["before"] == evals[0]["before"]  # the start, evaluated once


@pytest.mark.parametrize(
    ("algos", "seeds", "extra", "error", "message"),
    [
        (["grpo", "grpoo"], [0], [], ValueError, "--algos grpo grpoo: unknown algorithm 'grpoo'"),
        (["grpo"], [0, 1, 0], [], ValueError, "--seeds 0 1 0: 0 given twice"),
        (["grpo", "grpo"], [0], [], ValueError, "--algos grpo grpo: grpo given twice"),
        (["grpo"], [0], ["model.init='/no/such/run'"], FileNotFoundError, "no complete checkpoint"),
        (["grpo"], [0], ["env.id='no_such_module:Foo-v0'"], ValueError, "No module named"),
        pytest.param(
            ["grpo"],
            [0],
            ["rollout.backend='vllm'"],
            ValueError,
            "needs vLLM",
            marks=pytest.mark.skipif(vllm_installed(), reason="vLLM is installed here"),
        ),
    ],
)
def test_a_bad_comparison_fails_before_any_run_or_folder(tmp_path, algos, seeds, extra, error,
                                                         message):  # fmt: skip
    out = tmp_path / "cmp"
    with pytest.raises(error, match=message.replace("(", r"\(")):
        compare(None, algos, seeds, out_dir=out, overrides=[*KEYPAD, *extra], log=lambda *_: None)
    assert not out.exists()


def test_an_out_folder_of_another_comparison_is_refused(tmp_path):
    """A run there is resumed with its own config: other settings now would mix two tables."""
    out = tmp_path / "cmp"
    sets = [*KEYPAD, "run.iterations=1", f"run.out_dir='{out}'", "run.name='grpo-seed0'"]
    (out / "grpo-seed0").mkdir(parents=True)
    (out / "grpo-seed0" / "config.json").write_text(dumps(load_config(None, [*sets, "algo=grpo"])))
    with pytest.raises(ValueError, match="grpo-seed0 was trained with other settings "
                       r"\(run.iterations 1 here, 3 now\)"):  # fmt: skip
        compare(None, ["grpo"], [0], out_dir=out, overrides=[*KEYPAD, "run.iterations=3"],
                log=lambda *_: None)  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["grpo-seed0"]  # nothing trained or written


def test_paths_with_quotes_reach_the_config_as_typed(tmp_path):
    from algos.compare import _run_sets

    out = tmp_path / 'it\'s "a" dir\\x'
    init = str(tmp_path / "o'clock")
    cfg = load_config(None, [*KEYPAD, *_run_sets([], "grpo", 0, out, init)])
    assert cfg.run.out_dir == str(out) and cfg.model.init == init
    assert cfg.run.name == "grpo-seed0"


def test_the_interval_over_seeds_uses_students_t_for_any_count():
    """Past 10 seeds the quantile was the normal's 1.96: 12 seeds' interval 11% too narrow."""
    import doctest
    import math
    import statistics

    import algos.compare
    from algos.compare import t95, t_interval

    assert doctest.testmod(algos.compare).failed == 0
    values = [0.0, 1.0] * 6
    mean, lo, hi = t_interval(values)
    assert hi - mean == pytest.approx(2.201 * statistics.stdev(values) / math.sqrt(12))
    exact = {40: 2.0211, 60: 2.0003, 120: 1.9799}  # Student's t, 97.5% quantile
    assert all(abs(t95(df) - q) < 1e-4 for df, q in exact.items())
