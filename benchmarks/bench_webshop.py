"""WebShop figures: catalogue build, index, search latency, and random-policy steps/s.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_webshop.py            # 1k and 100k catalogues
    OMP_NUM_THREADS=1 python benchmarks/bench_webshop.py --large 20000 --steps 2000

Builds into a temporary $AGENT_GYM_HOME so the timings include generation and indexing.
Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time


def _build(num_products: int) -> tuple[float, float, float, object]:
    from agent_gym.envs.webshop.catalog import load_catalogue
    from agent_gym.envs.webshop.search import SearchIndex
    from agent_gym.envs.webshop.store import _generated_dir, _write_generated

    t0 = time.perf_counter()
    directory = _generated_dir(num_products, 6, 0)
    _write_generated(directory, num_products, 6, 0, bar=False)
    t1 = time.perf_counter()
    catalogue = load_catalogue(directory)
    t2 = time.perf_counter()
    index = SearchIndex.build(catalogue.products)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2, (catalogue, index)


def _search_ms(catalogue, index, n: int = 200) -> float:
    rng = random.Random(0)
    goals = rng.sample(catalogue.goals, min(n, len(catalogue.goals)))
    times = []
    for g in goals:
        t = time.perf_counter()
        index.search(g.instruction)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def _random_steps_per_s(steps: int) -> float:
    import gymnasium as gym

    import agent_gym  # noqa: F401

    env = gym.make("AgentR1/WebShop-v0")
    rng = random.Random(0)
    _, info = env.reset(seed=0)
    words = ["red", "shampoo", "lamp", "chair", "black", "organic", "cable", "large", "pack"]
    t = time.perf_counter()
    for _ in range(steps):
        action = rng.choice(info["admissible_actions"] or ["search[x]"])
        if action.startswith("search["):
            action = f"search[{' '.join(rng.sample(words, 3))}]"
        _, _, term, trunc, info = env.step(action)
        if term or trunc:
            _, info = env.reset(seed=rng.randrange(10**9))
    return steps / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="default catalogue size")
    parser.add_argument("--large", type=int, default=100_000, help="large catalogue size")
    parser.add_argument("--steps", type=int, default=5000, help="random-policy steps")
    args = parser.parse_args()
    os.environ["AGENT_GYM_HOME"] = tempfile.mkdtemp(prefix="bench_webshop_")
    rows = []
    for n in (args.small, args.large):
        gen, load, idx, (catalogue, index) = _build(n)
        rows.append((n, gen, load, idx, _search_ms(catalogue, index)))
    steps = _random_steps_per_s(args.steps)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    print()
    print("| products | generate + write (s) | load (s) | index (s) | search median (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for n, gen, load, idx, ms in rows:
        print(f"| {n:,} | {gen:.2f} | {load:.2f} | {idx:.2f} | {ms:.1f} |")
    print()
    print(
        f"random policy on the {args.small:,}-product catalogue: {steps:,.0f} steps/s "
        f"({args.steps:,} steps, one process)"
    )


if __name__ == "__main__":
    main()
