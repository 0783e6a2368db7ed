"""The speed-up changes no byte: replays with and without it give identical observations and infos."""

from __future__ import annotations

import random
from importlib.metadata import version

import pytest

from agent_gym.envs.alfworld import speedup
from agent_gym.envs.alfworld.env import ALFWorldEnv


def _record(env: ALFWorldEnv, task_id: str, actions: list[str] | None, seed: int) -> tuple:
    """Play ``actions`` (or a seeded random admissible policy) and record every output."""
    obs, info = env.reset(options={"task_id": task_id})
    trace = [(obs, info)]
    rng = random.Random(seed)
    played = []
    for t in range(25 if actions is None else len(actions)):
        if actions is not None:
            action = actions[t]
        elif rng.random() < 0.1:
            action = "open the pod bay doors"
        else:
            action = rng.choice(info["admissible_actions"])
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((action, obs, reward, terminated, truncated, info))
        played.append(action)
        if terminated:
            break
    return played, trace


@pytest.mark.parametrize("k", [0, 1, 2, 5])
def test_replays_are_identical_with_and_without_speedup(k: int) -> None:
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    task_id = env.games.record(k).task_id
    compare_plans = k in (0, 2)  # small scenes: the planner answers in ~0.1 s
    with speedup.stock():
        actions, stock = _record(env, task_id, None, seed=k)
        stock_plan = env._engine.plan() if compare_plans else None
    env._engine.game_key = None  # force a fresh load with the speed-up on
    _, fast = _record(env, task_id, actions, seed=k)
    assert fast == stock
    if compare_plans:  # the deferred planner task plans the same
        assert env._engine.plan() == stock_plan
    env.close()


def test_speedup_is_installed_and_pinned() -> None:
    assert speedup.VERIFIED_TEXTWORLD == version("textworld") == "1.7.0"
    ALFWorldEnv(split="valid_unseen", num_games=6).reset(seed=0)
    assert speedup.enabled()


def test_host_sys_argv_survives_the_engine(monkeypatch) -> None:
    import sys

    monkeypatch.setattr(sys, "argv", ["my-script", "--flag"])
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    env.reset(seed=3)
    env._engine.game_key = None
    with speedup.stock():
        env.reset(seed=3)
    assert sys.argv == ["my-script", "--flag"]
    env.close()
