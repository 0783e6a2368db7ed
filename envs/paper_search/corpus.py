"""The seeded generator of the default corpus: synthetic papers, a citation graph and queries.

Everything here is generated (``data_source = "generated:paper-corpus"``); paper ids start
with ``syn:`` so they are never mistaken for arXiv ids. The design follows
PaperScout's setting (docs/datasets.md, Paper Search):

* each paper gets facets (field, task, dataset, method, year), drawn with Zipf-like
  popularity so some combinations are crowded and others rare;
* titles and abstracts are written by :mod:`.phrasing` with aliases and distractors;
* a paper cites only earlier papers, preferring ones that share its facets: the most recent
  earlier paper with the same (task, method, dataset) almost always, then papers sharing the
  task and method, the task, the method, the field, and a few popular papers
  (preferential attachment), so the papers relevant to one query form a connected cluster;
* a query is a facet conjunction written in natural language, and its gold set is every paper
  that satisfies it, so recall is exact.

The generator is pure Python over ``random.Random(seed)``: the same parameters give the same
corpus on every platform.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable

from .phrasing import write_paper, write_query
from .records import SPLITS, Corpus, Paper, Query, facet_match
from .vocab import FIELDS, YEARS, Facet

DATA_SOURCE = "generated:paper-corpus"

#: Accepted gold-set sizes: at least 2 so a query is a search, at most 20 so five steps of
#: five calls can find them all.
MIN_GOLD, MAX_GOLD = 2, 20

#: Share of each split, in the order of :data:`SPLITS`.
SPLIT_SHARES = (0.8, 0.1, 0.1)

#: Query kinds (the facets they constrain) and how often each is drawn.
_KINDS = (
    (("method", "task", "dataset"), 0.45),
    (("method", "task"), 0.15),
    (("method", "task", "min_year"), 0.2),
    (("task", "dataset", "min_year"), 0.2),
)


def _zipf(n: int, s: float = 0.8) -> list[float]:
    return [1.0 / (i + 1) ** s for i in range(n)]


def _phrase(rng: random.Random, facet: Facet) -> str:
    """The canonical name half of the time, else one of the aliases."""
    if not facet.aliases or rng.random() < 0.5:
        return facet.name
    return rng.choice(facet.aliases)


def _draw_facets(rng: random.Random, n: int) -> list[dict]:
    """Facets and text phrasings of ``n`` papers, in chronological order."""
    year_weights = [1.18 ** (y - YEARS.start) for y in YEARS]
    rows = []
    for _ in range(n):
        field = rng.choice(FIELDS)
        task = rng.choices(field.tasks, _zipf(len(field.tasks)))[0]
        method = rng.choices(field.methods, _zipf(len(field.methods)))[0]
        dataset = rng.choices(task.datasets, _zipf(len(task.datasets), 1.0))[0]
        year = rng.choices(YEARS, year_weights)[0]
        rows.append((year, rng.randint(1, 12), field, task, method, dataset))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [
        {"year": y, "month": m, "field": f, "task": t, "method": me, "dataset": d}
        for y, m, f, t, me, d in rows
    ]


def _cite(rng: random.Random, rows: list[dict]) -> list[list[int]]:
    """References of every paper (indices of earlier papers), facet-preferential."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    popular: list[int] = []  # one entry per citation received: preferential attachment
    refs: list[list[int]] = []
    for i, r in enumerate(rows):
        keys = {
            "triple": ("tmd", r["task"].name, r["method"].name, r["dataset"]),
            "task_method": ("tm", r["task"].name, r["method"].name),
            "task": ("t", r["task"].name),
            "method": ("m", r["field"].name, r["method"].name),
            "field": ("f", r["field"].name),
        }
        chosen: dict[int, None] = {}
        triple = groups[keys["triple"]]
        if triple and rng.random() < 0.9:
            chosen[triple[-1]] = None  # the cluster's chain: cite the latest sibling
        for key, k in (("triple", 1), ("task_method", 2), ("task", 2), ("method", 1), ("field", 1)):
            pool = groups[keys[key]]
            for _ in range(k):
                if pool and rng.random() < 0.7:
                    chosen[rng.choice(pool)] = None
        for _ in range(2):
            if popular and rng.random() < 0.5:
                chosen[rng.choice(popular)] = None
        refs.append(list(chosen))
        popular.extend(chosen)
        for key in keys.values():
            groups[key].append(i)
    return refs


def _paper_ids(rows: list[dict]) -> list[str]:
    """arXiv-like ids ``syn:YYMM.NNNNN`` numbered within each month."""
    counter: dict[tuple[int, int], int] = defaultdict(int)
    ids = []
    for r in rows:
        ym = (r["year"], r["month"])
        counter[ym] += 1
        ids.append(f"syn:{r['year'] % 100:02d}{r['month']:02d}.{counter[ym]:05d}")
    return ids


