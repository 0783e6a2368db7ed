"""A scripted WebShop expert: search, open the goal's product, choose its options, buy.

It reads the goal (which product the instruction was written for, and which option values it
asks for), so it is an upper bound that shows goals are achievable, not an agent. Its
queries are the goal product's title and then the goal's own terms (query, attributes and
options); it pages through up to five result pages (the 50 hits) before trying the next
query.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def expert_queries(goal: Any) -> list[str]:
    """The expert's search queries, best first."""
    terms = " ".join((goal.query, *goal.attributes, *goal.options))
    return [goal.name.lower(), terms.lower()]


def _option_clicks(goal: Any, product: Any, chosen: dict[str, str]) -> list[str]:
    """Option values still to click so the product carries the goal's options."""
    clicks, axes_done = [], set()
    for wanted in goal.options:
        for name, values in product.options.items():
            if name in axes_done:
                continue
            match = next((v for v in values if v == wanted.lower()), None)
            if match is not None:
                axes_done.add(name)
                if chosen.get(name) != match:
                    clicks.append(match)
                break
    return clicks


def next_action(
    goal: Any,
    product: Any,
    page_kind: str,
    clickables: Sequence[str],
    current_asin: str | None,
    chosen: dict[str, str],
    searched: Sequence[str],
) -> str | None:
    """The expert's next action in the current state.

    Args:
        goal: The episode's goal.
        product: The goal's product (``None`` if the catalogue lacks it).
        page_kind: ``search``, ``results``, ``item``, ``description``, ``features``,
            ``reviews`` or ``done``.
        clickables: Keys of the page's clickables (lower case).
        current_asin: Product open on item pages.
        chosen: Options chosen so far.
        searched: Queries searched so far this episode.

    Returns:
        An action string, or None once the item is bought.
    """
    if page_kind == "done":
        return None
    if page_kind == "search":
        queries = expert_queries(goal)
        fresh = [q for q in queries if q not in searched]
        return f"search[{(fresh or queries)[0]}]"
    if page_kind == "results":
        if goal.asin.lower() in clickables:
            return f"click[{goal.asin.lower()}]"
        if "next >" in clickables:
            return "click[next >]"
        return "click[back to search]"
    if page_kind == "item":
        if current_asin != goal.asin or product is None:
            return "click[< prev]"
        clicks = _option_clicks(goal, product, chosen)
        return f"click[{clicks[0]}]" if clicks else "click[buy now]"
    return "click[< prev]"  # description, features, reviews
