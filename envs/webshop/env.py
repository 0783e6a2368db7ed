"""``AgentR1/WebShop-v0``: find and buy the product a shopping instruction describes.

A Gymnasium port of upstream WebShop's text environment (``web_agent_text_env.py``) on an
offline catalogue. See docs/datasets.md (WebShop) for the data, the splits and the reward.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote

import gymnasium as gym

from agent_gym.checks import whole
from agent_gym.core import ENV_STEP_TOOL, TextEnv, ToolSpec, check_reset_options
from agent_gym.envs.webshop import expert, pages
from agent_gym.envs.webshop.catalog import SPLITS, Goal, Product, check_data_folder
from agent_gym.envs.webshop.generator import DATA_SOURCE
from agent_gym.envs.webshop.nouns import resolve_noun_parser
from agent_gym.envs.webshop.prompts import WEBSHOP_PROMPTS
from agent_gym.envs.webshop.reward import REWARD_MODES, Reward, purchase_reward
from agent_gym.envs.webshop.safe_text import bounded, encodable
from agent_gym.envs.webshop.search import SEARCH_RETURN_N

#: The admissible-action placeholder for a search (the agent fills in its own keywords).
SEARCH_PLACEHOLDER = "search[<your query>]"
#: Results per page (upstream ``PRODUCT_WINDOW``).
PRODUCT_WINDOW = 10
#: Search keywords are cut to this many characters before they are searched and shown, so a
#: runaway action never bloats the pages (upstream has no limit).
MAX_QUERY_CHARS = 300
#: Longest observation (``observation_space.max_length``); longer pages are cut.
MAX_OBSERVATION_CHARS = 1_000_000
SUB_PAGES = ("description", "features", "reviews")
_ACTION = re.compile(r"\s*(search|click)\[(.*)\]\s*", re.DOTALL | re.IGNORECASE)


@dataclass
class _Session:
    """Where the shopper is: the page and what led there."""

    page: str = "search"
    keywords: str | None = None
    page_num: int = 1
    results: tuple[int, ...] = ()
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    reward: Reward | None = None


class WebShopEnv(TextEnv):
    """Shop on a WebShop site: ``search[keywords]`` and ``click[...]`` until "buy now".

    Observations are the visible text of the current page (strings joined with
    `` [SEP] ``), or its HTML with ``observation_mode="html"``. ``click`` takes a lower-cased
    button text, product id or option value listed in ``info["admissible_actions"]``;
    ``search`` works on the search page only. The reward is 0 until "buy now", which ends the
    episode (``terminated``) with upstream's purchase reward in [0, 1]. ``info["won"]`` is
    reward >= 1 and ``info["score"]`` is the reward so far.

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> env = gym.make("AgentR1/WebShop-v0")
        >>> obs, info = env.reset(seed=0)
        >>> obs.startswith("WebShop [SEP] Instruction:")
        True
        >>> while (action := env.unwrapped.expert_action()) is not None:
        ...     obs, reward, terminated, truncated, info = env.step(action)
        >>> reward, terminated, info["won"]
        (1.0, True, True)
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "render_fps": 4}
    default_data_source: ClassVar[str] = DATA_SOURCE
    tools: ClassVar[tuple[ToolSpec, ...]] = (ENV_STEP_TOOL,)
    prompt_templates = WEBSHOP_PROMPTS

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] = "generated",
        split: str = "train",
        num_products: int | None = None,
        goals_per_product: int = 6,
        seed: int = 0,
        reward: str = "upstream",
        noun_parser: str = "auto",
        observation_mode: str = "text",
        render_mode: str | None = None,
    ) -> None:
        """Configure the env; data is built or loaded on the first ``reset``.

        Args:
            data: ``"generated"`` (the offline catalogue) or a folder with upstream's files
                (``items_shuffle*.json``, ``items_ins_v2*.json``, ``items_human_ins.json``);
                a folder that lacks them is an error here, before any episode.
            split: ``"train"``, ``"eval"`` or ``"test"`` (upstream's goal ranges).
            num_products: Catalogue size (generated default 1,000; official default all).
            goals_per_product: Goals per generated product.
            seed: Seed of the generated catalogue (not of the episode: pass that to reset).
            reward: ``"upstream"`` (upstream's ``get_reward``) or ``"strict"`` (exact sizes,
                one chosen option per goal option; see :mod:`.reward`).
            noun_parser: Title nouns of the reward's type part: ``"auto"`` (spaCy when a
                model is installed, else the heuristic), ``"spacy"`` (an error here when no
                model is installed) or ``"heuristic"`` (not upstream's; see :mod:`.nouns`).
            observation_mode: ``"text"`` (upstream's ``text`` mode) or ``"html"``.
            render_mode: ``None``, ``"ansi"`` or ``"human"``.
        """
        super().__init__(render_mode=render_mode, max_observation_length=MAX_OBSERVATION_CHARS)
        if split not in SPLITS:
            raise ValueError(f"split={split!r} is not one of {list(SPLITS)}")
        if reward not in REWARD_MODES:
            raise ValueError(f"reward={reward!r} is not one of {REWARD_MODES}")
        if observation_mode not in ("text", "html"):
            raise ValueError(f"observation_mode={observation_mode!r}; use 'text' or 'html'")
        if isinstance(data, os.PathLike):
            data = os.fspath(data)
        if not isinstance(data, str):
            raise TypeError(f"data must be 'generated' or a folder path, got {data!r:.80}")
        if data != "generated":
            check_data_folder(data)  # cheap: the files exist; they are parsed at first reset
        self.data, self.split = data, split
        self.num_products = whole("num_products", num_products, 1, none=True)
        self.goals_per_product = whole("goals_per_product", goals_per_product, 1)
        self.seed = whole("seed", seed)
        self.reward_mode = reward
        #: The resolved parser: ``"heuristic"`` or ``"spacy:<model>"``.
        self.noun_parser = resolve_noun_parser(noun_parser)
        self.observation_mode = observation_mode
        #: URL prefix of the links in the pages (the HTTP server sets its session's).
        self.link_prefix = "/s/agent"
        self._store: Any = None
        self._goal: Goal | None = None
        self._session = _Session()
        self._searched: list[str] = []
        self._html = ""
        self._page: pages.ParsedPage | None = None

    # ----------------------------------------------------------------- data
    @property
    def store(self) -> Any:
        """The catalogue and search index (built or loaded on first use)."""
        if self._store is None:
            from agent_gym.envs.webshop.store import get_store

            self._store = get_store(self.data, self.num_products, self.goals_per_product, self.seed)
        return self._store

    @classmethod
    def prepare(cls, *, progress: bool = True, **kwargs: Any) -> str:
        """Build and cache the catalogue and index for these constructor arguments."""
        from agent_gym.envs.webshop.store import get_store

        env = cls(**kwargs)
        store = get_store(
            env.data, env.num_products, env.goals_per_product, env.seed, progress=progress
        )
        cat = store.catalogue
        source = cat.goals[0].data_source if cat.goals else env.default_data_source
        return (
            f"WebShopEnv: {len(cat.products):,} products, {len(cat.goals):,} goals ({source}); "
            f"cached in {store.directory}"
        )

    def _goal_for(self, task_id: Any) -> Goal:
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            split, index = self.split, task_id
        else:
            split, _, number = str(task_id).rpartition("-")
            if split not in SPLITS or not number.isdecimal():
                raise ValueError(
                    f"task_id={task_id!r}: expected '<split>-<number>' such as 'test-3', or "
                    "an index into this env's split"
                )
            index = int(number)
        goals = self.store.catalogue.split(split)
        if not 0 <= index < len(goals):
            raise ValueError(f"task_id={task_id!r}: split {split!r} has {len(goals)} goals")
        return goals[index]

    def _task_id(self, goal: Goal) -> str:
        for name, (lo, hi) in SPLITS.items():
            if goal.index >= lo and (hi is None or goal.index < hi):
                return f"{name}-{goal.index - lo}"
        raise AssertionError(goal.index)  # the splits cover every index

    @property
    def num_tasks(self) -> int:
        """Goals in this env's split."""
        return len(self.store.catalogue.split(self.split))

    # ------------------------------------------------------------ gymnasium
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on the search page; the seed (or ``options["task_id"]``) picks the goal."""
        super().reset(seed=seed)
        task_id = check_reset_options(options).get("task_id")
        if task_id is not None:
            self._goal = self._goal_for(task_id)
        else:
            goals = self.store.catalogue.split(self.split)
            self._goal = goals[int(self.np_random.integers(len(goals)))]
        self._session = _Session()
        self._searched = []
        self._render()
        obs = self._observation()
        self._last_obs = obs
        return obs, self._info(valid=None)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply ``search[...]`` or ``click[...]``; anything else is an invalid action."""
        action = self._check_action(action)
        if self._goal is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        reason = self._apply(action)
        obs = self._observation()
        if reason is not None:
            shown = encodable(action[:80])
            obs = bounded(f"Invalid action {shown!r}: {reason}.\n\n{obs}", MAX_OBSERVATION_CHARS)
        self._last_obs = obs
        reward = self._session.reward
        just_bought = reason is None and reward is not None
        return (
            obs,
            reward.total if just_bought else 0.0,
            just_bought,
            False,
            self._info(valid=reason is None),
        )

    # ------------------------------------------------------------- actions
    def _apply(self, action: str) -> str | None:
        """Apply ``action``; return None, or why it is invalid (state then unchanged)."""
        s, page = self._session, self._page
        assert page is not None
        if s.page == "done":
            return "the item is already bought and the episode is over; call reset()"
        m = _ACTION.fullmatch(action)
        if m is None:
            return "write search[keywords] or click[target], e.g. click[buy now]"
        verb, arg = m.group(1).lower(), encodable(m.group(2)).lower()
        if verb == "search":
            if not page.has_search:
                return "search[...] works on the search page only; click[back to search] first"
            if not arg.strip():
                return "search[...] needs keywords"
            self._search(arg[:MAX_QUERY_CHARS])
        else:
            target = page.clickables.get(arg)
            if target is None:
                return f"{arg[:80]!r} is not clickable on this page; use a listed click[...]"
            self._click(target)
        self._render()
        return None

    def _search(self, keywords: str) -> None:
        self._searched.append(keywords)
        hits = self.store.index.search(keywords, k=SEARCH_RETURN_N)
        self._session = _Session(page="results", keywords=keywords, results=tuple(hits))

    def _click(self, target: pages.Clickable) -> None:
        s = self._session
        if target.kind == "product":
            s.page, s.asin, s.options = "item", target.value, {}
        elif target.kind == "option":
            s.options[target.option] = target.value
        elif target.value == "buy now":
            s.reward = purchase_reward(
                self._product(),
                self._goal,
                s.options,
                noun_parser=self.noun_parser,
                mode=self.reward_mode,
            )
            s.page = "done"
        elif target.value == "back to search":
            self._session = _Session()
        elif target.value == "next >":
            s.page_num += 1
        elif target.value == "< prev":
            if s.page == "results":
                s.page_num -= 1
            elif s.page == "item":
                s.page, s.asin, s.options = "results", None, {}
            else:
                s.page = "item"
        elif target.value in SUB_PAGES:
            s.page = target.value

    # --------------------------------------------------------------- pages
    def _product(self) -> Product:
        return self.store.catalogue.by_asin[self._session.asin]

    def _act_url(self, action: str) -> str:
        # surrogatepass: a lone surrogate in the data must not stop a page from rendering.
        return f"{self.link_prefix}/do?action={quote(action, safe='', errors='surrogatepass')}"

    def _render(self) -> None:
        s, goal = self._session, self._goal
        assert goal is not None
        ctx: dict[str, Any] = {"instruction": goal.instruction, "act": self._act_url}
        if s.page == "search":
            ctx["search_url"] = f"{self.link_prefix}/search"
        elif s.page == "results":
            products = self.store.catalogue.products
            window = s.results[(s.page_num - 1) * PRODUCT_WINDOW : s.page_num * PRODUCT_WINDOW]
            ctx.update(
                keywords=s.keywords,
                page=s.page_num,
                total=len(s.results),
                products=[products[i] for i in window],
            )
        elif s.page == "done":
            ctx.update(
                product=self._product(), options=s.options, reward=s.reward, new_task_url="/"
            )
        else:
            ctx.update(keywords=s.keywords, product=self._product(), options=s.options)
        # Data files may hold lone surrogates too ("\ud800" is valid JSON): drop them here, so
        # nothing derived from the page (text, clickables, admissible actions) carries one.
        self._html = encodable(pages.render(s.page, **ctx))
        self._page = pages.parse_page(self._html)

    @property
    def page_html(self) -> str:
        """HTML of the current page (what the HTTP server sends a browser)."""
        return self._html

    def _observation(self) -> str:
        assert self._page is not None
        obs = self._html if self.observation_mode == "html" else self._page.text
        return bounded(obs, MAX_OBSERVATION_CHARS)

    def _admissible(self) -> list[str]:
        assert self._page is not None
        if self._session.page == "done":
            return []
        acts = [SEARCH_PLACEHOLDER] if self._page.has_search else []
        return acts + [f"click[{key}]" for key in self._page.clickables]

    def _info(self, valid: bool | None) -> dict[str, Any]:
        goal, s = self._goal, self._session
        assert goal is not None and self._page is not None
        reward = s.reward
        info: dict[str, Any] = {
            "task": encodable(goal.instruction),
            "task_id": self._task_id(goal),
            "anchor_obs": self._page.text,
            "admissible_actions": self._admissible(),
            "won": bool(reward is not None and reward.total >= 1.0),
            "score": float(reward.total) if reward is not None else 0.0,
            "data_source": encodable(goal.data_source),
            "page": s.page,
        }
        if valid is not None:
            info["is_action_valid"] = valid
        if reward is not None and valid:
            info["reward_info"] = reward.as_dict()
            info["purchased"] = {"asin": s.asin, "options": dict(s.options)}
        return info

    # -------------------------------------------------------------- expert
    def expert_action(self) -> str | None:
        """The scripted expert's next action (see :mod:`.expert`); None once bought."""
        if self._goal is None:
            raise gym.error.ResetNeeded("call reset() before expert_action()")
        assert self._page is not None
        return expert.next_action(
            self._goal,
            self.store.catalogue.by_asin.get(self._goal.asin),
            self._session.page,
            list(self._page.clickables),
            self._session.asin,
            self._session.options,
            self._searched,
        )
