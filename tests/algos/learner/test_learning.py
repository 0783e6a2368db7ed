"""Learning is shown, not assumed: success on the Keypad env rises from ~11% to > 80%.

Every registered algorithm, with its own defaults (GSPO's clip range for ``gspo`` and
``steppo``), from the same tiny random model and the same task draws.
"""

from __future__ import annotations

import pytest

from algos.config import load_config
from algos.metrics import read_metrics
from algos.trainer import train


def _run(overrides: list[str], algo: str, iterations: int) -> list[dict]:
    cfg = load_config(
        None, [*overrides, f"algo={algo}", f"run.iterations={iterations}", "run.save_every=0"]
    )
    run_dir = train(cfg, log=lambda *_: None)
    return read_metrics(run_dir)


@pytest.mark.parametrize(
    ("algo", "iterations"),
    [
        ("grpo", 12),
        *[
            pytest.param(a, 12, marks=pytest.mark.slow)
            for a in ("steppo", "ppo", "drgrpo", "rloo", "reinforce_pp", "gigpo", "gspo")
        ],
    ],
)
def test_success_rises(keypad_overrides, algo, iterations):
    rows = _run(keypad_overrides, algo, iterations)
    first = rows[0]["rollout/success_rate"]
    last = max(r["rollout/success_rate"] for r in rows[-3:])
    assert first < 0.3, f"{algo}: the task is too easy before training ({first:.2f})"
    assert last > 0.8, (
        f"{algo}: success only reached {last:.2f} ({[r['rollout/success_rate'] for r in rows]})"
    )
    assert all(r["actor/skipped_steps"] == 0 for r in rows)
