"""``examples/trl_grpo_hotpotqa.py``: TRL's GRPOTrainer trains on agent-gym envs (CPU, offline).

A tiny random model (``algos.models.load_model("tiny-random")``, no files) takes real
optimizer steps. On the tests' Keypad env behind a real ``serve-env`` process its random
bytes win sometimes, so the rewards vary; they are checked against the episodes the env
itself recorded. HotpotQA runs in process to show the example works on a benchmark env.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from serve_env import KEYPAD_ID, KEYPAD_PATH, serve_env

pytest.importorskip("trl")
pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import trl_grpo_hotpotqa as example  # noqa: E402

COMMON = ["--model", "tiny-random", "--cpu", "--max-new-tokens", "8", "--learning-rate", "1e-3"]


@pytest.mark.slow
def test_grpo_trainer_steps_on_a_served_env_with_the_envs_rewards(tmp_path: Path) -> None:
    episodes = tmp_path / "episodes.jsonl"
    with serve_env(KEYPAD_ID, pythonpath=KEYPAD_PATH) as url:
        trainer = example.main(
            [*COMMON, "--url", url, "--format", "plain", "--max-steps", "2", "--tasks", "2",
             "--num-generations", "4", "--batch-size", "4", "--output-dir", str(tmp_path / "out"),
             "--episodes-jsonl", str(episodes)]
        )  # fmt: skip
    assert trainer.state.global_step == 2
    logged = [h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]
    assert [h["step"] for h in logged] == [1, 2]
    returns = [json.loads(line)["return"] for line in episodes.read_text().splitlines()]
    assert len(returns) == 2 * 4  # every rollout was one env episode
    for step, row in enumerate(logged):
        group = returns[4 * step : 4 * step + 4]
        assert row["rewards/env_reward/mean"] == pytest.approx(sum(group) / 4)
    assert set(returns) <= {0.0, 1.0}  # Keypad pays 1 for a win, 0 otherwise


@pytest.mark.slow
def test_grpo_trainer_steps_on_hotpotqa_in_process(tmp_path: Path) -> None:
    episodes = tmp_path / "episodes.jsonl"
    trainer = example.main(
        # One turn per episode: HotpotQA's observations are long in the byte-level tokens of
        # tiny-random, whose context is 4096.
        [*COMMON, "--max-steps", "1", "--tasks", "1", "--num-generations", "2", "--max-turns", "1",
         "--batch-size", "2", "--invalid-penalty", "0.1", "--output-dir", str(tmp_path / "out"),
         "--episodes-jsonl", str(episodes)]
    )  # fmt: skip
    assert trainer.state.global_step == 1
    lines = [json.loads(line) for line in episodes.read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["task_id"] == lines[1]["task_id"]  # one GRPO group
    (row,) = [h for h in trainer.state.log_history if "rewards/env_reward/mean" in h]
    assert row["rewards/env_reward/mean"] == pytest.approx(sum(e["return"] for e in lines) / 2)
    # A random model writes no <action> tag: every response is invalid, -0.1 each.
    assert all(e["return"] == pytest.approx(-0.1 * e["length"]) for e in lines)


def test_a_bad_model_or_env_is_one_line_when_run_as_a_script() -> None:
    """A model this machine does not have, or an env id that does not exist, was a traceback."""
    import subprocess

    script = Path(example.__file__)
    for args, message in (
        (["--model", "no-such-model"], "trl_grpo_hotpotqa.py: model 'no-such-model' is not"),
        (["--env", "HotpotQ", "--model", "tiny-random"], "unknown environment 'HotpotQ'"),
    ):
        out = subprocess.run([sys.executable, str(script), "--cpu", *args], capture_output=True,
                             text=True, timeout=300)  # fmt: skip
        assert out.returncode == 1 and message in out.stderr, out.stderr[-2000:]
        assert "Traceback" not in out.stderr, out.stderr[-2000:]
