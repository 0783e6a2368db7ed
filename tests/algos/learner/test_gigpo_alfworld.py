"""GiGPO's step groups are non-trivial on real ALFWorld rollouts (generated games)."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import torch

from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.gigpo import build_step_groups
from algos.models import load_model
from algos.rollout import rollout


def test_step_groups_have_several_members():
    import agent_gym  # noqa: F401
    from agent_gym.vector import group_seeds, make_vec
    from agent_gym.wrappers import ChatPrompt, ParseAction

    model, tok = load_model("tiny-random", seed=0)
    torch.manual_seed(0)
    wrappers = [
        functools.partial(ParseAction, format="plain"),
        functools.partial(ChatPrompt, history_length=0, action_format="plain"),
    ]
    venv = make_vec(
        "AgentR1/ALFWorld-v0", 6, wrappers=wrappers, task_types=["pick_and_place_simple"]
    )
    try:
        ro = rollout(
            venv,
            HFBackend(model, tok),
            seeds=group_seeds(0, 2, 3),
            groups=[0, 0, 0, 1, 1, 1],
            sampling=SamplingParams(max_new_tokens=4),
            max_prompt_tokens=4096,
            max_steps=3,
        )
    finally:
        venv.close()
    b = ro.batch
    index = np.asarray(b.index)
    groups = build_step_groups(b.anchor_obs, index)
    sizes = Counter(groups.tolist())
    assert max(sizes.values()) > 1, "every step group is a singleton"
    # A step group never spans two task groups.
    for g in sizes:
        assert len(set(index[groups == g].tolist())) == 1
    first = b.step_index == 0
    assert all("Welcome to TextWorld" in a for a in b.anchor_obs[first.numpy()])
