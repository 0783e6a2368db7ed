"""The data the Paper Search env runs on: papers, queries and the corpus that holds them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

SPLITS = ("train", "dev", "test")


@dataclass(frozen=True, slots=True)
class Paper:
    """One paper of the corpus.

    Attributes:
        paper_id: Stable id, e.g. ``"syn:2103.00042"`` (generated) or an arXiv id.
        title: Title.
        abstract: Abstract ("" when unknown).
        year: Publication year, or None when unknown.
        references: Ids of the papers it cites that are in the corpus.
        citations: Ids of the corpus papers that cite it, newest first (``expand`` returns
            the first ``citations_limit`` of them, as upstream's citations API does).
        facets: For generated papers, ``field``, ``task``, ``method``, ``dataset`` (canonical
            names) and ``year``; None for real papers.
    """

    paper_id: str
    title: str
    abstract: str = ""
    year: int | None = None
    references: tuple[str, ...] = ()
    citations: tuple[str, ...] = ()
    facets: dict[str, str | int] | None = None

    def to_json(self) -> dict:
        """The JSONL record of this paper (the loader's paper format)."""
        out: dict = {
            "paper_id": self.paper_id,
            "title": self.title,
            "abstract": self.abstract,
            "year": self.year,
            "references": list(self.references),
            "citations": list(self.citations),
        }
        if self.facets is not None:
            out["facets"] = self.facets
        return out


@dataclass(frozen=True, slots=True)
class Query:
    """One search task: a natural-language request and the ids of every relevant paper.

    Attributes:
        query_id: Stable id (the env's ``task_id``).
        text: The request shown to the agent.
        gold: Ids of the relevant papers (never empty).
        split: ``"train"``, ``"dev"`` or ``"test"``.
        facets: For generated queries, the facet conjunction that defines ``gold``
            (``task``, ``method``, ``dataset``, ``min_year``; absent keys are free).
    """

    query_id: str
    text: str
    gold: frozenset[str]
    split: str = "train"
    facets: dict[str, str | int] | None = None

    def to_json(self) -> dict:
        """The JSONL record of this query (the loader's query format)."""
        out: dict = {
            "id": self.query_id,
            "query": self.text,
            "answer_ids": sorted(self.gold),
            "split": self.split,
        }
        if self.facets is not None:
            out["facets"] = self.facets
        return out


def facet_match(query_facets: dict, paper_facets: dict) -> tuple[int, int]:
    """Count how many of a query's facet constraints a paper satisfies.

    Args:
        query_facets: ``task``/``method``/``dataset`` (equality) and ``min_year``
            (``paper year >= min_year``); absent keys are not constraints.
        paper_facets: The paper's facets.

    Returns:
        ``(matched, total)``; a paper is in the gold set exactly when ``matched == total``.
    """
    total = matched = 0
    for key, want in query_facets.items():
        total += 1
        if key == "min_year":
            matched += int(paper_facets.get("year", 0)) >= int(want)
        else:
            matched += paper_facets.get(key) == want
    return matched, total


@dataclass
class Corpus:
    """Papers with their citation graph, and queries by split.

    Attributes:
        papers: All papers; a paper's position is its index in the search index.
        queries: Split name -> queries.
        data_source: ``info["data_source"]`` for tasks from this corpus.
        index_of: Paper id -> position in ``papers`` (built on construction).
    """

    papers: list[Paper]
    queries: dict[str, list[Query]]
    data_source: str
    index_of: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index_of = {p.paper_id: i for i, p in enumerate(self.papers)}

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self.index_of

    def paper(self, paper_id: str) -> Paper:
        """The paper with this id (KeyError naming it when absent)."""
        try:
            return self.papers[self.index_of[paper_id]]
        except KeyError:
            raise KeyError(f"paper id {paper_id!r} is not in the corpus") from None

    def neighbours(self, paper_id: str, citations_limit: int = 30) -> list[str]:
        """What ``expand[paper_id]`` returns: all references, then the first citations.

        Args:
            paper_id: A corpus paper id.
            citations_limit: How many citations to include (upstream: 30); -1 for all.

        Returns:
            Ids, references first, without duplicates.
        """
        paper = self.paper(paper_id)
        cites = paper.citations if citations_limit < 0 else paper.citations[:citations_limit]
        return list(dict.fromkeys((*paper.references, *cites)))

    def all_queries(self) -> Iterable[Query]:
        """Every query of every split."""
        for split in SPLITS:
            yield from self.queries.get(split, [])
