"""The per-call reward and the episode metrics (precision, recall, F1).

Upstream (Agent-R1 ``recipes/paper_search/runtime.py``): a step's reward is the sum over its
tool calls; a call earns the sum of the top-3 selector scores of the papers it newly added
(papers scoring under 0.01 are dropped), or with the discrete option the number of those top 3
scoring at least 0.4, minus the tool's cost, and 0 (no cost) when it added no paper. A
repeated search, or expanding an unknown or already expanded paper, earns -0.5 instead. The
recipe's costs are 0 for both tools; :mod:`.accounting` holds the per-mode costs and rules.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Reward of a repeated search or of expanding an unknown or already expanded paper.
REPEAT_PENALTY = -0.5
#: Papers scoring below this are dropped (not added to the pool, not rewarded).
MIN_SCORE = 0.01
#: How many of a call's new papers count.
TOP_K = 3
#: Score at which a paper counts as relevant for the discrete reward.
DISCRETE_THRESHOLD = 0.4


def call_reward(
    scores: Iterable[float],
    *,
    cost: float,
    discrete: bool = False,
    charge_empty: bool = False,
    top_k: int = TOP_K,
    threshold: float = DISCRETE_THRESHOLD,
) -> float:
    """Reward of one successful tool call.

    Args:
        scores: Selector scores of the papers the call newly added, any order.
        cost: The tool's cost, subtracted once.
        discrete: Count the top-k scores at or above ``threshold`` instead of summing them.
        charge_empty: Subtract the cost even when no score is kept (the PaperScout-style
            accounting); by default such a call earns 0, as upstream's does.
        top_k: How many of the best scores count.
        threshold: The discrete option's relevance threshold.

    Returns:
        ``sum(top_k scores >= MIN_SCORE) - cost`` (or the count with ``discrete``), rounded
        to 6 decimals so that printed rewards read 1.3, not 1.2999999999999998; 0.0 when no
        score is kept, unless ``charge_empty``.

    Example:
        >>> call_reward([0.9, 0.005, 0.5, 0.2, 0.3], cost=0.1)
        1.6
        >>> call_reward([0.9, 0.5, 0.2, 0.3], cost=0.05, discrete=True)
        1.95
        >>> call_reward([0.005], cost=0.1), call_reward([], cost=0.1, charge_empty=True)
        (0.0, -0.1)
    """
    kept = sorted((s for s in scores if s >= MIN_SCORE), reverse=True)[:top_k]
    if not kept and not charge_empty:
        return 0.0
    gain = float(sum(s >= threshold for s in kept)) if discrete else float(sum(kept))
    return round(gain - cost, 6)


def precision_recall_f1(found: Iterable[str], gold: Iterable[str]) -> tuple[float, float, float]:
    """Set precision, recall and F1 of ``found`` against ``gold``.

    Edge cases: precision is 0.0 when nothing was found, recall is 0.0 when ``gold`` is
    empty, and F1 is 0.0 when both are 0.

    Example:
        >>> precision_recall_f1({"a", "b", "x"}, {"a", "b", "c", "d"})
        (0.6666666666666666, 0.5, 0.5714285714285715)
    """
    found, gold = set(found), set(gold)
    hits = len(found & gold)
    p = hits / len(found) if found else 0.0
    r = hits / len(gold) if gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f
