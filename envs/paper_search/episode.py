"""One episode's state (pool, history, searches, scores) and how a step's calls change it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .accounting import Accounting
from .actions import Call
from .pool import PaperPool
from .records import Corpus, Query
from .reward import MIN_SCORE, REPEAT_PENALTY, call_reward
from .search import SearchIndex
from .selector import Selector

#: History lines shown in the observation (the latest); 5 steps of 5 calls never reach it.
MAX_HISTORY_SHOWN = 50


@dataclass(frozen=True)
class CallResult:
    """What one call did.

    Attributes:
        call: The call.
        reward: Its reward.
        new_papers: Papers it added to the pool.
        note: A short description for the observation.
    """

    call: Call
    reward: float
    new_papers: int
    note: str


class Episode:
    """The state of one Paper Search episode.

    Args:
        query: The task.
        corpus: Papers and citation graph.
        index: Search index over ``corpus.papers``.
        selector: Scores new papers.
        rules: The accounting (see :mod:`.accounting`).
        search_cost: Cost of a search.
        expand_cost: Cost of an expand.
        search_top_k: Results per search.
        citations_limit: Citations per expand (-1 for all).
        discrete: Count top-3 scores >= 0.4 instead of summing them.

    Attributes:
        pool: The papers found.
        history: ``[Search] q`` / ``[Expand] id`` lines, oldest first.
        searched: Repeat keys (``rules.repeat_key``) of the searches made.
    """

    def __init__(
        self,
        query: Query,
        corpus: Corpus,
        index: SearchIndex,
        selector: Selector,
        rules: Accounting,
        *,
        search_cost: float,
        expand_cost: float,
        search_top_k: int,
        citations_limit: int,
        discrete: bool,
    ) -> None:
        self.query, self.corpus, self.index, self.selector = query, corpus, index, selector
        self.rules = rules
        self.search_cost, self.expand_cost = search_cost, expand_cost
        self.search_top_k, self.citations_limit = search_top_k, citations_limit
        self.discrete = discrete
        self.pool = PaperPool()
        self.history: list[str] = []
        self.searched: set[str] = set()
        self._scores: dict[str, float] = {}  # selector scores this episode, by paper id

    def history_text(self) -> str:
        """The ``### History Actions`` body (the latest :data:`MAX_HISTORY_SHOWN` lines)."""
        if not self.history:
            return "(none yet)"
        shown = self.history[-MAX_HISTORY_SHOWN:]
        hidden = len(self.history) - len(shown)
        head = [f"({hidden} earlier actions not shown)"] if hidden else []
        return "\n".join(head + shown)

    def linked(self, paper_id: str) -> list[str]:
        """What ``expand[paper_id]`` can add: references and the first citations."""
        ids = self.corpus.neighbours(paper_id, self.citations_limit)
        if self.rules.expand_needs_abstract:
            ids = [pid for pid in ids if self.corpus.paper(pid).abstract.strip()]
        return ids

    def run_step(self, calls: list[Call]) -> list[CallResult]:
        """Apply one step's calls; return what each did, in order."""
        concurrent = self.rules.concurrent_step
        # What concurrent calls see when they check whether they may run: the state before
        # any of them has a reply (searches of earlier steps, the pool at the step's start).
        searched_before = set(self.searched) if concurrent else self.searched
        pool_before = set(self.pool.ids()) if concurrent else None
        if self.rules.history_every_call:
            self.history += [_history_line(c) for c in calls if c.tool != "finish"]
        results = []
        for call in calls:
            if call.tool == "finish":
                results.append(CallResult(call, 0.0, 0, "search finished"))
            elif call.tool == "search":
                results.append(self._search(call, searched_before))
            else:
                in_pool = call.arg in (pool_before if concurrent else self.pool)
                results.append(self._expand(call, in_pool))
        return results

    def _search(self, call: Call, searched_before: set[str]) -> CallResult:
        key = self.rules.repeat_key(call.exact)
        if key in searched_before:
            return CallResult(call, REPEAT_PENALTY, 0, "repeated search")
        self.searched.add(key)
        if not self.rules.history_every_call:
            self.history.append(_history_line(call))
        found = [
            self.corpus.papers[i].paper_id for i in self.index.search(call.arg, self.search_top_k)
        ]
        added = self._add(found)
        reward = self._reward(added, self.search_cost)
        return CallResult(
            call, reward, len(added), f"{len(found)} results, {len(added)} new papers added"
        )

    def _expand(self, call: Call, in_pool: bool) -> CallResult:
        pid = call.arg
        if not in_pool:
            note = "not in the paper list, cannot expand"
            if pid in self.pool:  # concurrent: found by an earlier call of this same step
                note = "not in the paper list at the start of this step, cannot expand"
            return CallResult(call, REPEAT_PENALTY, 0, note)
        if self.pool.is_expanded(pid):
            return CallResult(call, REPEAT_PENALTY, 0, "already expanded")
        self.pool.mark_expanded(pid)
        if not self.rules.history_every_call:
            self.history.append(_history_line(call))
        linked = self.linked(pid)
        added = self._add(linked)
        reward = self._reward(added, self.expand_cost)
        return CallResult(
            call, reward, len(added), f"{len(linked)} linked papers, {len(added)} new papers added"
        )

    def _add(self, ids: list[str]) -> list[float]:
        """Score the papers not yet in the pool, add those scoring >= 0.01; their scores."""
        new = [pid for pid in dict.fromkeys(ids) if pid not in self.pool]
        unscored = [pid for pid in new if pid not in self._scores]
        if unscored:
            papers = [self.corpus.paper(pid) for pid in unscored]
            scores = list(self.selector.score(self.query, papers))
            if len(scores) != len(papers):
                raise ValueError(
                    f"selector {type(self.selector).__name__} returned {len(scores)} scores "
                    f"for {len(papers)} papers; it must return one score per paper"
                )
            for pid, s in zip(unscored, scores):
                s = float(s)
                self._scores[pid] = min(1.0, max(0.0, s)) if math.isfinite(s) else 0.0
        added = []
        for pid in new:
            s = self._scores[pid]
            if s >= MIN_SCORE:  # upstream drops near-zero papers from the pool
                self.pool.add(pid, s)
                added.append(s)
        return added

    def _reward(self, scores: list[float], cost: float) -> float:
        return call_reward(
            scores,
            cost=cost,
            discrete=self.discrete,
            charge_empty=self.rules.charge_empty_calls,
        )


def _history_line(call: Call) -> str:
    return f"[Search] {call.arg}" if call.tool == "search" else f"[Expand] {call.arg}"