def _write_papers(rng: random.Random, rows: list[dict], refs: list[list[int]]) -> list[Paper]:
    ids = _paper_ids(rows)
    cited_by: list[list[int]] = [[] for _ in rows]
    for i, rs in enumerate(refs):
        for j in rs:
            cited_by[j].append(i)
    papers = []
    for i, r in enumerate(rows):
        field, task, method = r["field"], r["task"], r["method"]
        other_methods = [m for m in field.methods if m.name != method.name]
        other_tasks = [t for t in field.tasks if t.name != task.name]
        other_datasets = [d for d in task.datasets if d != r["dataset"]]
        title, abstract = write_paper(
            rng,
            field=field.name,
            task=_phrase(rng, task),
            method=_phrase(rng, method),
            dataset=r["dataset"],
            other_method=rng.choice(other_methods).name,
            other_dataset=rng.choice(other_datasets),
            other_task=rng.choice(other_tasks).name,
        )
        papers.append(
            Paper(
                paper_id=ids[i],
                title=title,
                abstract=abstract,
                year=r["year"],
                references=tuple(ids[j] for j in sorted(refs[i], reverse=True)),
                # newest first, as a citations API lists them
                citations=tuple(ids[j] for j in sorted(cited_by[i], reverse=True)),
                facets={
                    "field": field.name,
                    "task": task.name,
                    "method": method.name,
                    "dataset": r["dataset"],
                    "year": r["year"],
                },
            )
        )
    return papers


def _write_queries(
    rng: random.Random, papers: list[Paper], n: int, max_gold: int = MAX_GOLD
) -> list[Query]:
    """Draw ``n`` distinct facet-conjunction queries with exact gold sets."""
    by_key: dict[tuple, list[Paper]] = defaultdict(list)
    for p in papers:
        f = p.facets
        by_key[("method", "task", f["method"], f["task"])].append(p)
        by_key[("task", "dataset", f["task"], f["dataset"])].append(p)
    kinds, weights = zip(*_KINDS)
    seen: set[tuple] = set()
    out: list[Query] = []
    attempts = 0
    while len(out) < n and attempts < 50 * n:
        attempts += 1
        anchor = rng.choice(papers).facets
        kind = rng.choices(kinds, weights)[0]
        facets: dict[str, str | int] = {k: anchor[k] for k in kind if k != "min_year"}
        if "min_year" in kind:
            facets["min_year"] = anchor["year"] - rng.randint(0, 3)
        key = tuple(sorted(facets.items()))
        if key in seen:
            continue
        bucket = (
            ("method", "task", facets["method"], facets["task"])
            if "method" in facets
            else ("task", "dataset", facets["task"], facets["dataset"])
        )
        gold = frozenset(
            p.paper_id for p in by_key[bucket] if facet_match(facets, p.facets)[0] == len(facets)
        )
        if not MIN_GOLD <= len(gold) <= max_gold:
            continue
        seen.add(key)
        out.append(Query(query_id="", text=write_query(rng, facets), gold=gold, facets=facets))
    if len(out) < n:
        raise ValueError(
            f"could draw only {len(out)} of n_queries={n} distinct queries with "
            f"{MIN_GOLD}-{max_gold} relevant papers from {len(papers)} papers; ask for fewer "
            "queries, or raise max_gold for a large corpus"
        )
    return out


def generate(
    n_papers: int = 5000,
    n_queries: int = 1000,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    max_gold: int = MAX_GOLD,
) -> Corpus:
    """Generate the synthetic corpus.

    Args:
        n_papers: Number of papers (at least 200).
        n_queries: Number of queries over all splits (at least 10), shared 80/10/10 between
            train, dev and test in generation order.
        seed: Seed of the generator.
        progress: Called with a short label as each stage starts (for progress bars).
        max_gold: Largest gold set accepted. The default suits the default size; facet
            clusters grow with the corpus, so 100,000 papers need a few hundred.

    Returns:
        A :class:`Corpus` labelled ``generated:paper-corpus``.

    Raises:
        ValueError: On too few papers or queries, or when not enough distinct queries exist.

    Example:
        >>> c = generate(n_papers=400, n_queries=20, seed=1)
        >>> len(c.papers), sum(len(q) for q in c.queries.values())
        (400, 20)
        >>> c.papers[0].paper_id.startswith("syn:")
        True
    """
    if n_papers < 200 or n_queries < 10:
        raise ValueError(
            f"n_papers={n_papers}, n_queries={n_queries}: the generator needs at least 200 "
            "papers and 10 queries"
        )
    note = progress or (lambda _label: None)
    rng = random.Random(seed)
    note("facets")
    rows = _draw_facets(rng, n_papers)
    note("citations")
    refs = _cite(rng, rows)
    note("text")
    papers = _write_papers(rng, rows, refs)
    note("queries")
    drawn = _write_queries(rng, papers, n_queries, max_gold)
    queries: dict[str, list[Query]] = {s: [] for s in SPLITS}
    bounds = [round(n_queries * sum(SPLIT_SHARES[: i + 1])) for i in range(len(SPLITS))]
    for i, q in enumerate(drawn):
        split = next(s for s, b in zip(SPLITS, bounds) if i < b)
        queries[split].append(
            Query(query_id=f"gen-{i:04d}", text=q.text, gold=q.gold, split=split, facets=q.facets)
        )
    return Corpus(papers=papers, queries=queries, data_source=DATA_SOURCE)
