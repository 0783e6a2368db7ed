"""Shared fixtures of the learner tests: the Keypad env and a tiny-random config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import keypad_env  # noqa: E402

torch.set_num_threads(1)

#: Overrides that make a tiny-random run on the Keypad env learn in seconds.
KEYPAD = [
    f"env={keypad_env.ENV_ID}",
    "model=tiny-random",
    "env.num_tasks=4",
    "env.group_size=8",
    "env.action_format='plain'",
    "env.history_length=0",
    "rollout.max_new_tokens=2",
    "rollout.max_prompt_tokens=2048",
    "optim.lr=1e-2",
    "optim.critic_lr=1e-2",
    "optim.mini_batch_size=32",
    "optim.micro_batch_size=64",
    "optim.ppo_epochs=2",
    "algo.clip_low=0.2",
    "algo.clip_high=0.28",
    "run.progress=false",
    "run.loggers=[]",
    "run.log_episodes=2",
]


@pytest.fixture
def keypad_overrides(tmp_path: Path) -> list[str]:
    return [*KEYPAD, f"run.out_dir='{tmp_path}'", "run.name='run'"]
