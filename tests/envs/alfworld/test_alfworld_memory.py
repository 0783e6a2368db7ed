"""Memory over many games: TextWorld's intern table is emptied between games, which changes no
output, and RSS stays flat over 200 distinct games."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import mementos.core
import pytest

from agent_gym.envs.alfworld import engine, speedup
from agent_gym.envs.alfworld.env import ALFWorldEnv


def test_intern_table_holds_only_the_current_game() -> None:
    # Without emptying, the table keeps every game's propositions: in this sequence it reached
    # 6,762 entries, against about 400 for game 0 alone.
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    sizes = []
    for k in [0, 1, 2, 3, 4, 5, 0]:
        _, info = env.reset(options={"task_id": env.games.record(k).task_id})
        env.step(info["admissible_actions"][0])
        sizes.append(len(mementos.core._memento_cache))
    assert sizes[-1] < 1.1 * sizes[0]
    assert sizes[-1] < max(sizes) / 2
    env.close()  # and closing lets go of the last game's
    assert len(mementos.core._memento_cache) == 0


def _trace(env: ALFWorldEnv, task_ids: list[str], seed: int) -> list:
    rng = random.Random(seed)
    trace = []
    for task_id in task_ids:
        obs, info = env.reset(options={"task_id": task_id})
        trace.append((obs, info))
        for _ in range(8):
            action = rng.choice(info["admissible_actions"])
            obs, reward, terminated, _, info = env.step(action)
            trace.append((action, obs, reward, terminated, info))
            if terminated:
                break
    return trace


def test_emptying_the_table_between_games_changes_no_output(monkeypatch) -> None:
    # Games 0 -> 2 -> 0 (small scenes): game 0's second load builds its propositions afresh.
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    sequence = [env.games.record(k).task_id for k in (0, 2, 0)]
    ours = _trace(env, sequence, seed=5)
    env._engine.game_key = None
    with monkeypatch.context() as m, speedup.stock():
        m.setattr(engine, "forget_interned_logic", lambda: 0)  # stock TextWorld: never emptied
        stock = _trace(env, sequence, seed=5)
        assert not speedup.enabled()
    env.close()
    assert ours == stock


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RSS from Linux /proc")
def test_rss_is_flat_over_200_distinct_games() -> None:
    # A fresh process, so that nothing else this test session loaded counts.
    code = textwrap.dedent(
        """
        import random
        from agent_gym.envs.alfworld.env import ALFWorldEnv

        def rss():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))

        env = ALFWorldEnv(split="train", num_games=200)
        rng = random.Random(0)
        for k in range(200):
            _, info = env.reset(options={"task_id": env.games.record(k).task_id})
            for _ in range(3):
                *_, info = env.step(rng.choice(info["admissible_actions"]))
            if k == 139:  # past the 128 translations speedup keeps (about 1 MB each)
                before = rss()
        print(before, rss())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=1800
    )
    before, after = map(float, out.stdout.split())
    # Before the fix: about 1.2 MB per game, so about 72 MB over these 60 games.
    assert after - before < 30, (before, after)
