"""Building, caching and loading the corpus and its search index.

Generated corpora are written under ``$AGENT_GYM_HOME/paper_search/generated-<key>/``
(``papers.jsonl``, ``queries.jsonl``, ``index/`` and a ``complete`` marker written last), with
``<key>`` the :func:`agent_gym.paths.params_key` of the generator parameters. A real corpus is
re-read from its JSONL files (they are the user's), and only its index is cached, keyed by the
papers file's path, size and modification time. Every file is written atomically, so
concurrent builders (vector-env workers) never read half a cache; the last one to finish
simply replaces identical files.

Within one process the loaded corpus is shared by every env built with the same data
arguments.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

from agent_gym.datafiles import iter_jsonl
from agent_gym.paths import atomic_write_text, cache_dir, params_key

from .corpus import DATA_SOURCE, generate
from .loader import LoadReport, load_corpus
from .records import SPLITS, Corpus, Paper, Query
from .search import SearchIndex

#: Bump when the generator or the cache layout changes, so old caches are not reused.
CACHE_VERSION = 2

_LOADED: dict[str, tuple[Corpus, SearchIndex]] = {}
_LOCK = threading.Lock()


def doc_text(paper: Paper) -> str:
    """What the search index sees of a paper: title and abstract."""
    return f"{paper.title}. {paper.abstract}"


class _Bar:
    """A tqdm progress bar over named stages, or nothing when ``enabled`` is False."""

    def __init__(self, enabled: bool, total: int, desc: str) -> None:
        self._bar = None
        if enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="stage")

    def stage(self, label: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(label)
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _write_jsonl(path: Path, rows) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def _read_generated(folder: Path) -> Corpus:
    papers = [
        Paper(
            r["paper_id"],
            r["title"],
            r["abstract"],
            r["year"],
            tuple(r["references"]),
            tuple(r["citations"]),
            r["facets"],
        )
        for _, r in iter_jsonl(folder / "papers.jsonl")
    ]
    queries: dict[str, list[Query]] = {s: [] for s in SPLITS}
    for _, r in iter_jsonl(folder / "queries.jsonl"):
        queries[r["split"]].append(
            Query(r["id"], r["query"], frozenset(r["answer_ids"]), r["split"], r["facets"])
        )
    return Corpus(papers=papers, queries=queries, data_source=DATA_SOURCE)


def generated_folder(n_papers: int, n_queries: int, seed: int) -> Path:
    """The cache folder of a generated corpus (not created)."""
    key = params_key(
        {"n_papers": n_papers, "n_queries": n_queries, "seed": seed, "version": CACHE_VERSION}
    )
    return cache_dir("paper_search", create=False) / f"generated-{key}"


def build_generated(
    n_papers: int, n_queries: int, seed: int, progress: bool = False
) -> tuple[Corpus, SearchIndex, bool]:
    """Load the generated corpus from the cache, building it first if needed.

    Returns:
        ``(corpus, index, built)`` where ``built`` says whether this call built it.
    """
    folder = generated_folder(n_papers, n_queries, seed)
    if (folder / "complete").exists():
        return _read_generated(folder), SearchIndex.load(folder / "index"), False
    bar = _Bar(progress, total=6, desc=f"Paper Search: generating {n_papers} papers")
    try:
        corpus = generate(n_papers, n_queries, seed, progress=bar.stage)
        bar.stage("search index")
        index = SearchIndex.build([doc_text(p) for p in corpus.papers])
        bar.stage("writing cache")
        folder.mkdir(parents=True, exist_ok=True)
        _write_jsonl(folder / "papers.jsonl", (p.to_json() for p in corpus.papers))
        _write_jsonl(folder / "queries.jsonl", (q.to_json() for q in corpus.all_queries()))
        index.save(folder / "index")
        atomic_write_text(folder / "complete", "ok\n")
    finally:
        bar.close()
    return corpus, index, True


def build_jsonl(
    papers_path: str | os.PathLike[str],
    queries: str | os.PathLike[str] | dict | None,
    progress: bool = False,
) -> tuple[Corpus, SearchIndex, LoadReport]:
    """Load a real corpus from JSONL files and its (cached) search index."""
    corpus, report = load_corpus(papers_path, queries)
    path = Path(papers_path).resolve()
    stat = path.stat()
    key = params_key(
        {
            "path": str(path),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "version": CACHE_VERSION,
        }
    )
    folder = cache_dir("paper_search", create=False) / f"jsonl-{key}"
    if (folder / "complete").exists():
        return corpus, SearchIndex.load(folder / "index"), report
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=len(corpus.papers), desc=f"Paper Search: indexing {path.name}", unit="paper"
        )
    done = [0]

    def tick(n: int) -> None:
        if bar is not None:
            bar.update(n - done[0])
            done[0] = n

    try:
        index = SearchIndex.build([doc_text(p) for p in corpus.papers], progress=tick)
        folder.mkdir(parents=True, exist_ok=True)
        index.save(folder / "index")
        atomic_write_text(folder / "complete", "ok\n")
    finally:
        if bar is not None:
            bar.close()
    return corpus, index, report


def get_corpus(
    data: str | os.PathLike[str],
    queries: str | os.PathLike[str] | dict | None,
    *,
    n_papers: int,
    n_queries: int,
    seed: int,
    progress: bool = False,
    on_report: Callable[[LoadReport], None] | None = None,
) -> tuple[Corpus, SearchIndex]:
    """The corpus and index for the env's data arguments, loaded once per process.

    Args:
        data: ``"generated"`` or a papers JSONL path.
        queries: Queries file(s) for real data; must be None for generated data.
        n_papers: Generated corpus size.
        n_queries: Generated query count.
        seed: Generator seed.
        progress: Show a progress bar while building.
        on_report: Called with what loading real data dropped (first load only).
    """
    if str(data) == "generated":
        if queries is not None:
            raise ValueError(
                "queries= is only for data=<papers JSONL>; the generated corpus "
                "brings its own queries"
            )
        key = json.dumps(["generated", n_papers, n_queries, seed])
    else:
        key = json.dumps(
            [
                str(Path(data).resolve()),
                str(queries)
                if not isinstance(queries, dict)
                else sorted((k, str(v)) for k, v in queries.items()),
            ]
        )
    with _LOCK:
        if key not in _LOADED:
            if str(data) == "generated":
                corpus, index, _ = build_generated(n_papers, n_queries, seed, progress)
            else:
                corpus, index, report = build_jsonl(data, queries, progress)
                if on_report is not None:
                    on_report(report)
            _LOADED[key] = (corpus, index)
        return _LOADED[key]
