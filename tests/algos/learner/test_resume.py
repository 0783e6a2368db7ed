"""Checkpoints: resume reproduces an uninterrupted run; a half-written checkpoint is ignored."""

from __future__ import annotations

import json

import torch

from algos.checkpoint import latest_checkpoint
from algos.config import load_config
from algos.metrics import read_metrics
from algos.trainer import train

QUIET = {"log": lambda *_: None}


def _cfg(overrides, name, iterations):
    return load_config(
        None,
        [
            *overrides,
            "algo=grpo",
            "env.num_tasks=2",
            "env.group_size=4",
            f"run.iterations={iterations}",
            f"run.name='{name}'",
        ],
    )


def test_resume_matches_uninterrupted_run(keypad_overrides):
    full = train(_cfg(keypad_overrides, "full", 3), **QUIET)
    part = train(_cfg(keypad_overrides, "part", 2), **QUIET)
    # Pretend the run was meant to go on: raise its iteration count, then resume.
    cfg = json.loads((part / "config.json").read_text())
    cfg["run"]["iterations"] = 3
    (part / "config.json").write_text(json.dumps(cfg))
    train(None, run_dir=part, resume=True, **QUIET)
    a, b = read_metrics(full), read_metrics(part)
    assert [r["iteration"] for r in b] == [0, 1, 2]
    for key in ("rollout/success_rate", "rollout/return_mean", "actor/pg_loss", "actor/grad_norm"):
        assert a[2][key] == b[2][key], key
    wa = torch.load(latest_checkpoint(full) / "model.pt")
    wb = torch.load(latest_checkpoint(part) / "model.pt")
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def test_interrupted_write_keeps_last_good_checkpoint(keypad_overrides):
    run = train(_cfg(keypad_overrides, "r", 1), **QUIET)
    good = latest_checkpoint(run)
    # A crash mid-write leaves only a temporary folder; "latest" still names the good one.
    (run / "checkpoints" / ".iter_000001.123.tmp").mkdir()
    assert latest_checkpoint(run) == good
