"""``AgentR1/HotpotQA-v0``: multi-hop question answering with a BM25 search tool.

Actions are ``search[query]`` (one per line, up to :attr:`HotpotQAEnv.max_parallel_calls` per
action; each returns the top ``top_k`` passages) and ``answer[text]``, which ends the episode
with HotpotQA's official EM/F1 (:mod:`agent_gym.envs.hotpotqa.scoring`). Tool steps give reward
0 and the answer gives EM (or F1 with ``reward="f1"``), as in Agent-R1's recipe; an episode that
runs out of steps (5 under ``gym.make``) never answers and so scores 0.

>>> import gymnasium as gym, agent_gym
>>> env = gym.make("AgentR1/HotpotQA-v0")
>>> obs, info = env.reset(seed=0)
>>> while (action := env.unwrapped.expert_action()) is not None:  # search, then answer
...     obs, reward, terminated, truncated, info = env.step(action)
>>> reward, terminated, info["won"]
(1.0, True, True)
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from gymnasium.error import ResetNeeded

from agent_gym.checks import flag, whole
from agent_gym.core import TextEnv, check_reset_options
from agent_gym.envs.hotpotqa.actions import (
    Answer,
    Invalid,
    Search,
    clean,
    encodable,
    parse_action,
)
from agent_gym.envs.hotpotqa.prompts import ANSWER_TOOL, PROMPTS, SEARCH_TOOL
from agent_gym.envs.hotpotqa.records import Question
from agent_gym.envs.hotpotqa.scoring import score_answer
from agent_gym.envs.hotpotqa.sources import GENERATED_SOURCE, QASource, open_source
from agent_gym.envs.hotpotqa.state import EpisodeState, render_state

SPLITS = ("train", "dev", "test")
#: ``info["prediction"]`` is the answer cut to this many characters.
MAX_PREDICTION_CHARS = 1000
ADMISSIBLE = ["search[<query>]", "answer[<answer>]"]
ACCEPTED = (
    "Accepted actions: search[<query>] (up to {n} lines, one search per line) or "
    "answer[<short answer>]."
)


class HotpotQAEnv(TextEnv):
    """HotpotQA-style multi-hop QA over a BM25 index.

    Args:
        data: ``"generated"`` (the offline HotpotQA-style set built from ``countryinfo``
            facts; not HotpotQA) or the path of an official HotpotQA JSON file
            (``hotpot_dev_distractor_v1.json``: each question searches its own 10 paragraphs).
        corpus: With an official file, the path of a fullwiki JSONL corpus (``title``,
            ``text`` per line); all questions then search it (its index is built once and
            cached).
        split: ``"train"``, ``"dev"`` or ``"test"`` of the generated set; an official file is
            a single split, and this is ignored for it.
        reward: ``"em"`` (0/1, the default, as Agent-R1) or ``"f1"``.
        top_k: Passages returned per search.
        passage_chars: Each passage is shown cut to this many characters.
        passages_budget: Characters of passages kept in the observation (oldest dropped first).
        max_query_chars: Longer queries are invalid actions.
        force_first_search: Search the question itself at reset, as Agent-R1's
            ``force_first_search`` does.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.

    Info keys (besides :data:`agent_gym.core.INFO_KEYS`): ``em`` and ``f1`` of the answer (0
    before it), ``question_type``; after the answer also ``prediction`` and ``gold_answer``.
    """

    default_data_source: ClassVar[str] = GENERATED_SOURCE
    tools = (SEARCH_TOOL, ANSWER_TOOL)
    prompt_templates = PROMPTS
    max_parallel_calls: ClassVar[int] = 4

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] = "generated",
        corpus: str | os.PathLike[str] | None = None,
        split: str = "train",
        reward: str = "em",
        top_k: int = 5,
        passage_chars: int = 1200,
        passages_budget: int = 6000,
        max_query_chars: int = 300,
        force_first_search: bool = True,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is not one of {SPLITS}")
        if reward not in ("em", "f1"):
            raise ValueError(f"reward={reward!r} must be 'em' (exact match) or 'f1'")
        top_k, passage_chars = whole("top_k", top_k, 1), whole("passage_chars", passage_chars, 1)
        passages_budget = whole("passages_budget", passages_budget, 1)
        max_query_chars = whole("max_query_chars", max_query_chars, 1)
        flag("force_first_search", force_first_search)
        if data != "generated" and not os.path.isfile(data):
            raise FileNotFoundError(
                f"data={str(data)!r}: no such file; use data='generated' or the path of an "
                "official HotpotQA JSON file (e.g. hotpot_dev_distractor_v1.json)"
            )
        self.data, self.corpus, self.split, self.reward = data, corpus, split, reward
        self.top_k, self.passage_chars, self.passages_budget = top_k, passage_chars, passages_budget
        self.max_query_chars, self.force_first_search = max_query_chars, force_first_search
        self._source: QASource | None = None
        self._question: Question | None = None
        self._state: EpisodeState | None = None
        self._done = False
        self._em = self._f1 = 0.0

    # -- data ---------------------------------------------------------------------------------

    def _load(self, progress: bool = False) -> QASource:
        if self._source is None:
            self._source = open_source(self.data, self.corpus, progress=progress)
        return self._source

    @classmethod
    def prepare(cls, *, progress: bool = True, **kwargs: Any) -> str:
        """Build and cache the question set and its search index (idempotent).

        Args:
            progress: Show progress bars while building.
            **kwargs: Constructor arguments (``data``, ``corpus``, ...).

        Returns:
            A one-line summary: questions per split, passages, cache location.
        """
        env = cls(**kwargs)
        try:
            source = env._load(progress=progress)
        finally:
            env.close()
        sizes = ", ".join(f"{k or 'all'} {v:,}" for k, v in sorted(source.split_sizes().items()))
        return (
            f"{cls.__name__}: {source.data_source}: questions {sizes}; "
            f"{source.num_passages:,} shared passages; at {source.location}"
        )

    @property
    def num_tasks(self) -> int:
        """Questions in this env's split (loads the question set on first use)."""
        return len(self._load().questions(self.split))

    # -- Gymnasium API ------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on the question picked by ``seed`` or ``options["task_id"]``."""
        super().reset(seed=seed)
        source = self._load()
        task_id = check_reset_options(options).get("task_id")
        if task_id is not None:
            question = source.by_id.get(str(task_id))
            if question is None:
                raise ValueError(
                    f"task_id {task_id!r} is not in {source.data_source}; task ids look like "
                    f"{next(iter(source.by_id))!r}"
                )
        else:
            pool = source.questions(self.split)
            if not pool:
                raise ValueError(f"{source.data_source} has no questions in split {self.split!r}")
            question = pool[int(self.np_random.integers(len(pool)))]
        self._question = question
        self._state = EpisodeState(question.question)
        self._done = False
        self._em = self._f1 = 0.0
        if self.force_first_search:
            self._search(question.question)
        obs = self._render()
        self._last_obs = obs
        return obs, self._info(obs)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply ``search[...]`` lines or ``answer[...]``; anything else is an invalid action."""
        action = self._check_action(action)
        if self._question is None or self._state is None:
            raise ResetNeeded("call reset() before step()")
        accepted = ACCEPTED.format(n=self.max_parallel_calls)
        if self._done:
            parsed: Search | Answer | Invalid = Invalid("the question is already answered")
        else:
            parsed = parse_action(
                action, max_calls=self.max_parallel_calls, max_query_chars=self.max_query_chars
            )
        reward = 0.0
        if isinstance(parsed, Invalid):
            state = self._render()
            obs = self._fit(f"{state}\n\n### Feedback\nInvalid action: {parsed.reason}. {accepted}")
            self._last_obs = obs
            return obs, reward, self._done, False, self._info(state, valid=False)
        if isinstance(parsed, Search):
            new = sum(self._search(q) for q in parsed.queries)
            state = self._render()
            obs = state if new else f"{state}\n\n### Feedback\nThe search found no new passages."
        else:
            self._em, self._f1 = score_answer(parsed.text, self._question.answer)
            self._done = True
            reward = self._em if self.reward == "em" else self._f1
            state = self._render()
            obs = (
                f"{state}\n\n### Result\nYour answer: {clean(parsed.text, 300)}\n"
                f"Exact match: {self._em:.0f}, F1: {self._f1:.2f}"
            )
        obs = self._fit(obs)
        self._last_obs = obs
        info = self._info(state, valid=True)
        if isinstance(parsed, Answer):
            info["prediction"] = clean(parsed.text, MAX_PREDICTION_CHARS)
            info["gold_answer"] = encodable(self._question.answer)
        return obs, float(reward), self._done, False, info

    # -- oracle -------------------------------------------------------------------------------

    def expert_action(self) -> str | None:
        """The oracle's next action, for tests and baselines.

        Searches the supporting titles not yet retrieved (several in one action), then answers
        the gold. ``None`` once the episode is over or before ``reset``.
        """
        if self._question is None or self._state is None or self._done:
            return None
        # Titles already retrieved or already searched for (a corpus may lack a page) are done.
        done = set(self._state.searches) | {r.passage.title for r in self._state.passages}
        todo = [t for t in self._question.supporting_titles if t not in done]
        if todo:
            return "\n".join(f"search[{t}]" for t in todo[: self.max_parallel_calls])
        return f"answer[{self._question.answer}]"

    # -- internals ----------------------------------------------------------------------------

    def _search(self, query: str) -> int:
        assert self._source is not None and self._state is not None and self._question
        found = self._source.search(self._question, query, self.top_k)
        return self._state.add(query, found)

    def _render(self) -> str:
        assert self._state is not None
        return self._fit(
            render_state(self._state, passage_chars=self.passage_chars, budget=self.passages_budget)
        )

    def _fit(self, text: str) -> str:
        """The last guarantee that an observation is in the observation space.

        The state's own bounds keep it far shorter; this cuts only if they are configured
        absurdly large.
        """
        limit = self.observation_space.max_length
        return text if len(text) <= limit else text[:limit]

    def _info(self, state_text: str, *, valid: bool | None = None) -> dict[str, Any]:
        assert self._question is not None and self._source is not None
        score = self._em if self.reward == "em" else self._f1
        info: dict[str, Any] = {
            "task": encodable(self._question.question),
            "task_id": encodable(self._question.id),
            "anchor_obs": state_text,
            "admissible_actions": [] if self._done else list(ADMISSIBLE),
            "won": self._em == 1.0,
            "score": float(score),
            "data_source": encodable(self._source.data_source),
            "em": float(self._em),
            "f1": float(self._f1),
            "question_type": encodable(self._question.type),
        }
        if valid is not None:
            info["is_action_valid"] = valid
        return info
