"""Memory of AgentR1/ALFWorld-v0 over many episodes of distinct games, in one process.

Every episode resets to a game this process has not played before (train split, in order) and
takes a few random admissible steps, as a rollout worker that walks the train split does. The
resident set size (VmRSS, not the peak) is printed at checkpoints. ``--keep-interned`` turns
off the fix (TextWorld's intern table of logic objects is then never emptied), which is the
behaviour before it.

    python benchmarks/bench_alfworld_memory.py                    # 1,000 episodes, the fix on
    python benchmarks/bench_alfworld_memory.py --keep-interned    # the same without the fix
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import time

from agent_gym.envs.alfworld import engine
from agent_gym.envs.alfworld.env import ALFWorldEnv


def rss_mb() -> float:
    """Current resident set size in MB (Linux ``/proc``; elsewhere the peak)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def interned() -> int:
    import mementos.core

    return len(mementos.core._memento_cache)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=1000, help="episodes, each a new game")
    p.add_argument("--steps", type=int, default=5, help="random admissible steps per episode")
    p.add_argument("--warmup", type=int, default=50, help="episodes before the baseline RSS")
    p.add_argument(
        "--keep-interned",
        action="store_true",
        help="never empty TextWorld's intern table (the behaviour before the fix)",
    )
    args = p.parse_args()
    if args.keep_interned:
        engine.forget_interned_logic = lambda: 0  # Engine.load calls it through the module

    env = ALFWorldEnv(split="train", num_games=max(args.episodes, 6))
    rng = random.Random(0)
    checkpoints = {args.warmup, 100, 250, 500, args.episodes} - {0}
    print(
        f"# ALFWorld RSS over {args.episodes} distinct train games, {args.steps} random steps "
        f"each ({'fix OFF: --keep-interned' if args.keep_interned else 'fix on'})"
    )
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M')}"
    )
    print("| episodes | RSS MB | interned logic objects | s |")
    print("|---|---|---|---|")
    t0 = time.perf_counter()
    baseline = rss_mb()
    for ep in range(1, args.episodes + 1):
        _, info = env.reset(options={"task_id": env.games.record(ep - 1).task_id})
        for _ in range(args.steps):
            *_, terminated, _, info = env.step(rng.choice(info["admissible_actions"]))
            if terminated:
                break
        if ep == args.warmup:
            baseline = rss_mb()
        if ep in checkpoints:
            print(
                f"| {ep} | {rss_mb():.0f} | {interned()} | {time.perf_counter() - t0:.0f} |",
                flush=True,
            )
    env.close()
    print(
        f"\nRSS growth from episode {args.warmup} to {args.episodes}: "
        f"{rss_mb() - baseline:.0f} MB; load average at the end {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
