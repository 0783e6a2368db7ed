"""A run's figures do not depend on what is cached (issue: cold vs warm model cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

#: A seconds-long run of the real SmolLM2 on generated ALFWorld (the main job's recipe).
TINY_RUN = [
    "--set", "env.num_tasks=1", "--set", "env.group_size=2", "--set", "env.max_steps=2",
    "--set", "rollout.max_new_tokens=4", "--set", "run.iterations=1",
    "--set", "run.eval_episodes=0", "--set", "run.progress=false", "--set", "run.loggers=[]",
    "--set", "model.init=''",
]  # fmt: skip


def _train(home: Path, out: Path, name: str) -> list[dict]:
    env = {**os.environ, "AGENT_GYM_HOME": str(home), "OMP_NUM_THREADS": "1"}
    cmd = [
        sys.executable, "-m", "algos.cli", "train", str(ROOT / "recipes/alfworld/gigpo.toml"),
        *TINY_RUN, "--set", f"run.out_dir='{out}'", "--set", f"run.name='{name}'",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = (out / name / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.slow
def test_cold_and_warm_caches_give_identical_metrics(tmp_path):
    """The first run converts the GGUF model and builds the games; the second reads them."""
    home = tmp_path / "home"  # empty: nothing cached yet
    cold = _train(home, tmp_path, "cold")
    assert (home / "models" / "smollm2-135m-instruct" / "config.json").is_file()
    warm = _train(home, tmp_path, "warm")
    keys = [k for k in cold[0] if k.startswith(("rollout/", "actor/")) and "per_s" not in k]
    assert keys
    for key in keys:
        assert cold[0][key] == warm[0][key], key
