"""An oracle that knows the gold set and plans the calls that find it (``expert_action``).

Each step it greedily picks up to ``max_calls`` calls, each covering the most gold papers not
yet found: expanding a paper already in the pool (it knows the citation graph), searching the
query text, or searching the title of a missing gold paper (it checks the index's answer
first, and falls back to the title with the abstract's start). Ties go to ``expand``, the
cheaper tool. It is for tests and as an upper-bound baseline, not a model of a real agent.
"""

from __future__ import annotations

from collections.abc import Callable

from .accounting import normalise_query
from .actions import MAX_ARG_CHARS
from .records import Corpus, Query
from .search import SearchIndex


def plan_calls(
    query: Query,
    pool_ids: set[str],
    expanded: set[str],
    searched: set[str],
    corpus: Corpus,
    index: SearchIndex,
    *,
    max_calls: int = 5,
    top_k: int = 10,
    repeat_key: Callable[[str], str] = normalise_query,
    linked: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """The oracle's calls for the next step.

    Args:
        query: The task.
        pool_ids: Ids in the pool now.
        expanded: Ids already expanded.
        searched: Repeat keys of the queries already searched.
        corpus: The corpus (for the citation graph and titles).
        index: The search index (to check what a search would return).
        max_calls: Calls per step.
        top_k: Results per search.
        repeat_key: How the env compares searches (the accounting's ``repeat_key``).
        linked: What ``expand[id]`` adds; default: the references and 30 citations.

    Returns:
        Call strings; empty when every gold paper is in the pool or nothing can find more.
    """
    missing = set(query.gold) - pool_ids
    if not missing:
        return []
    linked = linked or (lambda pid: corpus.neighbours(pid))
    candidates: list[tuple[str, set[str], int]] = []  # (call, gold it adds, tie-break rank)
    for pid in sorted(pool_ids - expanded):
        gain = set(linked(pid)) & missing
        if gain:
            candidates.append((f"expand[{pid}]", gain, 0))

    def search_gain(text: str) -> set[str]:
        return {corpus.papers[i].paper_id for i in index.search(text, top_k)} & missing

    seen = set(searched)
    texts = [query.text]
    for pid in sorted(missing):
        paper = corpus.paper(pid)
        texts.append(paper.title)
        # A generic title may not find its paper; the title with the abstract's start does.
        texts.append(f"{paper.title} {paper.abstract}"[:MAX_ARG_CHARS])
    for text in texts:
        text = " ".join(text.split())  # one call per line: no line breaks inside
        key = repeat_key(text)
        if key in seen or not key:
            continue
        seen.add(key)
        gain = search_gain(text)
        if gain:
            candidates.append((f"search[{text}]", gain, 1))
    calls: list[str] = []
    remaining = set(missing)
    while remaining and len(calls) < max_calls:
        best = max(
            candidates,
            key=lambda c: (len(c[1] & remaining), -c[2]),
            default=None,
        )
        if best is None or not best[1] & remaining:
            break
        calls.append(best[0])
        remaining -= best[1]
        candidates.remove(best)
    return calls
