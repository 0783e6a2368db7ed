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


def rows_of(prompts, gens, **fields):
    """A StepBatch of one step row per (prompt, generation), responses right-padded."""
    from algos.batch import StepBatch

    n = len(gens)
    width = max(len(g.token_ids) for g in gens)
    ids = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width)
    for i, g in enumerate(gens):
        ids[i, : len(g.token_ids)] = torch.tensor(g.token_ids)
        mask[i, : len(g.token_ids)] = 1
    return StepBatch(
        prompt_ids=[torch.tensor(p) for p in prompts], response_ids=ids, response_mask=mask,
        step_reward=[0.0] * n, index=list(range(n)), traj_uid=list(range(n)), step_index=[0] * n,
        **fields,
    )  # fmt: skip
