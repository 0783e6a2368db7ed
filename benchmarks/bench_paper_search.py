"""Paper Search: corpus build time and memory, and the latency of a 5-call step.

Each corpus size runs in its own subprocess so that peak memory (``ru_maxrss``) belongs to that
size alone. For a size the script generates the corpus, builds the BM25 index, then plays
episodes on the ``test`` split and times steps of five calls: five searches, five expands,
and a mix (two searches, three expands). The 100,000-paper corpus is written to JSONL and
loaded through the real-data loader (``data=<path>``), which is how such a corpus would
arrive; its query gold sets are larger (``max_gold=400``) since facet clusters grow with
the corpus.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_paper_search.py             # 5,000 and 100,000
    OMP_NUM_THREADS=1 python benchmarks/bench_paper_search.py --sizes 5000 --episodes 50
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _time_steps(env, episodes: int) -> dict[str, list[float]]:
    """Step latencies in ms, by kind of 5-call step."""
    out: dict[str, list[float]] = {"5 searches": [], "5 expands": [], "2 search + 3 expand": []}
    queries = env.corpus.queries["test"]
    for ep in range(episodes):
        _, info = env.reset(options={"task_id": queries[ep % len(queries)].query_id})
        words = info["task"].rstrip(".?").split()
        searches = [" ".join(words[i:]) for i in range(5)]
        t = time.perf_counter()
        _, _, _, _, info = env.step("\n".join(f"search[{q}]" for q in searches))
        out["5 searches"].append(1000 * (time.perf_counter() - t))
        expands = [a for a in info["admissible_actions"] if a.startswith("expand[")]
        t = time.perf_counter()
        _, _, _, _, info = env.step("\n".join(expands[:5]))
        out["5 expands"].append(1000 * (time.perf_counter() - t))
        expands = [a for a in info["admissible_actions"] if a.startswith("expand[")]
        mixed = [f"search[{' '.join(words[:-i])}]" for i in (1, 2)] + expands[:3]
        t = time.perf_counter()
        env.step("\n".join(mixed))
        out["2 search + 3 expand"].append(1000 * (time.perf_counter() - t))
    return out


def run_one(n_papers: int, episodes: int) -> dict:
    """Build a corpus of ``n_papers`` and time steps on it (runs in a fresh process)."""
    from agent_gym.envs.paper_search import cache
    from agent_gym.envs.paper_search.corpus import generate
    from agent_gym.envs.paper_search.env import PaperSearchEnv
    from agent_gym.envs.paper_search.search import SearchIndex

    base = _rss_mib()
    big = n_papers > 20_000
    t = time.perf_counter()
    corpus = generate(n_papers, 1000 if not big else 200, seed=0, max_gold=20 if not big else 400)
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    SearchIndex.build([cache.doc_text(p) for p in corpus.papers])
    index_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AGENT_GYM_HOME"] = tmp  # measure a cold cache, never touch the user's
        if big:
            papers = Path(tmp) / "papers.jsonl"
            queries = Path(tmp) / "queries.jsonl"
            papers.write_text("".join(json.dumps(p.to_json()) + "\n" for p in corpus.papers))
            queries.write_text(
                "".join(json.dumps(q.to_json()) + "\n" for q in corpus.all_queries())
            )
            kwargs = {"data": papers, "queries": queries, "split": "test"}
        else:
            kwargs = {"split": "test", "n_papers": n_papers}
        del corpus
        t = time.perf_counter()
        env = PaperSearchEnv(**kwargs)
        env.reset(seed=0)
        first_reset_s = time.perf_counter() - t
        lat = _time_steps(env, episodes)
    return {
        "n_papers": n_papers,
        "generate_s": gen_s,
        "index_s": index_s,
        "first_reset_s": first_reset_s,
        "peak_rss_mib": _rss_mib(),
        "start_rss_mib": base,
        "latency": {
            k: {"median": statistics.median(v), "p90": sorted(v)[int(0.9 * (len(v) - 1))]}
            for k, v in lat.items()
        },
    }


def main() -> int:
    """Run every size in a subprocess and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 100_000])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.episodes)))
        return 0
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; {args.episodes} episodes per size"
    )
    header = (
        f"{'papers':>8} {'generate s':>10} {'index s':>8} {'1st reset s':>11} "
        f"{'peak MiB':>8}  step (5 calls) median / p90 ms"
    )
    print(header + "\n" + "-" * (len(header) + 30))
    for n in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--episodes", str(args.episodes)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        lat = "; ".join(f"{k}: {v['median']:.1f} / {v['p90']:.1f}" for k, v in r["latency"].items())
        print(
            f"{n:>8} {r['generate_s']:>10.2f} {r['index_s']:>8.2f} "
            f"{r['first_reset_s']:>11.2f} {r['peak_rss_mib']:>8.0f}  {lat}"
        )
    print(
        "\n1st reset: a fresh env on a cold cache (5,000: generate + index + write cache; "
        "100,000: read JSONL + index + write cache)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
