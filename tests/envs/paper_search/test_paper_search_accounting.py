"""Each difference between the two accountings, as a worked example: same actions, both rewards.

Fixture and scores as in test_paper_search_env.py (query q1, gold {P2, P4}; rule selector:
P1 0.12, P2 1.0, P3 0.06, P4 1.0, P5 0 and dropped). ``search[sparse transformers]`` returns
P1, P2 and P4; P1 is cited by P4, P3, P2; P4 cites P1 and P2.

``agent_r1`` (the default) is Agent-R1's recipe (``recipes/paper_search/runtime.py``): costs
0/0, a call that adds no paper earns 0, searches repeat only with the exact same string, and a
step's calls are checked as concurrent calls are, against the state at the step's start.
``paperscout`` is the earlier accounting: costs 0.1/0.05 charged on every call, searches
compared ignoring case and spacing, calls run one after another.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from agent_gym.envs.paper_search.env import PaperSearchEnv

FIX = Path(__file__).parent / "fixtures"
P1, P2, P3, P4, P5 = (f"2001.0000{i}" for i in range(1, 6))
SEARCH = "search[sparse transformers]"  # adds P1, P2, P4: 1.0 + 1.0 + 0.12 = 2.12

pytestmark = pytest.mark.filterwarnings("ignore:Paper Search. 1 query answers")


def make(accounting: str | None = None, **kw) -> PaperSearchEnv:
    if accounting is not None:
        kw["accounting"] = accounting
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl", **kw)
    env.reset(options={"task_id": "q1"})
    return env


def rewards(accounting: str | None, *actions: str) -> list[float]:
    env = make(accounting)
    return [env.step(a)[1] for a in actions]


def test_default_is_agent_r1_with_zero_costs() -> None:
    env = make()
    assert env.accounting.name == "agent_r1"
    assert (env.search_cost, env.expand_cost) == (0.0, 0.0)
    paperscout = make("paperscout")
    assert (paperscout.search_cost, paperscout.expand_cost) == (0.1, 0.05)
    # Explicit costs override the accounting's.
    assert make(search_cost=0.2).search_cost == 0.2
    with pytest.raises(ValueError, match="accounting='upstream' is not an accounting"):
        PaperSearchEnv(accounting="upstream")


def test_costs_are_zero_for_search_and_expand() -> None:
    # Expanding P1 adds P3 (0.06): its citers P2 and P4 are already in the pool.
    assert rewards(None, SEARCH, f"expand[{P1}]") == [2.12, 0.06]
    assert rewards("paperscout", SEARCH, f"expand[{P1}]") == [2.02, 0.01]


def test_repeat_is_the_exact_string_not_case_or_spacing() -> None:
    again = "search[  Sparse   TRANSFORMERS ]"
    # Agent-R1: another string, so a search; its results are all known, so it earns 0.
    assert rewards(None, SEARCH, again) == [2.12, 0.0]
    assert rewards("paperscout", SEARCH, again) == [2.02, -0.5]
    # The exact same string (outer space aside) is a repeat in both.
    assert rewards(None, SEARCH, "search[ sparse transformers ]") == [2.12, -0.5]
    assert rewards("paperscout", SEARCH, SEARCH) == [2.02, -0.5]


def test_duplicate_search_in_one_step_earns_zero_not_the_penalty() -> None:
    step = f"{SEARCH}\n{SEARCH}"
    env = make()
    _, r, *_, info = env.step(step)
    # Both run concurrently, neither is a repeat when it starts; the first adds the papers
    # and the second finds them already in the pool: 2.12 + 0.
    assert r == 2.12 and [c["reward"] for c in info["calls"]] == [2.12, 0.0]
    assert [c["new_papers"] for c in info["calls"]] == [3, 0]
    # From the next step on, it is a repeat.
    assert env.step(SEARCH)[1] == -0.5
    assert rewards("paperscout", step) == [round(2.02 - 0.5, 6)]


def test_call_that_adds_nothing_costs_nothing() -> None:
    # P4's links P1 and P2 are in the pool already; "quantum" matches no paper.
    assert rewards(None, SEARCH, f"expand[{P4}]", "search[quantum]") == [2.12, 0.0, 0.0]
    assert rewards("paperscout", SEARCH, f"expand[{P4}]", "search[quantum]") == [2.02, -0.05, -0.1]
    # Two searches in one step finding the same new papers: the earlier call gets them.
    env = make()
    _, r, *_, info = env.step(f"{SEARCH}\nsearch[transformers]")
    assert r == 2.12 and [c["new_papers"] for c in info["calls"]] == [3, 0]
    assert rewards("paperscout", f"{SEARCH}\nsearch[transformers]") == [round(2.02 - 0.1, 6)]


def test_expand_sees_the_pool_as_the_step_began() -> None:
    step = f"{SEARCH}\nexpand[{P1}]"
    env = make()
    _, r, *_, info = env.step(step)
    # P1 arrives with this step's search, after the expand has checked the pool: -0.5.
    assert r == pytest.approx(2.12 - 0.5)
    assert "at the start of this step" in info["calls"][1]["note"]
    assert not env._episode.pool.is_expanded(P1) and info["pool_size"] == 3
    # PaperScout-style: the expand sees P1 and adds P3: (2.12 - 0.1) + (0.06 - 0.05).
    env = make("paperscout")
    _, r, *_, info = env.step(step)
    assert r == pytest.approx(2.03) and info["pool_size"] == 4
    # The next step, P1 is in the pool and the expand runs.
    assert rewards(None, step, f"expand[{P1}]") == [pytest.approx(1.62), 0.06]


def test_duplicate_expand_in_one_step_is_a_repeat_in_both() -> None:
    step = f"expand[{P1}]\nexpand[{P1}]"
    assert rewards(None, SEARCH, step) == [2.12, pytest.approx(0.06 - 0.5)]
    assert rewards("paperscout", SEARCH, step) == [2.02, pytest.approx(0.01 - 0.5)]


def test_history_lists_every_dispatched_call() -> None:
    actions = (SEARCH, f"{SEARCH}\nexpand[{P5}]")  # a repeat and an expand of an unknown id
    env = make()
    for a in actions:
        *_, info = env.step(a)
    history = info["anchor_obs"].split("### History Actions\n")[1].split("\n\n")[0]
    assert history.splitlines() == [
        "[Search] sparse transformers",
        "[Search] sparse transformers",
        f"[Expand] {P5}",
    ]
    env = make("paperscout")
    for a in actions:
        *_, info = env.step(a)
    assert info["anchor_obs"].count("[Search]") == 1 and "[Expand]" not in info["anchor_obs"]


def test_first_five_call_shaped_lines_are_the_calls() -> None:
    # Agent-R1 keeps the first 5 tool calls, then drops the malformed ones: nothing is left.
    step = "search[]\n" * 5 + SEARCH
    env = make()
    _, r, term, _, info = env.step(step)
    assert (r, term, info["is_action_valid"], info["skipped_lines"]) == (0.0, True, False, 6)
    assert rewards("paperscout", step) == [2.02]
    # Prose lines are not calls and do not count.
    assert rewards(None, "Let me search.\n" * 5 + SEARCH) == [2.12]


def test_expand_skips_linked_papers_without_abstract(tmp_path) -> None:
    papers = [
        {"paper_id": "2101.00001", "title": "Rare Topic Survey", "abstract": "A survey."},
        {"paper_id": "2101.00002", "title": "Follow-up", "references": ["2101.00001"]},
    ]
    queries = [{"id": "r1", "query": "rare topic", "answer_ids": ["2101.00001", "2101.00002"]}]
    for name, rows in (("papers", papers), ("queries", queries)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def run(accounting: str) -> list[float]:
        env = PaperSearchEnv(
            data=tmp_path / "papers.jsonl",
            queries=tmp_path / "queries.jsonl",
            accounting=accounting,
        )
        env.reset(options={"task_id": "r1"})
        return [env.step("search[rare topic survey]")[1], env.step("expand[2101.00001]")[1]]

    # The follow-up (gold, 1.0) has no abstract: Agent-R1's expand leaves it out.
    assert run("agent_r1") == [1.0, 0.0]
    assert run("paperscout") == [0.9, 0.95]


class RecipeModel:
    """An asyncio model of how Agent-R1's runtime schedules the calls of one step.

    Not the recipe's code: a small re-statement of its scheduling. Every call is a coroutine
    started by ``asyncio.gather``; what a call checks before its first ``await`` (a repeated
    search, an expand's pool lookup and mark) sees the state as the step began, and what it
    does after its replies (adding papers, recording the query) happens later, in the order
    the replies arrive. ``asyncio.sleep(0)`` stands for each network round trip, so replies
    arrive in call order, the order the env credits shared papers in.
    """

    def __init__(self, env: PaperSearchEnv) -> None:
        self.env = env
        self.pool: dict[str, bool] = {}  # paper id -> expanded
        self.searched: set[str] = set()
        self.history: list[str] = []

    async def _keep(self, ids: list[str]) -> float:
        new = [pid for pid in dict.fromkeys(ids) if pid not in self.pool]
        await asyncio.sleep(0)  # the selector requests
        papers = [self.env.corpus.paper(pid) for pid in new]
        scores = self.env.selector.score(self.env.query, papers)
        kept = []
        for pid, s in zip(new, scores):
            if s >= 0.01 and pid not in self.pool:
                self.pool[pid] = False
                kept.append(s)
        return round(sum(sorted(kept, reverse=True)[:3]), 6) if kept else 0.0

    async def search(self, query: str) -> float:
        if query in self.searched:
            return -0.5
        await asyncio.sleep(0)  # the search request
        found = [self.env.corpus.papers[i].paper_id for i in self.env._index.search(query, 10)]
        reward = await self._keep(found)
        self.searched.add(query)
        return reward

    async def expand(self, pid: str) -> float:
        if pid not in self.pool or self.pool[pid]:
            return -0.5
        self.pool[pid] = True
        await asyncio.sleep(0)  # the citations and references requests
        corpus = self.env.corpus
        linked = [x for x in corpus.neighbours(pid, 30) if corpus.paper(x).abstract]
        return await self._keep(linked)

    def step(self, calls: list[tuple[str, str]]) -> float:
        async def run() -> list[float]:
            tasks = []
            for tool, arg in calls:
                self.history.append(f"[{tool.title()}] {arg}")
                tasks.append(self.search(arg) if tool == "search" else self.expand(arg))
            return await asyncio.gather(*tasks)

        return round(sum(asyncio.run(run())), 6)


def test_agent_r1_accounting_matches_a_concurrent_model_of_the_recipe() -> None:
    env = PaperSearchEnv(split="dev")
    rng = random.Random(0)
    steps = 0
    for episode in range(40):
        _, info = env.reset(seed=episode)
        model = RecipeModel(env)
        words = info["task"].split()
        for _ in range(5):
            calls = []
            for _ in range(rng.randint(1, 5)):
                known = sorted(model.pool)
                if known and rng.random() < 0.5:
                    calls.append(("expand", rng.choice(known)))
                else:  # overlapping queries, with case and spacing variants of the same words
                    q = " ".join(rng.sample(words, min(len(words), rng.randint(1, 4))))
                    calls.append(("search", rng.choice([q, q.upper(), q.replace(" ", "  ")])))
            if rng.random() < 0.3:
                calls.append(calls[0])  # the same call twice in one step
                calls = calls[:5]
            _, reward, *_, info = env.step("\n".join(f"{t}[{a}]" for t, a in calls))
            assert reward == model.step(calls), (episode, calls)
            assert set(env._episode.pool.ids()) == set(model.pool)
            assert env._episode.history == [h.replace("  ", " ") for h in model.history]
            steps += 1
    assert steps == 200
