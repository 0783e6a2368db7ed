"""Hand-computed cases for the reward formula, the pool view and the action parser."""

from __future__ import annotations

import pytest

from agent_gym.envs.paper_search.actions import MAX_ARG_CHARS, parse_action
from agent_gym.envs.paper_search.pool import PaperPool, render_paper_list, trim_words
from agent_gym.envs.paper_search.records import Paper
from agent_gym.envs.paper_search.reward import call_reward, precision_recall_f1


@pytest.mark.parametrize(
    ("scores", "cost", "discrete", "charge_empty", "expected"),
    [
        ([], 0.1, False, False, 0.0),  # nothing new: 0, no cost (Agent-R1)
        ([], 0.1, False, True, -0.1),  # nothing new: only the cost (PaperScout-style)
        ([0.9, 0.5, 0.2, 0.3], 0.1, False, False, 0.9 + 0.5 + 0.3 - 0.1),  # top 3 only
        ([0.9, 0.5, 0.2, 0.3], 0.05, True, False, 2 - 0.05),  # 0.9 and 0.5 reach 0.4
        ([0.009, 0.005], 0.1, False, False, 0.0),  # under 0.01: dropped, so nothing new
        ([0.009, 0.005], 0.1, False, True, -0.1),
        ([0.3, 0.2], 0.1, True, False, -0.1),  # kept but under 0.4: the cost is paid
        ([0.4, 0.39], 0.0, True, False, 1.0),  # threshold is inclusive
        ([1.0] * 7, 0.05, False, False, 2.95),
    ],
)
def test_call_reward_hand_computed(scores, cost, discrete, charge_empty, expected) -> None:
    got = call_reward(scores, cost=cost, discrete=discrete, charge_empty=charge_empty)
    assert got == pytest.approx(expected)


def test_precision_recall_f1_edges() -> None:
    assert precision_recall_f1(set(), {"a"}) == (0.0, 0.0, 0.0)
    assert precision_recall_f1({"a"}, set()) == (0.0, 0.0, 0.0)
    assert precision_recall_f1({"a", "b"}, {"a", "b"}) == (1.0, 1.0, 1.0)
    p, r, f = precision_recall_f1({"a", "x", "y", "z"}, {"a", "b"})
    assert (p, r) == (0.25, 0.5) and f == pytest.approx(2 * 0.25 * 0.5 / 0.75)


def test_pool_view_keeps_ten_expanded_and_ten_new_sorted_by_score() -> None:
    pool = PaperPool()
    for i in range(30):
        pool.add(f"p{i:02d}", score=i / 100)
    for i in range(0, 30, 2):  # 15 expanded (even ids), 15 new (odd ids)
        pool.mark_expanded(f"p{i:02d}")
    view = pool.view()
    assert len(view) == 20
    assert [e.paper_id for e in view if e.expanded] == [f"p{i:02d}" for i in range(28, 9, -2)]
    assert [e.paper_id for e in view if not e.expanded] == [f"p{i:02d}" for i in range(29, 10, -2)]
    assert [e.score for e in view] == sorted((e.score for e in view), reverse=True)
    assert not pool.add("p00", 1.0) and len(pool) == 30
    assert pool.selected(0.28) == {"p28", "p29"}


def test_pool_ties_keep_arrival_order_and_render_format() -> None:
    pool = PaperPool()
    pool.add("b", 0.5)
    pool.add("a", 0.5)
    pool.mark_expanded("a")
    papers = {"a": Paper("a", "Title A", "one two three four"), "b": Paper("b", "Title B")}
    text = render_paper_list(pool.view(), papers.__getitem__, abstract_words=2)
    assert text == "[b] (0.50) [NEW] Title B\n\n[a] (0.50) [EXP] Title A\nAbstract: one two ..."
    assert render_paper_list([], papers.__getitem__, 5).startswith("(empty")
    assert trim_words(" x  y ", 5) == "x y"


@pytest.mark.parametrize(
    ("text", "calls", "problems"),
    [
        ("search[graph neural networks]", ["search[graph neural networks]"], 0),
        ("  SEARCH [ spaced   query ]  ", ["search[spaced query]"], 0),
        ("expand[[syn:2101.00007]]", ["expand[syn:2101.00007]"], 0),  # copied brackets
        ("expand['2001.00001']", ["expand[2001.00001]"], 0),
        ("- search[a]\n2. expand[b]\n\n", ["search[a]", "expand[b]"], 0),  # list markers
        ("finish[]", ["finish[]"], 0),
        ("finish[now]", [], 1),
        ("search[]", [], 1),
        ("expand[   ]", [], 1),
        ("search[a] expand[b]", ["search[a] expand[b]"], 0),  # one line is one call
        ("look around", [], 1),
        ("search[a]\nclick[b]", ["search[a]"], 1),
        ("\n".join(f"search[q{i}]" for i in range(7)), [f"search[q{i}]" for i in range(5)], 2),
        ("search[" + "x" * (MAX_ARG_CHARS + 1) + "]", [], 1),
        ("search[\x00\x1b[31m]", ["search[[31m]"], 0),
        ("search[\ud800]", ["search[\ufffd]"], 0),
        ("", [], 0),
    ],
)
def test_parse_action_table(text: str, calls: list[str], problems: int) -> None:
    parsed = parse_action(text, max_calls=5)
    assert [str(c) for c in parsed.calls] == calls
    assert len(parsed.problems) == problems
