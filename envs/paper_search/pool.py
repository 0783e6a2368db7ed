"""The paper pool an episode builds up, and its text view (PaperScout's ``Paper List``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .records import Paper


@dataclass
class PoolEntry:
    """A paper in the pool.

    Attributes:
        paper_id: Its id.
        score: Selector relevance score in [0, 1].
        order: Position of arrival (breaks score ties: earlier first).
        expanded: Whether ``expand`` was called on it.
    """

    paper_id: str
    score: float
    order: int
    expanded: bool = False


class PaperPool:
    """The papers found so far, with their relevance scores and expand status.

    Example:
        >>> pool = PaperPool()
        >>> pool.add("a", 0.2); pool.add("b", 0.9); pool.add("a", 1.0)
        True
        True
        False
        >>> pool.mark_expanded("b")
        >>> [(e.paper_id, e.expanded) for e in pool.view()]
        [('b', True), ('a', False)]
    """

    def __init__(self) -> None:
        self._entries: dict[str, PoolEntry] = {}

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, paper_id: str, score: float) -> bool:
        """Add a paper; False (and no change) if it is already in the pool."""
        if paper_id in self._entries:
            return False
        self._entries[paper_id] = PoolEntry(paper_id, float(score), len(self._entries))
        return True

    def is_expanded(self, paper_id: str) -> bool:
        """Whether ``paper_id`` is in the pool and was expanded."""
        entry = self._entries.get(paper_id)
        return entry is not None and entry.expanded

    def mark_expanded(self, paper_id: str) -> None:
        """Record that ``paper_id`` (which must be in the pool) was expanded."""
        self._entries[paper_id].expanded = True

    def ids(self) -> list[str]:
        """Every paper id, in order of arrival."""
        return list(self._entries)

    def selected(self, threshold: float) -> set[str]:
        """Ids of the papers scoring at least ``threshold`` (the episode's answer set)."""
        return {e.paper_id for e in self._entries.values() if e.score >= threshold}

    def view(self, n_expanded: int = 10, n_new: int = 10) -> list[PoolEntry]:
        """What the observation shows: the best expanded and the best unexpanded papers.

        As upstream's ``PaperPool.paper_list``: at most ``n_expanded`` expanded and
        ``n_new`` unexpanded papers, each group the highest-scoring, merged and sorted by
        score. Ties go to the earlier arrival (upstream: expanded first, then the larger id).
        """
        ranked = sorted(self._entries.values(), key=lambda e: (-e.score, e.order))
        expanded = [e for e in ranked if e.expanded][:n_expanded]
        new = [e for e in ranked if not e.expanded][:n_new]
        return sorted(expanded + new, key=lambda e: (-e.score, e.order))


def trim_words(text: str, max_words: int) -> str:
    """The first ``max_words`` words of ``text``, with "..." when something was cut."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]) + " ..."


def render_paper_list(
    entries: list[PoolEntry], paper: Callable[[str], Paper], abstract_words: int
) -> str:
    """The ``### Paper List`` body: ``[id] (score) [EXP|NEW] title`` and a trimmed abstract.

    Args:
        entries: Pool entries in display order (see :meth:`PaperPool.view`).
        paper: Looks up a paper by id.
        abstract_words: Abstracts are cut to this many words (upstream: 400).
    """
    if not entries:
        return "(empty: no papers found yet)"
    blocks = []
    for e in entries:
        p = paper(e.paper_id)
        status = "EXP" if e.expanded else "NEW"
        block = f"[{e.paper_id}] ({e.score:.2f}) [{status}] {p.title}"
        if p.abstract and abstract_words > 0:
            block += "\nAbstract: " + trim_words(p.abstract, abstract_words)
        blocks.append(block)
    return "\n\n".join(blocks)
