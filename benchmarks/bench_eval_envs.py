"""The held-out envs of an evaluation: made for each evaluation, or kept between them.

Before its first step an evaluation makes one env per slot and resets each to its held-out
task; for ALFWorld that is a TextWorld engine per slot and a game loaded into each. A training
run evaluates at least twice (before and after training) and ``algos eval`` once per model;
since 2026-12-08 they play in one :class:`algos.eval.HeldOutEnvs`, whose slots keep their
games, so every evaluation after the first only restarts them.

This times that setup both ways for a recipe's held-out list (no model is involved), and
checks that both start every slot with the same observation: ``--reps`` times, alternating,
(a) fresh envs made, reset to the list and closed, as each evaluation did before, and (b) the
kept envs reset to the list again.

    OMP_NUM_THREADS=2 python benchmarks/bench_eval_envs.py recipes/alfworld/gigpo.toml [--reps 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from algos.config import load_config
from algos.envs import eval_seeds, make_envs
from algos.eval import EVAL_ENVS, HeldOutEnvs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recipe")
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    cfg = load_config(args.recipe, [])
    seeds = eval_seeds(cfg, args.episodes)
    width = max(min(len(seeds), max(cfg.rollout.max_batch_size, EVAL_ENVS)), 1)
    seeds = (seeds + seeds[-1:] * width)[:width]
    print(f"{platform.processor() or platform.machine()}; {args.recipe}: {width} slots")

    def fresh() -> tuple[float, tuple]:
        t0 = time.perf_counter()
        venv = make_envs(cfg, width, evaluation=True)
        obs, _ = venv.reset(seed=seeds)
        spent = time.perf_counter() - t0
        venv.close()
        return spent, tuple(map(str, obs))

    with HeldOutEnvs(cfg) as kept:
        kept.venv(width).reset(seed=seeds)  # the first evaluation: makes and loads

        def again() -> tuple[float, tuple]:
            t0 = time.perf_counter()
            obs, _ = kept.venv(width).reset(seed=seeds)
            return time.perf_counter() - t0, tuple(map(str, obs))

        times: dict[str, list[float]] = {"fresh": [], "kept": []}
        starts = set()
        for rep in range(args.reps):
            for name in ("fresh", "kept") if rep % 2 == 0 else ("kept", "fresh"):
                spent, obs = (fresh if name == "fresh" else again)()
                times[name].append(spent)
                starts.add(obs)
                print(f"rep {rep + 1}: {name} envs {spent:.2f} s", flush=True)
    f, k = statistics.median(times["fresh"]), statistics.median(times["kept"])
    print(f"median: fresh {f:.2f} s, kept {k:.2f} s ({f / max(k, 1e-9):.0f}x); "
          f"every pass started the same observations: {len(starts) == 1}")  # fmt: skip


if __name__ == "__main__":
    main()
