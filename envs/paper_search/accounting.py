"""How a step's tool calls are charged: Agent-R1's recipe (the default) or PaperScout-style.

Agent-R1's ``recipes/paper_search`` (``runtime.py``) runs the calls of one step concurrently
(``asyncio.gather``). Each call first checks, before any network reply has arrived, whether it
is allowed: a search whose exact query string was searched in an *earlier step*, or an expand
of a paper that was not in the pool *when the step began* or was already expanded, returns
-0.5; an expand marks its paper expanded at once, so the second of two identical expands in a
step is the repeat. Papers are added to the pool when their scores arrive, and a paper two
calls found is added (and credited) only once. A call that adds no paper returns 0 before its
cost is subtracted, and the costs are 0 (search) and 0 (expand). Every dispatched search and
expand is written to the action history, repeats included. :data:`AGENT_R1` reproduces this,
crediting a paper that several calls of a step find to the earliest of them (upstream: the
first whose selector scores arrive).

:data:`PAPERSCOUT` is this project's earlier accounting, kept as a named mode: calls run one
after another, each seeing the effect of the previous ones; searches are compared with case
and spacing ignored; every call pays its cost (search 0.1, expand 0.05), even one that adds
nothing; only calls that ran are written to the history.

Example (the same step under both modes; see docs/datasets.md, Paper Search):

>>> from agent_gym.envs.paper_search.accounting import ACCOUNTINGS
>>> ACCOUNTINGS["agent_r1"].repeat_key("  Graph  GNN "), ACCOUNTINGS["paperscout"].repeat_key("  Graph  GNN ")
('Graph  GNN', 'graph gnn')
"""

from __future__ import annotations

from dataclasses import dataclass


def normalise_query(text: str) -> str:
    """Searches compared with case and spacing ignored (the PaperScout-style repeat rule)."""
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Accounting:
    """One way of charging tool calls.

    Attributes:
        name: The env's ``accounting=`` value.
        search_cost: Default cost of a search.
        expand_cost: Default cost of an expand.
        exact_repeats: A search repeats an earlier one only if the query string is the same
            (outer space stripped); otherwise case and runs of space are ignored.
        concurrent_step: A step's calls are checked against the state at the start of the
            step (searches made in earlier steps, the pool as it was), as concurrent calls
            are; otherwise each call sees the effect of the calls before it.
        charge_empty_calls: Subtract the cost from a call that adds no paper too.
        history_every_call: Write every search and expand to the history, repeats and
            rejected expands included; otherwise only the calls that ran.
        expand_needs_abstract: ``expand`` leaves out linked papers without an abstract, as
            the recipe's expand does.
        limit_counts_malformed: Every call-shaped line counts towards the calls per step,
            valid or not (the recipe keeps the first 5 tool calls, then drops bad ones).
    """

    name: str
    search_cost: float
    expand_cost: float
    exact_repeats: bool
    concurrent_step: bool
    charge_empty_calls: bool
    history_every_call: bool
    expand_needs_abstract: bool
    limit_counts_malformed: bool

    def repeat_key(self, query: str) -> str:
        """The form in which searches are compared for the repeated-search penalty."""
        return query.strip() if self.exact_repeats else normalise_query(query)


#: Agent-R1's Paper Search recipe (the default).
AGENT_R1 = Accounting(
    name="agent_r1",
    search_cost=0.0,
    expand_cost=0.0,
    exact_repeats=True,
    concurrent_step=True,
    charge_empty_calls=False,
    history_every_call=True,
    expand_needs_abstract=True,
    limit_counts_malformed=True,
)

#: This project's earlier, PaperScout-style accounting.
PAPERSCOUT = Accounting(
    name="paperscout",
    search_cost=0.1,
    expand_cost=0.05,
    exact_repeats=False,
    concurrent_step=False,
    charge_empty_calls=True,
    history_every_call=False,
    expand_needs_abstract=False,
    limit_counts_malformed=False,
)

#: ``accounting=`` values.
ACCOUNTINGS = {a.name: a for a in (AGENT_R1, PAPERSCOUT)}
