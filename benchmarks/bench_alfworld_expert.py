"""Time to generate expert demonstrations on AgentR1/ALFWorld-v0's train split, with noise.

Each episode plays a different train game (game k, in order: every reset loads a new game).
At every step, with probability ``--noise`` a random admissible command is played instead of
the expert's (an off-path state the expert must recover from), else
``env.unwrapped.expert_action()``; until the game is won or the 50-step limit. Prints the
wall time, where it went (resets, steps, expert calls), wins, and who planned
(``expert_source``: the walkthrough, the task planner, fast-downward).

``--fast-downward-only`` replans with fast-downward alone (``expert_replanner=
"fast_downward"``), as the expert did before the task planner (use it with few
``--episodes``: large kitchens take minutes per replan).

    python benchmarks/bench_alfworld_expert.py                          # 500 episodes, 20%
    python benchmarks/bench_alfworld_expert.py --fast-downward-only --max-minutes 30
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import random
import statistics
import time

from agent_gym.envs.alfworld.env import ALFWorldEnv

STEP_LIMIT = 50  # the registered TimeLimit of AgentR1/ALFWorld-v0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=500, help="demonstrations, one game each")
    p.add_argument("--noise", type=float, default=0.2, help="probability of a random action")
    p.add_argument("--first-game", type=int, default=0, help="train game of the first episode")
    p.add_argument("--seed", type=int, default=0, help="seed of the random actions")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="stop after the episode that passes this wall time and report what was done",
    )
    p.add_argument(
        "--fast-downward-only",
        action="store_true",
        help="replan with fast-downward only (the expert before the task planner)",
    )
    args = p.parse_args()

    env = ALFWorldEnv(
        split="train",
        num_games=args.first_game + args.episodes,
        expert_replanner="fast_downward" if args.fast_downward_only else "task_planner",
    )
    rng = random.Random(args.seed)
    sources: collections.Counter[str] = collections.Counter()
    per_source: dict[str, list[float]] = collections.defaultdict(list)
    timing = {"reset": 0.0, "step": 0.0, "expert": 0.0}
    wins, steps_won, steps_all = 0, [], 0
    print(
        f"# ALFWorld expert demonstrations: {args.episodes} train games from game "
        f"{args.first_game}, noise {args.noise:.0%}"
        f"{', fast-downward only' if args.fast_downward_only else ''}"
    )
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    t_start = time.perf_counter()
    done = 0
    for episode in range(args.episodes):
        task_id = env.games.record(args.first_game + episode).task_id
        t0 = time.perf_counter()
        _, info = env.reset(options={"task_id": task_id})
        timing["reset"] += time.perf_counter() - t0
        terminated, steps = False, 0
        while steps < STEP_LIMIT:
            if rng.random() < args.noise:
                action = rng.choice(info["admissible_actions"])
            else:
                t0 = time.perf_counter()
                action = env.expert_action()
                spent = time.perf_counter() - t0
                timing["expert"] += spent
                sources[env.expert_source] += 1
                per_source[env.expert_source].append(spent)
                if action is None:
                    break
            t0 = time.perf_counter()
            _, _, terminated, _, info = env.step(action)
            timing["step"] += time.perf_counter() - t0
            steps += 1
            if terminated:
                break
        steps_all += steps
        if terminated:
            wins += 1
            steps_won.append(steps)
        done += 1
        if done % 50 == 0:
            print(f"  {done} episodes, {time.perf_counter() - t_start:.0f} s", flush=True)
        if args.max_minutes is not None and time.perf_counter() - t_start > 60 * args.max_minutes:
            print(f"  stopped: past --max-minutes {args.max_minutes:g}")
            break
    total = time.perf_counter() - t_start
    env.close()

    print(
        f"\n{done} episodes in {total:.0f} s ({total / 60:.1f} min, "
        f"{total / done:.2f} s/episode); wins {wins}/{done}; "
        f"{steps_all} steps, median {statistics.median(steps_won or [0])} steps per win"
    )
    print(
        f"time in reset {timing['reset']:.0f} s, env.step {timing['step']:.0f} s, "
        f"expert_action {timing['expert']:.1f} s"
    )
    print("| expert_source | calls | total s | max s |")
    print("|---|---|---|---|")
    for source, calls in sorted(sources.items()):
        spent = per_source[source]
        print(f"| {source} | {calls} | {sum(spent):.2f} | {max(spent):.3f} |")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
