"""Which held-out games the long recipe's four Xeon RL seeds miss: the note in docs/results.md.

Replays the 64 GENERATED held-out games (greedy, as the runs' own evaluation did) with the
clone and the four RL seeds' final checkpoints, and with the searching expert the clone
imitates and the env's expert, and prints which games each misses:

    python docs/results/misses_alfworld_long_xeon.py

Needs ``runs/long12-xeon`` (the recipe as one command) and ``runs/long12-xeon-s1..s3`` (RL
seeds 1-3 from its clone), as docs/results.md ran them. About 5 minutes on 2 cores.
"""

from __future__ import annotations

import copy
from pathlib import Path

from algos.eval import open_policy, play, play_agent
from algos.runs import run_config

RUNS = ["runs/long12-xeon", "runs/long12-xeon-s1", "runs/long12-xeon-s2", "runs/long12-xeon-s3"]
EXPERTS = ("expert:typed_search_expert_action", "expert")


def main() -> None:
    """Print each policy's wins, the games the RL seeds miss, and the experts on those."""
    cfg = run_config(Path(RUNS[0]))
    cfg.run.progress = False
    missed = {}
    for spec in [f"{RUNS[0]}/sft", *RUNS]:
        episodes = play(cfg, open_policy(f"run:{spec}", cfg), 64)
        missed[spec] = {e.task_id for e in episodes if not e.won}
        print(f"{spec}: wins {64 - len(missed[spec])} of 64")
    seeds = [missed[r] for r in RUNS]
    union, common = set.union(*seeds), set.intersection(*seeds)
    print(f"RL seeds: {len(union)} games missed by any, {len(common)} by all four; "
          f"{len(union & missed[RUNS[0] + '/sft'])} of them the clone misses too")  # fmt: skip
    for agent in EXPERTS:
        for steps in (cfg.env.max_steps, 50):
            episodes = play_agent(replace_steps(cfg, steps), agent, 64)
            on = [(e.won, e.length) for e in episodes if e.task_id in union]
            wins = sum(e.won for e in episodes)
            print(f"{agent} at {steps} steps: wins {wins} of 64; on the missed games (won, "
                  f"steps): {on}")  # fmt: skip


def replace_steps(cfg, steps: int):
    """A copy of ``cfg`` whose episodes stop after ``steps`` steps."""
    cfg = copy.deepcopy(cfg)
    cfg.env.max_steps = steps
    return cfg


if __name__ == "__main__":
    main()
