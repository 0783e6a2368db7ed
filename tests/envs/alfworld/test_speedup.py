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


def test_stock_and_disable_hold_against_engines_made_later(monkeypatch) -> None:
    from agent_gym.envs.alfworld.engine import Engine

    # An engine made inside stock() installs the patches but leaves them off until the end.
    with speedup.stock():
        Engine().close()
        assert not speedup.enabled()
        with speedup.stock():
            assert not speedup.enabled()
        assert not speedup.enabled()
    assert speedup.enabled()
    # disable() holds for engines made later, and lets them run on a TextWorld version that
    # install() refuses (what the refusal tells the user to do).
    with monkeypatch.context() as m:
        m.setattr(speedup, "_originals", {})  # as if never patched ...
        m.setattr(speedup, "_version", lambda: "0.0")  # ... on another TextWorld
        with pytest.raises(RuntimeError, match=r"speedup\.disable\(\)"):
            Engine()
        speedup.disable()
        try:
            Engine().close()
            assert not speedup.enabled()
        finally:
            m.undo()
            speedup.install()  # on again for the rest of the session
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


def test_translations_kept_on_disk_replay_identically(tmp_path, monkeypatch) -> None:
    """A game translated by an earlier process is read back from disk: the same play, the
    same plans; a damaged file is translated again (with a warning) and rewritten."""
    import gzip
    import json
    import shutil
    from types import SimpleNamespace

    import fast_downward

    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    task_id = env.games.record(0).task_id
    with speedup.stock():
        actions, stock = _record(env, task_id, None, seed=7)
        stock_plan = env._engine.plan()

    def replay() -> tuple[list, object]:
        fast_downward.pddl2sas.cache_clear()  # as in a new process: only the disk remembers
        env._engine.game_key = None
        trace = _record(env, task_id, actions, seed=7)[1]
        return trace, env._engine._tw._pddl_state.task

    shutil.rmtree(speedup.sas_cache_dir(), ignore_errors=True)  # the game set's build kept some
    written, task = replay()
    files = list(speedup.sas_cache_dir().glob("*.json.gz"))
    assert len(files) == 1 and not isinstance(task, SimpleNamespace)  # translated, then kept
    read, task = replay()
    assert isinstance(task, SimpleNamespace)  # from the file
    assert written == stock and read == stock
    assert (
        stock_plan and env._engine.plan() == stock_plan
    )  # from the same state, planned from the file's task

    damaged = [b"not gzip", gzip.compress(b"[1, 2]"), gzip.compress(b'{"format": 1}')]
    damaged.append(files[0].read_bytes()[:-40] + bytes(40))  # the end of the stream garbled
    for data in damaged:
        files[0].write_bytes(data)
        with pytest.warns(UserWarning, match="unreadable ALFWorld translation"):
            again, _ = replay()
        assert again == stock
    assert json.loads(gzip.decompress(files[0].read_bytes()))["format"] >= 1
    env.close()
