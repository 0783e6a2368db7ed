"""Time to find the held-out task list: a reset per seed vs ``task_id_for``, in the same run.

``algos eval`` and every evaluation of a training run first look for ``--episodes`` distinct
held-out tasks (:func:`algos.envs.eval_seeds`). With ALFWorld that used to cost a TextWorld
load per seed tried; ``ALFWorldEnv.task_id_for(seed)`` names the game a seed starts without
loading it. Both ways must find the same seeds (checked here too).

    python benchmarks/bench_eval_tasks.py                         # the main job's held-out set
    python benchmarks/bench_eval_tasks.py --episodes 128 --set ...
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import time
from unittest import mock

from agent_gym.envs.alfworld.env import ALFWorldEnv
from algos import envs
from algos.config import load_config


def timed(cfg, episodes: int, *, peek: bool) -> tuple[list[int], float]:
    envs._EVAL_SEEDS.clear()  # the list is kept per process: compute it afresh
    no_peek = mock.patch.object(ALFWorldEnv, "task_id_for", lambda self, seed: None)
    t0 = time.perf_counter()
    with contextlib.nullcontext() if peek else no_peek:
        seeds = envs.eval_seeds(cfg, episodes)
    return seeds, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--recipe", default="recipes/alfworld/gigpo.toml")
    p.add_argument("--set", action="append", default=[], help="config override (repeatable)")
    p.add_argument("--episodes", type=int, default=64)
    args = p.parse_args()
    cfg = load_config(args.recipe, [*args.set, "run.progress=false"])
    timed(cfg, 4, peek=True)  # the games' cache and imports, outside the timings
    by_peek, t_peek = timed(cfg, args.episodes, peek=True)
    by_reset, t_reset = timed(cfg, args.episodes, peek=False)
    assert by_peek == by_reset, "task_id_for and reset disagree on the held-out list"
    print(f"{platform.processor() or platform.machine()}; {cfg.env.id} {cfg.env.eval_kwargs}")
    print(f"{len(by_peek)} distinct held-out tasks from {by_peek[-1] - by_peek[0] + 1} seeds")
    print(f"reset per seed: {t_reset:7.2f} s")
    print(f"task_id_for:    {t_peek:7.2f} s   ({t_reset / t_peek:.0f}x faster)")


if __name__ == "__main__":
    main()
