"""A held-out evaluation's time: the backend's ordering and kept greedy answers, on and off.

A main-job evaluation plays 64 distinct games greedily; each step's prompts go to the
transformers backend in chunks of ``rollout.max_batch_size``, each chunk left-padded to its
longest new part. Two things ``HFBackend`` does since 2026-12-07 for greedy calls:

* it chunks prompts by the part no kept prefix covers (what the chunk prefills), not by
  their whole length;
* it answers a prompt it already answered greedily since the weights last changed (a game
  whose command did nothing shows the same prompt again) from that answer, without a forward.

This plays the held-out games of a run's policy with both off (the backend before
2026-12-07) and both on (the default), alternating ``--reps`` times in one process, and
checks that both play the same episodes. It prints, per pass, the wall time, the backend's
time, the prompt tokens prefilled, the positions the prefill forwards ran (padding
included) and the success line.

    OMP_NUM_THREADS=2 python benchmarks/bench_eval.py runs/RUN [--episodes 64] [--reps 2]
"""

from __future__ import annotations

import argparse
import platform
import time

from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.config import Config
from algos.eval import open_policy, play
from algos.runs import run_config


def before(backend: HFBackend) -> None:
    """Make ``backend`` chunk by length and keep no answers, as before 2026-12-07."""

    def by_length(prompts: list, todo: list, *, by_new_part: bool) -> list:
        return HFBackend._order(backend, prompts, todo, by_new_part=False)

    backend._order = by_length  # type: ignore[method-assign]
    backend._remember = lambda key, answer: None  # type: ignore[method-assign]


def one_pass(cfg: Config, run: str, episodes: int, old: bool) -> tuple[dict, list]:
    """Play the held-out games once with a new backend; return its row and its episodes."""
    backend = open_policy(f"run:{run}", cfg)
    if old:
        before(backend)
    spent = 0.0
    generate = backend.generate

    def timed(prompts: list, params: SamplingParams) -> list:
        nonlocal spent
        t0 = time.perf_counter()
        try:
            return generate(prompts, params)
        finally:
            spent += time.perf_counter() - t0

    backend.generate = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    played = play(cfg, backend, episodes)
    wall = time.perf_counter() - t0
    row = {
        "path": "before 2026-12-07" if old else "default",
        "wall_s": wall,
        "backend_s": spent,
        "prefilled": backend.prefill_tokens,
        "cells": backend.prefill_cells,
    }
    return row, [(e.task_id, e.won, e.score, e.length, e.valid_actions) for e in played]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="a run directory (its config and latest checkpoint)")
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--reps", type=int, default=2)
    args = p.parse_args()
    cfg = run_config(args.run)
    cfg.run.progress = False
    play(cfg, open_policy(f"run:{args.run}", cfg), 4)  # imports and the games' caches warm
    print(f"{platform.processor() or platform.machine()}; {args.run}, {args.episodes} episodes")
    print("| pass | path | wall s | backend s | prefilled | positions run | positions/token |")
    print("|---|---|---|---|---|---|---|")
    outcomes = {}
    for rep in range(args.reps):
        for old in (True, False) if rep % 2 == 0 else (False, True):
            row, outcome = one_pass(cfg, args.run, args.episodes, old)
            outcomes.setdefault(old, outcome)
            assert outcome == outcomes[old], "a path played other episodes on its second pass"
            print(
                f"| {rep + 1} | {row['path']} | {row['wall_s']:.1f} | {row['backend_s']:.1f} | "
                f"{row['prefilled']} | {row['cells']} | {row['cells'] / row['prefilled']:.2f} |",
                flush=True,
            )
    same = outcomes[True] == outcomes[False]
    print(f"both paths played the same episodes: {same}")


if __name__ == "__main__":
    main()
