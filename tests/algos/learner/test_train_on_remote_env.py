"""``algos train`` on an env served by a real ``agent-gym serve-env`` process (OpenEnv).

The learner builds ``agent_gym/OpenEnv-v0`` sub-envs (one OpenEnv session each) pointed at
the served Keypad env, exactly as a user trains on envs running elsewhere::

    algos train recipes/test/keypad.toml --set env.id=agent_gym/OpenEnv-v0 \\
        --set 'env.kwargs={url="http://127.0.0.1:PORT"}'
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HERE, KEYPAD

pytest.importorskip("openenv")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/, for serve_env
from serve_env import KEYPAD_ID, serve_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_algos_train_on_a_served_env(tmp_path: Path) -> None:
    with serve_env(KEYPAD_ID, "--max-sessions", "64", pythonpath=str(HERE)) as url:
        sets = [s for s in KEYPAD if not s.startswith("env=")]
        sets += [
            "env.id='agent_gym/OpenEnv-v0'",
            f'env.kwargs={{url="{url}"}}',
            "run.iterations=1",
            f"run.out_dir='{tmp_path}'",
            "run.name='remote'",
        ]
        out = subprocess.run(
            [sys.executable, "-m", "algos.cli", "train", str(ROOT / "recipes/test/keypad.toml"),
             *[a for s in sets for a in ("--set", s)]],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp_path / "remote"
    config = json.loads((run / "config.json").read_text())
    assert config["env"]["id"] == "agent_gym/OpenEnv-v0" and config["env"]["kwargs"] == {"url": url}
    (row,) = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert episodes, "the run logged no episodes"
    # The episodes are the served Keypad env's: its task, data source and step limit (4, read
    # from the server's /agent_gym/spec into the prompt) came over the wire.
    assert {(e["task"], e["data_source"]) for e in episodes} == {
        ("press 3 keys", "generated:test-keypad")
    }
    assert all(1 <= e["length"] <= 4 for e in episodes)
    assert episodes[0]["steps"][0]["observation"].endswith("Step 1 of 4.")
    assert row["iteration"] == 1 and row["rollout/step_rows"] > 0
