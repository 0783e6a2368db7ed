"""``torchrun -m algos train`` with 2 ranks (gloo): files written once, checkpoints across world
sizes, and a failing or stuck rank ending the job instead of hanging it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from launch import check, run, train_args

pytestmark = pytest.mark.slow

#: Metrics that are measured times or rates, not results of the run.
TIMING = ("time/", "perf/")


def _metrics(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _results(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith(TIMING)}


def test_two_ranks_write_once_and_resume_on_two_and_on_one(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    fsdp = "dist.strategy=fsdp"
    out = check(run(train_args(a, fsdp, "run.iterations=1"), nproc=2)).stdout
    # Rank 0 reports, once: one progress line, one metrics line, log_episodes episodes.
    assert out.count("iter 1/1") == 1 and out.count("run directory:") == 1
    rows = _metrics(a)
    assert [r["iteration"] for r in rows] == [1]
    assert rows[0]["rollout/episodes"] == 12  # both ranks' episodes (3 groups x 4)
    assert rows[0]["rollout/step_rows"] >= 12
    assert len((a / "episodes.jsonl").read_text().splitlines()) == 2
    ckpt = a / "checkpoints" / "iter_000001"
    assert json.loads((ckpt / "state.json").read_text())["iteration"] == 1
    state = torch.load(ckpt / "state.pt", weights_only=True)
    assert len(state["rank_rng"]) == 2  # each rank's sampling stream
    assert not list((a / "checkpoints").glob(".*.tmp"))

    # Same world size: the resumed iteration 2 is the uninterrupted run's iteration 2.
    check(run(["-m", "algos", "train", "--resume", str(a), "--iterations", "2"], nproc=2))
    check(run(train_args(b, fsdp, "run.iterations=2"), nproc=2))
    resumed, straight = _metrics(a), _metrics(b)
    assert [r["iteration"] for r in resumed] == [1, 2]
    assert _results(resumed[1]).keys() == _results(straight[1]).keys()
    for k, v in _results(straight[1]).items():
        assert resumed[1][k] == pytest.approx(v, rel=1e-6, abs=1e-9), k

    # Saved by 2 ranks (FSDP shards gathered), resumed by one process.
    out = check(run(["-m", "algos", "train", "--resume", str(a), "--iterations", "3"])).stdout
    assert "iter 3/3" in out
    assert [r["iteration"] for r in _metrics(a)] == [1, 2, 3]
    assert (a / "checkpoints" / "iter_000003" / "model.safetensors").is_file()


def test_a_failing_rank_ends_the_job_and_is_named(tmp_path):
    run_dir = tmp_path / "fails"
    proc = run(
        train_args(run_dir, "env=rank_envs:AlgosTest/KeypadRank1Fails-v0", "run.iterations=1"),
        nproc=2,
        timeout=300,  # a hang fails the test
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "test env: rank 1 fails by design" in text
    assert "[rank1]" in text  # torchrun prefixes the failing rank's traceback
    # torchrun's summary names rank 1 as the first failure, with its traceback (`record`).
    root = text.split("Root Cause (first observed failure):")[-1]
    assert re.search(r"rank\s*: 1 \(local_rank: 1\)", root), root
    assert "rank 1 fails by design" in root
    assert not (run_dir / "checkpoints").exists()


def test_a_stuck_rank_times_the_others_out(tmp_path):
    """Rank 1 never returns from a step: rank 0 waits dist.timeout_s in its collective, fails."""
    run_dir = tmp_path / "hangs"
    proc = run(
        train_args(
            run_dir,
            "env=rank_envs:AlgosTest/KeypadRank1Hangs-v0",
            "run.iterations=1",
            "dist.timeout_s=5",
        ),
        nproc=2,
        timeout=300,
    )
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "[rank0]" in text and "imed out" in text  # gloo: "Timed out waiting ..."
