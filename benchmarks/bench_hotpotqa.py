"""HotpotQA-v0 search benchmark: index build time and memory, and search step latency.

Two corpora:

* the default generated corpus (countryinfo paragraphs), queried through ``env.step`` with the
  entities and supporting titles of the questions;
* a synthetic fullwiki corpus of ``--passages`` passages (default 100,000; Zipf-distributed
  words, 40-80 per passage), written as JSONL and opened through the official fullwiki path
  (``data=questions.json, corpus=passages.jsonl``), queried with 3-6 word queries.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_hotpotqa.py            # both, prints a table
    OMP_NUM_THREADS=1 python benchmarks/bench_hotpotqa.py --passages 20000 --queries 200
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_steps(env, actions: list[str]) -> list[float]:
    """Milliseconds per ``env.step`` for each action (reset when an episode ends)."""
    out = []
    for action in actions:
        start = time.perf_counter()
        _, _, term, trunc, _ = env.step(action)
        out.append((time.perf_counter() - start) * 1000)
        if term or trunc:
            env.reset()
    return out


def summary(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    return f"{statistics.median(ms):.2f} / {p95:.2f}"


def bench_default(n_queries: int, rows: list[tuple[str, str]]) -> None:
    from agent_gym.envs.hotpotqa import generated
    from agent_gym.envs.hotpotqa.env import HotpotQAEnv
    from agent_gym.envs.hotpotqa.search import BM25Index
    from agent_gym.envs.hotpotqa.sources import _document

    start = time.perf_counter()
    passages, questions = generated.build()
    t_gen = time.perf_counter() - start
    start = time.perf_counter()
    BM25Index.build([_document(p) for p in passages])
    t_index = time.perf_counter() - start
    rows.append(("default: passages / questions", f"{len(passages):,} / {len(questions):,}"))
    rows.append(("default: generate questions + paragraphs (s)", f"{t_gen:.2f}"))
    rows.append(("default: build BM25 index (s)", f"{t_index:.2f}"))

    from agent_gym.envs.hotpotqa import sources

    for label in ("empty cache: builds and saves everything", "cache on disk"):
        sources._OPEN.clear()
        env = HotpotQAEnv(force_first_search=False)
        start = time.perf_counter()
        env.reset(seed=0)
        rows.append((f"default: first reset, {label} (s)", f"{time.perf_counter() - start:.2f}"))
    rng = random.Random(0)
    queries = [rng.choice(q.entities + q.supporting_titles) for q in questions]
    queries = (queries * (n_queries // len(queries) + 1))[:n_queries]
    one = timed_steps(env, [f"search[{q}]" for q in queries])
    rows.append(("default: step, 1 search, median / p95 (ms)", summary(one)))
    four = timed_steps(
        env, ["\n".join(f"search[{q}]" for q in queries[i : i + 4]) for i in range(0, 400, 4)]
    )
    rows.append(("default: step, 4 parallel searches, median / p95 (ms)", summary(four)))
    env.close()


def write_synthetic(folder: Path, n: int, seed: int = 0) -> tuple[Path, Path, list[str]]:
    """A Zipf-worded JSONL corpus of ``n`` passages, a 1-question file, and the vocabulary."""
    rng = random.Random(seed)
    vocab = [f"w{i}" + "".join(rng.choice("aeioukrstnlm") for _ in range(3)) for i in range(50_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    cum = list(itertools.accumulate(weights))
    corpus = folder / "passages.jsonl"
    with open(corpus, "w", encoding="utf-8") as fh:
        for i in range(n):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(40, 80))
            fh.write(json.dumps({"title": f"Page {i}", "text": " ".join(words)}) + "\n")
    data = folder / "questions.json"
    record = {"_id": "bench", "question": "benchmark question", "answer": "x"}
    data.write_text(json.dumps([record]), encoding="utf-8")
    return data, corpus, [v for v, w in zip(vocab, weights) if w > 1 / 20_000]


def bench_large(n: int, n_queries: int, rows: list[tuple[str, str]]) -> None:
    from agent_gym.envs.hotpotqa import sources
    from agent_gym.envs.hotpotqa.env import HotpotQAEnv

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data, corpus, vocab = write_synthetic(Path(tmp), n)
        rows.append((f"{n:,}: write synthetic JSONL (s)", f"{time.perf_counter() - start:.1f}"))
        rss0 = rss_mb()
        start = time.perf_counter()
        HotpotQAEnv.prepare(progress=False, data=str(data), corpus=str(corpus))
        rows.append((f"{n:,}: load + build + save index (s)", f"{time.perf_counter() - start:.1f}"))
        rows.append((f"{n:,}: peak RSS growth while building (MiB)", f"{rss_mb() - rss0:.0f}"))
        index_dir = sources.corpus_index_dir(corpus)
        size = sum(f.stat().st_size for f in index_dir.iterdir()) / 2**20
        rows.append((f"{n:,}: index on disk (MiB)", f"{size:.0f}"))

        # A fresh process-level cache: what a new env worker pays to load the cached index.
        sources._OPEN.clear()
        env = HotpotQAEnv(data=str(data), corpus=str(corpus), force_first_search=False)
        start = time.perf_counter()
        env.reset(seed=0)
        rows.append((f"{n:,}: first reset, index cached (s)", f"{time.perf_counter() - start:.2f}"))
        rng = random.Random(1)
        queries = [" ".join(rng.sample(vocab, rng.randint(3, 6))) for _ in range(n_queries)]
        ms = timed_steps(env, [f"search[{q}]" for q in queries])
        rows.append((f"{n:,}: step, 1 search, median / p95 (ms)", summary(ms)))
        # Worst case: the five most frequent words, whose posting lists cover most passages.
        ms = timed_steps(env, [f"search[{' '.join(vocab[:5])}]"] * n_queries)
        rows.append((f"{n:,}: step, 5 most frequent words, median / p95 (ms)", summary(ms)))
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000, help="size of the large corpus")
    parser.add_argument("--queries", type=int, default=500, help="timed searches per corpus")
    parser.add_argument("--skip-large", action="store_true", help="only the default corpus")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as home:
        # A private cache, so that the "empty cache" figures are real and nothing is left behind.
        os.environ["AGENT_GYM_HOME"] = home
        bench_default(args.queries, rows)
        if not args.skip_large:
            bench_large(args.passages, args.queries, rows)
    print(
        f"machine: {cpu_name()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}"
    )
    print(f"date: {time.strftime('%Y-%m-%d')}\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
