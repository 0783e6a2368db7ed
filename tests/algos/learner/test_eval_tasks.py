"""The held-out task list: every evaluation episode plays another task, each task once."""

from __future__ import annotations

import gymnasium as gym
import pytest
from conftest import KEYPAD

from algos.config import load_config
from algos.envs import eval_seeds
from algos.eval import evaluate_agent


def _task_ids(env_id: str, kwargs: dict, seeds: list[int]) -> list[str]:
    env = gym.make(env_id, **kwargs)
    try:
        return [env.reset(seed=s)[1]["task_id"] for s in seeds]
    finally:
        env.close()


def test_a_small_split_is_played_once_per_game():
    # Generated valid_seen with 24 games holds 4 pick_and_place_simple games: seeds drawn with
    # replacement repeat them, the list holds each once and says there are fewer than asked.
    kwargs = {"split": "valid_seen", "task_types": ["pick_and_place_simple"], "num_games": 24}
    sets = [
        'env.eval_kwargs={split="valid_seen", task_types=["pick_and_place_simple"], num_games=24}'
    ]
    cfg = load_config(None, ["env=alfworld", *sets])
    with pytest.warns(UserWarning, match="4 distinct held-out tasks, not the 8 asked for"):
        seeds = eval_seeds(cfg, 8)
    ids = _task_ids("AgentR1/ALFWorld-v0", kwargs, seeds)
    assert len(seeds) == 4 and len(set(ids)) == 4
    assert seeds[0] == cfg.env.eval_seed  # the first seed always starts a new task
    result = evaluate_agent(cfg, "expert", 8)
    assert result["episodes"] == 4 and result["success_rate"] == 1.0
    # another demonstrator by name; one the env lacks is named in the error
    searcher = evaluate_agent(cfg, "expert:search_expert_action", 8)
    assert searcher["episodes"] == 4 and searcher["valid_action_ratio"] == 1.0
    with pytest.raises(ValueError, match="no scripted expert 'teleport'"):
        evaluate_agent(cfg, "expert:teleport", 8)
    with pytest.raises(ValueError, match="no scripted expert 'close'"):  # not an expert's name
        evaluate_agent(cfg, "expert:close", 8)


def test_a_large_split_gives_as_many_distinct_tasks_as_asked():
    cfg = load_config(None, [*KEYPAD, "env.eval_kwargs={distinct_tasks=true}"])
    seeds = eval_seeds(cfg, 16)
    assert seeds == [cfg.env.eval_seed + i for i in range(16)]  # every seed is another task
    one = load_config(None, KEYPAD)  # the plain Keypad env has one task
    with pytest.warns(UserWarning, match="1 distinct held-out tasks"):
        assert len(eval_seeds(one, 5)) == 1


def test_evaluations_in_kept_envs_play_the_games_without_loading_them_again(monkeypatch):
    # The trainer evaluates before and after training, `algos eval` once per model: in one
    # HeldOutEnvs the second evaluation makes no env and loads no game (each slot holds its
    # game), and plays exactly the episodes that fresh envs play.
    from textworld.envs.pddl import PddlEnv

    import algos.eval as ev
    from algos.eval import HeldOutEnvs, open_policy, play

    cfg = load_config(None, ["env=alfworld", "model=tiny-random", "env.max_steps=3"])
    backend = open_policy("hf:tiny-random", cfg)
    made, loads = [], []
    make_envs, load = ev.make_envs, PddlEnv.load
    monkeypatch.setattr(ev, "make_envs", lambda *a, **k: made.append(1) or make_envs(*a, **k))
    monkeypatch.setattr(
        PddlEnv, "load", lambda self, *a, **k: loads.append(1) or load(self, *a, **k)
    )

    def played(**kw):
        return [e.to_json() for e in play(cfg, backend, 4, record_text=True, **kw)]

    fresh = played()
    assert len(made) == 1 and len(loads) == 4
    with HeldOutEnvs(cfg) as envs:
        first = played(envs=envs)
        made.clear(), loads.clear()
        again = played(envs=envs)
        assert made == [] and loads == []  # the same envs, each game already loaded
    assert fresh == first == again
    assert len({e["task_id"] for e in fresh}) == 4
    # envs in subprocesses or Ray actors would hold their memory through training: not kept
    assert not HeldOutEnvs(load_config(None, ["env=alfworld", "env.vector_mode='async'"])).keep
