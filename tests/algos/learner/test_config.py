"""Recipe profiles and the env wrappers the config builds (reward shaping, matching, prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KEYPAD

from algos.config import load_config
from algos.trainer import make_envs

RECIPE = Path(__file__).resolve().parents[3] / "recipes/alfworld/gigpo.toml"


def test_alfworld_recipe_profiles():
    base = load_config(RECIPE, ["profile="])  # no profile: the paper's settings as written
    assert (base.env.num_tasks, base.env.group_size, base.env.max_steps) == (16, 8, 50)
    assert (base.env.reward_scale, base.env.success_bonus, base.env.invalid_penalty) == (
        0.0,
        10.0,
        0.1,
    )
    assert (base.algo.gamma, base.optim.lr, base.algo.kl_coef) == (0.95, 1e-6, 0.01)
    cpu = load_config(RECIPE)  # default_profile = "cpu"
    assert cpu.profile == "cpu" and cpu.model.name == "smollm2-135m"
    assert cpu.env.action_match == "admissible" and cpu.env.reward_scale == 0.0
    gpu = load_config(RECIPE, ["profile=gpu", "run.iterations=3"])
    assert gpu.model.name == "Qwen/Qwen2.5-1.5B-Instruct" and gpu.model.dtype == "bfloat16"
    assert gpu.env.num_tasks == 16 and gpu.run.iterations == 3
    with pytest.raises(ValueError, match="unknown profile 'tpu'; this recipe has: gpu, cpu"):
        load_config(RECIPE, ["profile=tpu"])


def test_shaping_pays_exactly_the_configured_rewards():
    """GiGPO's setting: 10 on the winning step (the raw 1 dropped), -0.1 per invalid action."""
    cfg = load_config(
        None,
        [*KEYPAD, "env.reward_scale=0.0", "env.success_bonus=10.0", "env.invalid_penalty=0.1"],
    )
    venv = make_envs(cfg, 1)
    env = venv.envs[0]
    try:
        env.reset(seed=0)
        rewards = [env.step(a)[1] for a in ("k", "\x01", "k", "k")]
    finally:
        venv.close()
    assert rewards == [0.0, -0.1, 0.0, 10.0]
    # The default reward_scale=1 keeps the raw reward: a win pays 1 + bonus.
    cfg = load_config(None, [*KEYPAD, "env.success_bonus=10.0"])
    venv = make_envs(cfg, 1)
    try:
        venv.envs[0].reset(seed=0)
        assert [venv.envs[0].step("k")[1] for _ in range(3)] == [0.0, 0.0, 11.0]
    finally:
        venv.close()


def test_env_prompt_and_matching_reach_the_wrappers():
    cfg = load_config(None, [*KEYPAD, "env.prompt=compact", "env.action_match=admissible"])
    venv = make_envs(cfg, 1)
    try:
        messages, _ = venv.envs[0].reset(seed=0)
        assert messages[1]["content"].endswith("Copy the one command that best advances the task:")
        assert venv.envs[0].get_wrapper_attr("match") == "admissible"
    finally:
        venv.close()
    with pytest.raises(ValueError, match="env.prompt='short'"):
        make_envs(load_config(None, [*KEYPAD, "env.prompt=short"]), 1)
