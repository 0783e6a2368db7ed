"""JSONL loaders for a real paper corpus and real queries (including PaSa-style exports).

Papers file, one JSON object per line::

    {"paper_id": "2104.08663", "title": "...", "abstract": "...", "year": 2021,
     "references": ["1706.03762", ...], "citations": ["2203.01234", ...]}

``paper_id`` (alias ``arxiv_id`` or ``id``) and ``title`` are required; ``abstract``,
``year``, ``references`` and ``citations`` are optional. References to papers outside the file
are dropped. Without ``citations`` a paper's citations are the corpus papers that list it in
their references, newest first.

Queries file, one JSON object per line, either our format::

    {"id": "q1", "query": "...", "answer_ids": ["2104.08663"], "split": "test"}
    {"query": "...", "answer_titles": ["Attention Is All You Need"]}

or PaSa's (AutoScholarQuery / RealScholarQuery)::

    {"qid": "...", "question": "...", "answer": ["title", ...],
     "answer_arxiv_id": ["1706.03762", ...], "source_meta": {...}}

Every id that is an arXiv id is normalised with :func:`normalise_paper_id` (an ``arXiv:``
prefix and a version suffix such as ``v5`` go), wherever it appears: ``paper_id``,
``references``, ``citations`` and answer ids. ``1706.03762v5`` in the papers file and
``1706.03762`` in a reference (or the other way round) are thus the same paper, and the citation
edge is kept. Other ids (``syn:...``, Semantic Scholar hashes) are only stripped of outer space.
Answer titles are matched by normalised title (lower case, alphanumerics only). Answers missing
from the corpus are dropped; a query none of whose answers is in the corpus is skipped (both
are counted in :class:`LoadReport`). Malformed input, including a file that is not UTF-8,
raises :class:`DataFormatError` naming file, line and field.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_gym.datafiles import DataFileError, iter_jsonl

from .records import SPLITS, Corpus, Paper, Query

# New-style (``1706.03762``, since 2007) and old-style (``hep-th/9901001``, ``math.GT/0309136``)
# arXiv identifiers, with an optional ``arXiv:`` prefix and version suffix.
_ARXIV = re.compile(r"(?i:arxiv:)?(\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


class DataFormatError(DataFileError):
    """A data file that does not follow the documented format (or is not UTF-8 JSONL)."""


@dataclass
class LoadReport:
    """What loading dropped, for the user to check.

    Attributes:
        dangling_references: References to ids not in the papers file.
        unresolved_answers: Query answers (ids or titles) not found in the corpus.
        skipped_queries: Queries left with no answer in the corpus.
    """

    dangling_references: int = 0
    unresolved_answers: int = 0
    skipped_queries: int = 0


def normalise_title(title: str) -> str:
    """Lower case, alphanumerics only, single spaces: how answer titles are matched.

    Example:
        >>> normalise_title("  Attention Is All You Need! ")
        'attention is all you need'
    """
    return _NON_ALNUM.sub(" ", title.lower()).strip()


def normalise_paper_id(paper_id: str) -> str:
    """The form in which paper ids are stored and compared.

    arXiv ids lose an ``arXiv:`` prefix and their version suffix; any other id is only
    stripped of outer space.

    Example:
        >>> normalise_paper_id(" 1706.03762v5 "), normalise_paper_id("arXiv:hep-th/9901001v2")
        ('1706.03762', 'hep-th/9901001')
        >>> normalise_paper_id("syn:2103.00042"), normalise_paper_id("a1b2c3v2")
        ('syn:2103.00042', 'a1b2c3v2')
    """
    pid = paper_id.strip()
    m = _ARXIV.fullmatch(pid)
    return pid if m is None else m.group(1)


def _field(obj: dict, names: tuple[str, ...], where: str, kind: type | tuple, required: bool):
    """The first of ``names`` present in ``obj``, type-checked; None when absent."""
    for name in names:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if kind is int and isinstance(value, str) and value.strip().isdecimal():
                value = int(value)
            if not isinstance(value, kind) or isinstance(value, bool):
                want = (
                    kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
                )
                raise DataFormatError(
                    f"{where}: field {name!r} must be {want}, got {type(value).__name__}"
                )
            if kind is list and not all(isinstance(v, str) for v in value):
                raise DataFormatError(f"{where}: field {name!r} must be a list of strings")
            return value
    if required:
        raise DataFormatError(
            f"{where}: missing field {names[0]!r}"
            + (f" (or {', '.join(repr(n) for n in names[1:])})" if len(names) > 1 else "")
        )
    return None


def _ids(ids: list[str] | None) -> list[str] | None:
    return None if ids is None else [normalise_paper_id(x) for x in ids]


def load_papers(path: str | os.PathLike[str], report: LoadReport | None = None) -> list[Paper]:
    """Read a papers JSONL file (format in the module docstring).

    Raises:
        DataFormatError: On invalid JSON, a missing or mistyped field, or a duplicate id.
    """
    path = Path(path)
    report = report if report is not None else LoadReport()
    raw: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path, error=DataFormatError):
        where = f"{path}: line {lineno}"
        written = _field(obj, ("paper_id", "arxiv_id", "id"), where, str, True)
        pid = normalise_paper_id(written)
        if not pid:
            raise DataFormatError(f"{where}: field 'paper_id' is empty")
        if pid in seen:
            same = "" if pid == written.strip() else f" ({written.strip()!r} without its version)"
            raise DataFormatError(
                f"{where}: duplicate paper_id {pid!r}{same} (first on line {seen[pid]})"
            )
        seen[pid] = lineno
        raw.append(
            {
                "paper_id": pid,
                "title": _field(obj, ("title",), where, str, True),
                "abstract": _field(obj, ("abstract",), where, str, False) or "",
                "year": _field(obj, ("year",), where, int, False),
                "references": _ids(_field(obj, ("references",), where, list, False) or []),
                "citations": _ids(_field(obj, ("citations",), where, list, False)),
            }
        )
    if not raw:
        raise DataFormatError(f"{path}: no papers (the file is empty)")
    cited_by: dict[str, list[str]] = defaultdict(list)
    for r in raw:
        kept = [x for x in dict.fromkeys(r["references"]) if x in seen and x != r["paper_id"]]
        report.dangling_references += len(r["references"]) - len(kept)
        r["references"] = kept
        for ref in kept:
            cited_by[ref].append(r["paper_id"])
    year = {r["paper_id"]: r["year"] or 0 for r in raw}
    papers = []
    for r in raw:
        if r["citations"] is None:
            cites = sorted(cited_by[r["paper_id"]], key=lambda x: (year[x], x), reverse=True)
        else:
            cites = [x for x in dict.fromkeys(r["citations"]) if x in seen and x != r["paper_id"]]
        papers.append(
            Paper(
                r["paper_id"],
                r["title"],
                r["abstract"],
                r["year"],
                tuple(r["references"]),
                tuple(cites),
            )
        )
    return papers


def load_queries(
    path: str | os.PathLike[str],
    papers: list[Paper],
    *,
    default_split: str | None = None,
    report: LoadReport | None = None,
) -> dict[str, list[Query]]:
    """Read a queries JSONL file (format in the module docstring) against a corpus.

    Args:
        path: The queries file.
        papers: The corpus the answers refer to.
        default_split: Split of records without a ``split`` field; None puts them in every
            split (a single file then serves whichever split the env is asked for).
        report: Collects what was dropped.

    Returns:
        Split -> queries (every split of :data:`SPLITS` present, maybe empty).

    Raises:
        DataFormatError: On invalid JSON, a missing or mistyped field, or an unknown split.
    """
    path = Path(path)
    report = report if report is not None else LoadReport()
    # Papers from load_papers already have normalised ids; others are matched the same way.
    ids = {normalise_paper_id(p.paper_id): p.paper_id for p in papers}
    by_title: dict[str, str] = {}
    for p in papers:
        by_title.setdefault(normalise_title(p.title), p.paper_id)
    out: dict[str, list[Query]] = {s: [] for s in SPLITS}
    for lineno, obj in iter_jsonl(path, error=DataFormatError):
        where = f"{path}: line {lineno}"
        text = _field(obj, ("query", "question"), where, str, True)
        if not text.strip():
            raise DataFormatError(f"{where}: field 'query' is empty")
        answer_ids = _field(obj, ("answer_ids", "answer_arxiv_id"), where, list, False)
        titles = _field(obj, ("answer_titles", "answer"), where, list, False)
        if answer_ids is None and titles is None:
            raise DataFormatError(
                f"{where}: missing field 'answer_ids' (or 'answer_titles', or PaSa's "
                "'answer_arxiv_id'/'answer')"
            )
        split = _field(obj, ("split",), where, str, False) or default_split
        if split is not None and split not in SPLITS:
            raise DataFormatError(f"{where}: field 'split' is {split!r}; use one of {SPLITS}")
        qid = _field(obj, ("id", "qid", "query_id"), where, (str, int), False)
        gold: set[str] = set()
        # PaSa lists titles and ids pairwise: an id missing from the corpus may still be
        # found through its title.
        n = max(len(answer_ids or []), len(titles or []))
        for i in range(n):
            pid = (answer_ids or [])[i] if i < len(answer_ids or []) else None
            found = None
            if pid is not None:
                found = ids.get(normalise_paper_id(pid))
            if found is None and titles is not None and i < len(titles):
                found = by_title.get(normalise_title(titles[i]))
            if found is None:
                report.unresolved_answers += 1
            else:
                gold.add(found)
        if not gold:
            report.skipped_queries += 1
            continue
        query_id = str(qid) if qid is not None else f"{path.stem}-{lineno}"
        for s in (split,) if split is not None else SPLITS:
            out[s].append(Query(query_id, text.strip(), frozenset(gold), s))
    return out


def load_corpus(
    papers_path: str | os.PathLike[str],
    queries: str | os.PathLike[str] | dict[str, str | os.PathLike[str]] | None,
) -> tuple[Corpus, LoadReport]:
    """Load a real corpus and its queries.

    Args:
        papers_path: The papers JSONL file.
        queries: A queries JSONL file (records without a ``split`` field belong to every
            split), or a mapping split -> file (the key is the default split of its records).

    Returns:
        The corpus (``data_source = "jsonl:<papers file name>"``) and what was dropped.

    Raises:
        DataFormatError: On malformed files, or when no query remains.
    """
    report = LoadReport()
    papers = load_papers(papers_path, report)
    if queries is None:
        raise DataFormatError(
            f"data={str(papers_path)!r} needs queries=<queries JSONL file> (or a mapping "
            "split -> file); see docs/datasets.md, Paper Search"
        )
    merged: dict[str, list[Query]] = {s: [] for s in SPLITS}
    if isinstance(queries, dict):
        for split, qpath in queries.items():
            if split not in SPLITS:
                raise DataFormatError(f"queries: unknown split {split!r}; use one of {SPLITS}")
            loaded = load_queries(qpath, papers, default_split=split, report=report)
            for s, qs in loaded.items():
                merged[s].extend(qs)
    else:
        merged = load_queries(queries, papers, report=report)
    if not any(merged.values()):
        raise DataFormatError(
            f"{queries}: no query has an answer in {papers_path} "
            f"({report.unresolved_answers} answers not found)"
        )
    source = f"jsonl:{Path(papers_path).name}"
    return Corpus(papers=papers, queries=merged, data_source=source), report
