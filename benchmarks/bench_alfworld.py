"""Speed of AgentR1/ALFWorld-v0: stock TextWorld vs agent-gym's speed-up, in the same run.

A random policy over the admissible commands plays generated games of all six task types.
Prints steps/s and reset time (median over games; with the speed-up, both for a game new to
the machine and for one whose translation an earlier process kept on disk, read from a
temporary directory so the user's cache plays no part), RSS growth over many episodes in one
process, and the rate of ``agent_gym.make_vec(..., mode="async")`` with 2 workers.

    python benchmarks/bench_alfworld.py                 # defaults below
    python benchmarks/bench_alfworld.py --games 12 --steps 30 --episodes 1000
"""

from __future__ import annotations

import argparse
import platform
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import agent_gym
from agent_gym.envs.alfworld import speedup
from agent_gym.envs.alfworld.env import ALFWorldEnv

gym.register_envs(agent_gym)


def play(env: ALFWorldEnv, task_ids: list[str], steps: int, seed: int) -> tuple[list, list]:
    """Reset each game and take ``steps`` random admissible steps; return per-game timings."""
    rng = random.Random(seed)
    resets, rates = [], []
    for task_id in task_ids:
        env._engine.game_key = None  # every reset loads its game afresh
        t0 = time.perf_counter()
        _, info = env.reset(options={"task_id": task_id})
        resets.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(steps):
            *_, terminated, _, info = env.step(rng.choice(info["admissible_actions"]))
            if terminated:
                _, info = env.reset(options={"task_id": task_id})
        rates.append(steps / (time.perf_counter() - t0))
    return resets, rates


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=12, help="games (2 per task type by default)")
    p.add_argument("--steps", type=int, default=30, help="random steps per game")
    p.add_argument("--episodes", type=int, default=1000, help="episodes for the RSS check")
    p.add_argument("--vec-steps", type=int, default=600, help="steps for the vector-env check")
    args = p.parse_args()

    env = ALFWorldEnv(split="valid_unseen", num_games=args.games)
    env.reset(seed=0)  # imports, first load
    task_ids = [env.games.record(k).task_id for k in range(len(env.games))]
    with speedup.stock():
        stock_resets, stock_rates = play(env, task_ids, args.steps, seed=0)
    import fast_downward

    users_cache = speedup.sas_cache_dir
    with tempfile.TemporaryDirectory() as kept:
        speedup.sas_cache_dir = lambda: Path(kept)  # empty: every game is new to the machine
        try:
            fast_downward.pddl2sas.cache_clear()
            fast_resets, fast_rates = play(env, task_ids, args.steps, seed=0)
            fast_downward.pddl2sas.cache_clear()  # as in a new process: only the disk remembers
            disk_resets, disk_rates = play(env, task_ids, args.steps, seed=0)
        finally:
            speedup.sas_cache_dir = users_cache
    # GRPO groups reset one game many times: second reset of an already loaded game.
    warm = []
    for task_id in task_ids:
        env.reset(options={"task_id": task_id})
        t0 = time.perf_counter()
        env.reset(options={"task_id": task_id})
        warm.append(time.perf_counter() - t0)
    warm_reset = statistics.median(warm)

    print(
        f"# ALFWorld speed ({platform.processor() or platform.machine()}, python {platform.python_version()})"
    )
    print(
        f"{len(task_ids)} generated games (valid_unseen, all 6 task types), {args.steps} random admissible steps each\n"
    )
    print("| engine | steps/s (median) | steps/s (min-max) | reset s (median) |")
    print("|---|---|---|---|")
    for name, resets, rates in (
        ("stock TextWorld 1.7.0", stock_resets, stock_rates),
        ("agent-gym speed-up, game new to the machine", fast_resets, fast_rates),
        ("agent-gym speed-up, translation kept on disk", disk_resets, disk_rates),
    ):
        print(
            f"| {name} | {statistics.median(rates):.0f} | {min(rates):.0f}-{max(rates):.0f} "
            f"| {statistics.median(resets):.2f} |"
        )
    print(
        f"\nspeed-up: {statistics.median(fast_rates) / statistics.median(stock_rates):.1f}x steps/s, "
        f"{statistics.median(stock_resets) / statistics.median(fast_resets):.1f}x reset "
        f"({statistics.median(stock_resets) / statistics.median(disk_resets):.1f}x from the disk); "
        f"reset of a game already loaded (same game again): {warm_reset * 1000:.0f} ms"
    )

    # RSS over many short episodes in one process (5 steps each) on the same few games; RSS
    # over distinct games (where TextWorld's intern table used to grow): bench_alfworld_memory.py.
    rng = random.Random(1)
    n_games = min(len(task_ids), 30)
    before = rss_mb()
    for ep in range(args.episodes):
        _, info = env.reset(seed=ep)
        for _ in range(5):
            *_, info = env.step(rng.choice(info["admissible_actions"]))
        if ep == 49:
            before = rss_mb()  # after warm-up (caches filled)
    print(
        f"\nmax RSS: {before:.0f} MB after 50 episodes, {rss_mb():.0f} MB after {args.episodes} "
        f"(growth {rss_mb() - before:.0f} MB; a pool of {n_games} games, replayed)"
    )
    env.close()

    bench_vector(args)


def bench_vector(args: argparse.Namespace) -> None:
    """Steps/s of ``make_vec``: one env in-process vs 2 async workers.

    Both play the same sequence of games (episode k resets to game seed ``seeds[k]``), and the
    two workers of the async env play the same game, as the members of a GRPO/GiGPO group do;
    otherwise the comparison measures which games each side happened to draw (step cost differs
    4x between games). Only step time is counted: a game new to a worker costs a PDDL
    translation at reset (reported above as the reset time).
    """
    seeds = random.Random(1).choices(range(100), k=1000)
    rates = {}
    for n, mode in ((1, "sync"), (2, "async")):
        rng = random.Random(0)
        venv = agent_gym.make_vec(
            "AgentR1/ALFWorld-v0", num_envs=n, mode=mode, split="valid_unseen", num_games=args.games
        )
        episode = 0
        _, infos = venv.reset(seed=[seeds[episode]] * n)
        live = np.ones(n, dtype=bool)  # a finished member holds (no-op steps) until both end
        busy, done = 0.0, 0
        while done < args.vec_steps * n:
            actions = [rng.choice(a) for a in infos["admissible_actions"]]
            t0 = time.perf_counter()
            _, _, term, trunc, infos = venv.step(actions)
            busy += time.perf_counter() - t0
            done += int(live.sum())  # only real env steps count
            live &= ~(term | trunc)
            if not live.any():
                episode += 1
                _, infos = venv.reset(seed=[seeds[episode]] * n)
                live[:] = True
        rates[mode] = done / busy
        print(f"make_vec mode={mode} num_envs={n}: {rates[mode]:.0f} steps/s")
        venv.close()
    print(f"async 2 workers / one process: {rates['async'] / rates['sync']:.2f}x")


if __name__ == "__main__":
    main()
