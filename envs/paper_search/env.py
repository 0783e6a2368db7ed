"""``AgentR1/PaperSearch-v0``: PaperScout-style literature search as a Gymnasium env.

The agent searches a paper corpus (``search[query]``: BM25 top 10 over title and abstract) and
follows citations (``expand[paper_id]``: the paper's references and up to 30 citations), up to
five calls per step, one per line. Papers it finds join a pool, scored for relevance by a
selector; the observation is rebuilt every step from the user query, the action history and
the pool. Each call is rewarded with the relevance of the papers it newly found, minus its
cost; by default a step's calls are charged as Agent-R1's ``recipes/paper_search`` charges
its concurrent calls (``accounting="agent_r1"``; ``"paperscout"`` is the earlier
PaperScout-style accounting, see :mod:`.accounting`). The episode ends on ``finish[]``, on a
step without any valid call (upstream: on a reply without tool calls), or at the step limit.

>>> import gymnasium as gym, agent_gym
>>> env = gym.make("AgentR1/PaperSearch-v0")
>>> obs, info = env.reset(seed=0)
>>> obs.splitlines()[0]
'### User Query'
>>> obs, reward, terminated, truncated, info = env.step("search[" + info["task"] + "]")
>>> info["is_action_valid"], 0.0 <= info["score"] <= 1.0
(True, True)
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

from gymnasium.error import ResetNeeded

from agent_gym.checks import flag, real, whole
from agent_gym.core import TextEnv, ToolSpec, check_reset_options

from .accounting import ACCOUNTINGS
from .actions import parse_action
from .cache import build_generated, build_jsonl, generated_folder, get_corpus
from .corpus import DATA_SOURCE
from .episode import Episode
from .loader import LoadReport
from .oracle import plan_calls
from .pool import render_paper_list
from .prompts import PROMPTS
from .records import SPLITS, Corpus, Query
from .reward import precision_recall_f1
from .search import SearchIndex
from .selector import Selector, make_selector
from .text import fit, scrub_all

#: Characters of the user query shown (real queries are a sentence or two).
MAX_QUERY_CHARS = 4000

SEARCH_TOOL = ToolSpec(
    name="search",
    description="Search the paper corpus; returns the 10 papers whose title and abstract best "
    "match the keyword query.",
    arguments={"query": "keywords to search for"},
    command="search[{query}]",
)
EXPAND_TOOL = ToolSpec(
    name="expand",
    description="Add a paper's references and the papers citing it (up to 30) to the paper list.",
    arguments={"paper_id": "the id of a paper in the paper list, e.g. syn:2103.00042"},
    command="expand[{paper_id}]",
)
# Not in PaperScout (there, a reply without tool calls ends the episode); a parse failure
# never reaches the env here (see ParseAction), so tool-call agents need an explicit finish.
FINISH_TOOL = ToolSpec(
    name="finish",
    description="End the search when the paper list holds every paper the query asks for.",
    arguments={},
    command="finish[]",
)


def _warn_dropped(report: LoadReport) -> None:
    """Tell the user what loading real data left out (once per process and corpus)."""
    if report.unresolved_answers or report.skipped_queries:
        warnings.warn(
            f"Paper Search: {report.unresolved_answers} query answers are not in the papers "
            f"file and {report.skipped_queries} queries were skipped for having none",
            stacklevel=3,
        )


class PaperSearchEnv(TextEnv):
    """Literature search with ``search``/``expand`` tools over a scored paper pool.

    Args:
        data: ``"generated"`` (the seeded synthetic corpus, the default) or the path of a
            papers JSONL file (see docs/datasets.md, Paper Search).
        queries: For ``data=<path>``: a queries JSONL file, or a mapping split -> file.
        split: ``"train"``, ``"dev"`` or ``"test"``.
        selector: ``"rule"`` (deterministic), ``{"type": "llm", "base_url": ...,
            "model": ...}`` for an OpenAI-compatible LLM judge, or an object with
            ``score(query, papers)``.
        discrete_reward: Count new papers scoring >= 0.4 (top 3) instead of summing scores.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.
        accounting: How a step's calls are charged: ``"agent_r1"`` (Agent-R1's recipe, the
            default) or ``"paperscout"`` (the earlier PaperScout-style rules); see
            :mod:`.accounting` and docs/datasets.md for the differences.
        search_top_k: Results per search (upstream: 10).
        citations_limit: Citations per expand (upstream: 30; -1 for all).
        search_cost: Cost of a search; None takes the accounting's (agent_r1: 0,
            paperscout: 0.1).
        expand_cost: Cost of an expand; None takes the accounting's (agent_r1: 0,
            paperscout: 0.05).
        select_threshold: Pool papers scoring at least this are the episode's answer set for
            precision, recall and F1.
        abstract_words: Abstracts in the paper list are cut to this many words
            (upstream: 400; the generated abstracts are about 70 words).
        end_on_invalid: End the episode on a step without any valid call (upstream ends on a
            reply without tool calls, and runs a reply whose calls are all invalid as a
            0-reward step).
        n_papers: Size of the generated corpus.
        n_queries: Queries of the generated corpus (80/10/10 train/dev/test).
        corpus_seed: Seed of the generated corpus (not of the episode: that is ``reset``'s).
        progress: Show a progress bar when the corpus or index is built.

    Info keys (besides agent_gym.core.INFO_KEYS): ``precision``, ``recall``, ``f1`` of the
    pool papers scoring at least ``select_threshold`` against the gold set (``score`` is the
    recall, ``won`` is recall 1), ``pool_size``, ``num_gold``; after ``step`` also ``calls``
    (per call: ``call``, ``reward``, ``new_papers``, ``note``) and ``skipped_lines``.
    """

    default_data_source = DATA_SOURCE
    tools = (SEARCH_TOOL, EXPAND_TOOL, FINISH_TOOL)
    prompt_templates = PROMPTS
    max_parallel_calls = 5

    def __init__(
        self,
        data: str | os.PathLike[str] = "generated",
        queries: str | os.PathLike[str] | dict | None = None,
        split: str = "train",
        selector: str | dict | Selector = "rule",
        discrete_reward: bool = False,
        render_mode: str | None = None,
        *,
        accounting: str = "agent_r1",
        search_top_k: int = 10,
        citations_limit: int = 30,
        search_cost: float | None = None,
        expand_cost: float | None = None,
        select_threshold: float = 0.5,
        abstract_words: int = 60,
        end_on_invalid: bool = True,
        n_papers: int = 5000,
        n_queries: int = 1000,
        corpus_seed: int = 0,
        progress: bool = False,
    ) -> None:
        super().__init__(render_mode=render_mode)
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is not a split; use one of {SPLITS}")
        if str(data) != "generated" and not Path(data).is_file():
            raise FileNotFoundError(
                f"data={str(data)!r}: no such papers file; pass 'generated' or the path of a "
                "papers JSONL file"
            )
        search_top_k = whole("search_top_k", search_top_k, 1)
        citations_limit = whole("citations_limit", citations_limit, -1)
        search_cost = real("search_cost", search_cost, none=True)
        expand_cost = real("expand_cost", expand_cost, none=True)
        select_threshold = real("select_threshold", select_threshold)
        abstract_words = whole("abstract_words", abstract_words, 1)
        n_papers, n_queries = whole("n_papers", n_papers, 1), whole("n_queries", n_queries, 1)
        corpus_seed = whole("corpus_seed", corpus_seed)
        for name, value in (("discrete_reward", discrete_reward), ("end_on_invalid", end_on_invalid),
                            ("progress", progress)):  # fmt: skip
            flag(name, value)
        if accounting not in ACCOUNTINGS:
            raise ValueError(
                f"accounting={accounting!r} is not an accounting; use one of {list(ACCOUNTINGS)}"
            )
        self.data, self.queries, self.split = data, queries, split
        self.selector = make_selector(selector)
        self.discrete_reward = bool(discrete_reward)
        self.accounting = ACCOUNTINGS[accounting]
        self.search_top_k, self.citations_limit = search_top_k, citations_limit
        rules = self.accounting
        self.search_cost = float(rules.search_cost if search_cost is None else search_cost)
        self.expand_cost = float(rules.expand_cost if expand_cost is None else expand_cost)
        self.select_threshold, self.abstract_words = float(select_threshold), abstract_words
        self.end_on_invalid = end_on_invalid
        self._gen = {"n_papers": n_papers, "n_queries": n_queries, "seed": corpus_seed}
        self._progress = progress
        self._corpus: Corpus | None = None
        self._index: SearchIndex | None = None
        self._by_id: dict[str, Query] = {}
        self._query: Query | None = None
        self._done = False
        self._episode: Episode | None = None

    @property
    def num_tasks(self) -> int:
        """Queries in this env's split (loads the corpus on first use)."""
        self._load()
        return len(self._corpus.queries[self.split])

    # ----------------------------------------------------------------- data
    def _load(self) -> None:
        """Load (or build and cache) the corpus on first use: construction stays instant."""
        if self._corpus is not None:
            return
        corpus, index = get_corpus(
            self.data,
            self.queries,
            progress=self._progress,
            n_papers=self._gen["n_papers"],
            n_queries=self._gen["n_queries"],
            seed=self._gen["seed"],
            on_report=_warn_dropped,
        )
        if not corpus.queries.get(self.split):
            have = [s for s in SPLITS if corpus.queries.get(s)]
            raise ValueError(
                f"split={self.split!r} has no queries in {corpus.data_source}; "
                f"splits with queries: {have}"
            )
        self._corpus, self._index = corpus, index
        self._by_id = {q.query_id: q for q in corpus.queries[self.split]}

    @property
    def corpus(self) -> Corpus:
        """The corpus (loaded on first access)."""
        self._load()
        return self._corpus

    @property
    def query(self) -> Query | None:
        """The current task, or None before the first reset."""
        return self._query

    # ----------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on a query of the split.

        ``seed`` picks the query deterministically; ``options={"task_id": ...}`` names it.
        """
        super().reset(seed=seed)
        self._load()
        queries = self._corpus.queries[self.split]
        task_id = check_reset_options(options).get("task_id")
        if task_id is not None:
            task_id = str(task_id)
            if task_id not in self._by_id:
                raise ValueError(
                    f"task_id={task_id!r} is not in split {self.split!r} of "
                    f"{self._corpus.data_source} (ids look like {queries[0].query_id!r})"
                )
            self._query = self._by_id[task_id]
        else:
            self._query = queries[int(self.np_random.integers(len(queries)))]
        self._episode = Episode(
            self._query,
            self._corpus,
            self._index,
            self.selector,
            self.accounting,
            search_cost=self.search_cost,
            expand_cost=self.expand_cost,
            search_top_k=self.search_top_k,
            citations_limit=self.citations_limit,
            discrete=self.discrete_reward,
        )
        self._done = False
        obs = self._state_text()
        self._last_obs = obs
        return obs, self._info(obs)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run the tool calls in ``action`` (one per line, at most 5)."""
        action = self._check_action(action)
        if self._query is None:
            raise ResetNeeded("call reset() before step()")
        if self._done:
            state = self._state_text()
            obs = self._fit(state + "\n\n### Last Step\nThe episode is over; call reset().")
            self._last_obs = obs
            return obs, 0.0, True, False, self._info(state, valid=False, calls=[], skipped=0)
        parsed = parse_action(
            action,
            self.max_parallel_calls,
            limit_counts_malformed=self.accounting.limit_counts_malformed,
        )
        results = self._episode.run_step(parsed.calls)
        reward = sum(r.reward for r in results)
        calls = [
            {"call": str(r.call), "reward": r.reward, "new_papers": r.new_papers, "note": r.note}
            for r in results
        ]
        feedback = [f"{r.call}: {r.note} (reward {r.reward:+.2f})" for r in results]
        feedback += [f"skipped: {p}" for p in parsed.problems]
        if parsed.skipped > len(parsed.problems):
            feedback.append(f"skipped: {parsed.skipped - len(parsed.problems)} more lines")
        valid = bool(parsed.calls)
        terminated = any(c.tool == "finish" for c in parsed.calls)
        if not valid:
            if not parsed.skipped:
                feedback.append("The action is empty.")
            feedback.append(
                "No valid tool call in this step, so the episode ends."
                if self.end_on_invalid
                else "No valid tool call in this step; nothing changed."
            )
            terminated = self.end_on_invalid
        self._done = terminated
        state = self._state_text()
        obs = self._fit(state + "\n\n### Last Step\n" + "\n".join(feedback))
        self._last_obs = obs
        info = self._info(state, valid=valid, calls=calls, skipped=parsed.skipped)
        return obs, float(round(reward, 6)), terminated, False, info

    # ----------------------------------------------------------------- views
    def _fit(self, text: str) -> str:
        return fit(text, self.observation_space.max_length)

    def _state_text(self) -> str:
        """The observation of the current state: query, history actions and paper list."""
        ep = self._episode
        query = self._query.text
        if len(query) > MAX_QUERY_CHARS:
            query = query[:MAX_QUERY_CHARS] + " ..."
        papers = render_paper_list(ep.pool.view(), self._corpus.paper, self.abstract_words)
        return self._fit(
            f"### User Query\n{query}\n\n### History Actions\n{ep.history_text()}\n\n"
            f"### Paper List\n{papers}"
        )

    def _admissible(self) -> list[str]:
        if self._done:
            return []
        pool = self._episode.pool
        expands = [f"expand[{e.paper_id}]" for e in pool.view() if not e.expanded]
        return ["search[<query>]", *expands, "finish[]"]

    def _info(self, state: str, **step: Any) -> dict[str, Any]:
        q, pool = self._query, self._episode.pool
        p, r, f = precision_recall_f1(pool.selected(self.select_threshold), q.gold)
        info = {
            "task": q.text,
            "task_id": q.query_id,
            "anchor_obs": state,
            "admissible_actions": self._admissible(),
            "won": r >= 1.0,
            "score": float(r),
            "data_source": self._corpus.data_source,
            "precision": p,
            "recall": r,
            "f1": f,
            "pool_size": len(pool),
            "num_gold": len(q.gold),
        }
        if step:
            info["is_action_valid"] = step["valid"]
            info["calls"] = step["calls"]
            info["skipped_lines"] = step["skipped"]
        # Data (a JSON "\ud800" escape, a file name that was not UTF-8) may hold lone
        # surrogates too: every string of info must encode.
        return scrub_all(info)

    # ----------------------------------------------------------------- helpers
    def expert_action(self) -> str | None:
        """The oracle's next action (it knows the gold set), or None outside an episode.

        Returns the calls that cover the most missing gold papers (see :mod:`.oracle`), or
        ``"finish[]"`` once every gold paper is in the pool.
        """
        if self._query is None or self._done:
            return None
        ep = self._episode
        calls = plan_calls(
            self._query,
            set(ep.pool.ids()),
            {pid for pid in ep.pool.ids() if ep.pool.is_expanded(pid)},
            ep.searched,
            self._corpus,
            self._index,
            max_calls=self.max_parallel_calls,
            top_k=self.search_top_k,
            repeat_key=self.accounting.repeat_key,
            linked=ep.linked,
        )
        return "\n".join(calls) if calls else "finish[]"

    @classmethod
    def prepare(cls, *, progress: bool = True, **kwargs: Any) -> str:
        """Build and cache the corpus and search index (idempotent); return a summary line.

        Accepts the constructor's keywords (``data``, ``queries``, ``n_papers``, ...).
        """
        env = cls(**kwargs)  # validates the arguments
        start = time.perf_counter()
        if str(env.data) == "generated":
            g = env._gen
            corpus, _, built = build_generated(g["n_papers"], g["n_queries"], g["seed"], progress)
            where = generated_folder(g["n_papers"], g["n_queries"], g["seed"])
            state = "built" if built else "already cached"
        else:
            corpus, _, report = build_jsonl(env.data, env.queries, progress)
            where = Path(env.data)
            state = (
                f"indexed; dropped {report.dangling_references} dangling references, "
                f"{report.unresolved_answers} unresolved answers, "
                f"{report.skipped_queries} queries without answers"
            )
        counts = "/".join(str(len(corpus.queries[s])) for s in SPLITS)
        return (
            f"{cls.__name__}: {len(corpus.papers)} papers, {counts} train/dev/test queries, "
            f"{state} in {time.perf_counter() - start:.1f}s ({corpus.data_source}, {where})"
        )
