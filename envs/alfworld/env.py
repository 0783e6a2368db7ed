"""``AgentR1/ALFWorld-v0``: ALFWorld's household tasks on TextWorld's PDDL engine, as a Gymnasium env.

Observations, actions and rewards follow ALFWorld: the intro text ends with
``"Your task is to: ..."``; entity names read ``"<type> <n>"``; the admissible commands are
listed in ``info`` every step (sorted, as upstream); any other text gives
``"Nothing happens."`` with ``is_action_valid=False`` and the state untouched; the reward is 1
on the step that wins, and winning terminates. The step limit (50) comes from the registered
``TimeLimit``.

By default the games are generated (:mod:`.generator`, ``data_source =
"generated:alfworld-layouts"``); ``data="/path/to/json_2.1.1"`` plays the official games.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable
from typing import Any, ClassVar

from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding

from agent_gym.checks import flag
from agent_gym.core import ENV_STEP_TOOL, PromptTemplates, TextEnv, ToolSpec, check_reset_options
from agent_gym.envs.alfworld import expert
from agent_gym.envs.alfworld.gamefile import load_error
from agent_gym.envs.alfworld.games import (
    DEFAULT_NUM_GAMES,
    GENERATED_SOURCE,
    SPLITS,
    GameRecord,
    GeneratedGames,
    check_count,
    check_split,
    check_task_types,
)
from agent_gym.envs.alfworld.prompts import ALFWORLD_PROMPTS, type_rounds

INVALID_FEEDBACK = "Nothing happens."

#: Who replans for the expert once the agent leaves the plan (see ALFWorldEnv.expert_action).
EXPERT_REPLANNERS = ("task_planner", "fast_downward")
TASK_PREFIX = "Your task is to: "

# Commands that only read the world (they add "checked" facts that no precondition or goal
# uses), so an expert plan stays valid across them.
_READ_ONLY = ("look", "inventory", "help", "examine ")


def _encodable(text: str) -> str:
    """``text`` without what UTF-8 cannot encode (lone surrogates from a game file or path)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "ignore").decode("utf-8")


class ALFWorldEnv(TextEnv):
    """ALFWorld household tasks (six task types) on TextWorld's PDDL engine.

    Args:
        data: ``"generated"`` (the built-in games) or a path to the official ``json_2.1.1``.
        split: ``"train"``, ``"valid_seen"`` or ``"valid_unseen"``.
        num_games: Number of games in the split (generated default: 3553 / 140 / 134, the
            official split sizes; official data: all solvable games).
        task_types: Keep only this task type or these (default: the six).
        expert_plan: Add ``info["expert_plan"]``, the commands that solve the game from the
            current state (see :meth:`expert_action`).
        expert_replanner: Who replans off the walkthrough: ``"task_planner"`` (milliseconds,
            fast-downward only as a fallback) or ``"fast_downward"`` (always fast-downward, as
            upstream's ``planner`` expert does; seconds to minutes per replan).
        generator_seed: Seed of the generated game set.
        render_mode: ``None``, ``"ansi"`` or ``"human"``.

    Raises:
        ValueError: An argument is malformed (the message names it and its value); checked
            here, before any game is read.

    Attributes:
        expert_source: Who made the expert's current plan: ``"walkthrough"`` (the game's
            own), ``"task_planner"`` (:mod:`.expert`, milliseconds) or ``"fast_downward"``
            (TextWorld's planner, the fallback); ``None`` before the expert is asked.

    Example:
        >>> import gymnasium as gym, agent_gym
        >>> env = gym.make("AgentR1/ALFWorld-v0")
        >>> obs, info = env.reset(seed=0)
        >>> "Your task is to:" in obs
        True
        >>> obs, reward, terminated, truncated, info = env.step(info["admissible_actions"][0])
    """

    default_data_source: ClassVar[str] = GENERATED_SOURCE
    tools: ClassVar[tuple[ToolSpec, ...]] = (ENV_STEP_TOOL,)
    prompt_templates: ClassVar[PromptTemplates] = ALFWORLD_PROMPTS

    def __init__(
        self,
        *,
        data: str | os.PathLike[str] = "generated",
        split: str = "train",
        num_games: int | None = None,
        task_types: str | Iterable[str] | None = None,
        expert_plan: bool = False,
        expert_replanner: str = "task_planner",
        generator_seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(render_mode=render_mode)
        if not isinstance(data, (str, os.PathLike)):
            raise ValueError(
                f"data must be 'generated' or the path of a json_2.1.1 folder, got {data!r}"
            )
        self.split = check_split(split)
        self.task_types = check_task_types(task_types)
        num_games = check_count("num_games", num_games)
        self.expert_plan = flag("expert_plan", expert_plan)
        if expert_replanner not in EXPERT_REPLANNERS:
            raise ValueError(
                f"expert_replanner={expert_replanner!r} is not one of "
                f"{', '.join(EXPERT_REPLANNERS)}"
            )
        self.expert_replanner = expert_replanner
        if str(data) == "generated":
            self.games: Any = GeneratedGames(split, num_games, self.task_types, generator_seed)
        else:
            from agent_gym.envs.alfworld.official import OfficialGames

            self.games = OfficialGames(data, split, self.task_types, num_games)
        self._engine: Any = None
        self._record: GameRecord | None = None
        self._walkthrough: list[str] | None = None
        self._goal: expert.Goal | None = None
        self._plan: list[str] | None = None
        self.expert_source: str | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self._task = ""
        self._anchor = ""
        self._admissible: list[str] = []
        self._won = False

    # -- Gymnasium API ------------------------------------------------------------------------

    @property
    def num_tasks(self) -> int:
        """Games in this env's set (its split and task types)."""
        return len(self.games)

    def task_id_for(self, seed: int) -> str:
        """The ``info["task_id"]`` that ``reset(seed=seed)`` starts, without loading the game.

        Finding 64 distinct held-out games this way takes milliseconds, not the ~0.2-0.6 s a
        TextWorld load costs per seed.
        """
        k = int(seeding.np_random(seed)[0].integers(len(self.games)))  # as reset draws it
        return _encodable(self.games.record(k).task_id)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a game: chosen by ``seed`` (deterministically) or ``options["task_id"]``.

        Raises:
            ValueError: ``options["task_id"]`` names no game of this env's set.
            GameFileError: The game file is malformed or TextWorld cannot load it (the
                message names the file and what is wrong).
        """
        super().reset(seed=seed)
        task_id = check_reset_options(options).get("task_id")
        if task_id is not None:
            k = self.games.position(str(task_id))
        else:
            k = int(self.np_random.integers(len(self.games)))
        record = self.games.record(k)
        engine = self._get_engine()
        data = record.read()
        try:
            engine.load(record.task_id, data)
            obs, admissible, won = engine.reset()
        except Exception as err:  # TextWorld's parsers name no file; say which one failed
            self._record = None
            raise load_error(record.path, err) from err
        self._record = record
        self._walkthrough = data.get("walkthrough")
        self._goal = expert.parse_goal(record.task_type, data["pddl_problem"])
        self._plan = list(self._walkthrough) if self._walkthrough else None
        self.expert_source = "walkthrough" if self._plan else None
        obs = self._observation(obs)
        self._task = obs.split(TASK_PREFIX, 1)[1].strip() if TASK_PREFIX in obs else ""
        self._anchor, self._admissible, self._won = obs, admissible, won
        self._last_obs = obs
        self._searched: dict[str, None] = {}  # places whose inside the agent has been shown
        self._holding = False  # the agent picked up an object of the goal's type
        self._places = [a[6:] for a in admissible if a.startswith("go to ")]  # the room's
        self._reset_seed = seed
        self._search_order: list[str] | None = None  # shuffled_search_expert_action's, drawn once
        self._location = ""  # where the agent's last valid "go to" took it
        self._carrying = ""  # what the agent's last valid "take" picked up, until put down
        return obs, self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one command; text that is not an admissible command changes nothing."""
        action = self._check_action(action)
        if self._record is None:
            raise ResetNeeded("call reset() before step()")
        command = action.strip()  # as TextWorld does
        # Once the task is solved the episode is over: no command is admissible any more (the
        # game would play on and could be won, and rewarded, again).
        valid = not self._won and command in self._admissible
        was_won = self._won
        if valid:
            obs, self._admissible, self._won = self._engine.step(command)
            obs = self._anchor = self._observation(obs)
            self._advance_plan(command)
            self._note_search(command, obs)
        else:
            # Not admissible: TextWorld would answer "Nothing happens." without changing the
            # state, so the engine is not called at all.
            obs = INVALID_FEEDBACK
        self._last_obs = obs
        reward = 1.0 if self._won and not was_won else 0.0
        info = self._info()
        info["is_action_valid"] = valid
        return obs, reward, self._won, False, info

    def close(self) -> None:
        """Release the engine (idempotent)."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        self._record = None  # no game without its engine, even if a later reset fails
        super().close()

    # -- Expert ---------------------------------------------------------------------------------

    def expert_action(self) -> str | None:
        """Next command of a scripted expert from the current state (``None`` once won).

        While the agent follows the game's walkthrough, this is the walkthrough's next step
        (free). After any other state change (or on games without a walkthrough), the
        task-structured planner of :mod:`.expert` replans from the current PDDL facts in
        milliseconds, and its plan is followed while the agent follows it; only where that
        planner has no plan whose next command is admissible does fast-downward replan
        (seconds to minutes on large kitchens); ``expert_replanner="fast_downward"`` always
        replans with fast-downward. :attr:`expert_source` says which one spoke.
        """
        plan = self._expert_plan()
        return plan[0] if plan else None

    def _expert_plan(self) -> list[str]:
        if self._record is None:
            raise RuntimeError("call reset() before asking for the expert")
        if self._won:
            return []
        if self._plan and self._plan[0] in self._admissible:
            return list(self._plan)
        plan = None
        if self.expert_replanner == "task_planner" and self._goal is not None:
            plan = self._engine.task_plan(self._goal)
        if plan and plan[0] in self._admissible:
            self.expert_source = "task_planner"
        else:
            plan = self._engine.plan()
            self.expert_source = "fast_downward"
        self._plan = plan
        return list(plan)

    def search_expert_action(self) -> str | None:
        """Next command of an expert that must search for the object (``None`` once won).

        :meth:`expert_action` knows where the task's object is and walks straight to it; a
        policy that sees only the text cannot, so cloning it teaches guesses. This expert knows
        only what the agent has been shown: until an object of the goal's type is in view, it
        opens the closed receptacle it stands at, else goes to the first place, in the order
        the env lists them, whose inside it has not been shown yet; it takes the object as soon
        as one can be taken; in ``pick_and_place_simple`` games it then carries it to the first
        listed place of the goal's receptacle type (opening it if closed) and puts it down, in
        the other task types it follows :meth:`expert_action` from there. Games whose goal
        cannot be read, and look-at-in-light games, get :meth:`expert_action` throughout.
        """
        return self._search_action(self._admissible)

    def shuffled_search_expert_action(self) -> str | None:
        """:meth:`search_expert_action` looking into the places in a random order, not listed.

        The order is one permutation of the room's places per episode, drawn from the reset
        seed and the game (the same episode gives the same commands). Cloning it gives a policy
        that spreads its choice of where to look next over the places not searched yet, where
        the listed-order searcher's clone always picks the first: a starting point for RL that
        explores where to look, and leaves learning where objects usually are to RL.
        """
        if self._record is None:
            raise RuntimeError("call reset() before asking for the expert")
        if self._search_order is None:
            rng = random.Random(f"{self._reset_seed}/{self._record.task_id}")
            self._search_order = rng.sample(self._places, len(self._places))
        return self._search_action([f"go to {p}" for p in self._search_order])

    def typed_search_expert_action(self) -> str | None:
        """:meth:`search_expert_action` looking into one place of each type first.

        The order is :func:`type_rounds` of the room's places: the first place of every type
        (types in the order the env lists them), then the second of every type, and so on. It
        knows nothing of where objects usually are, only that a room lists many places of a
        few types (a kitchen's cabinets come before its countertops, drawers and fridge), and
        it wins about as many generated games as a random order does, while every episode of
        a room gets the same commands.
        """
        return self._search_action([f"go to {p}" for p in type_rounds(self._places)])

    def _search_action(self, goes: list[str]) -> str | None:
        """The searching expert's next command, looking into places in the order of ``goes``.

        ``goes``: ``go to`` commands (other commands in it are skipped); those not admissible
        now are skipped too.
        """
        if self._record is None:
            raise RuntimeError("call reset() before asking for the expert")
        if self._won:
            return None
        if self._goal is None or self._goal.recep is None:
            return self.expert_action()
        name = self._goal.obj.removesuffix("type")
        if self._holding and self._goal.task_type == "pick_and_place_simple":
            return self._carry_to(self._goal.recep.removesuffix("type"), name)
        if self._holding:  # cleaning, heating, cooling or a second object: the expert's plan
            return self.expert_action()
        for a in self._admissible:
            words = a.split()
            if a.startswith(f"take {name} ") and len(words) > 2 and words[2].isdigit():
                return a
        for a in self._admissible:
            if (
                a.startswith("open ")
                and a[5:] not in self._searched
                and f"go to {a[5:]}" not in self._admissible
            ):
                return a  # the closed receptacle the agent stands at
        for a in goes:
            if a.startswith("go to ") and a[6:] not in self._searched and a in self._admissible:
                return a
        return self.expert_action()  # looked everywhere (the object is elsewhere, e.g. held)

    def _carry_to(self, dest: str, name: str) -> str | None:
        """Put the carried object down at the first listed place of type ``dest``."""
        for a in self._admissible:
            words = a.split(" to ")
            if a.startswith(f"move {name} ") and len(words) == 2 and words[1].split()[0] == dest:
                return a
        for a in self._admissible:  # a closed receptacle of the goal's type, here
            if a.startswith(f"open {dest} ") and f"go to {a[5:]}" not in self._admissible:
                return a
        for a in self._admissible:
            if a.startswith(f"go to {dest} "):
                return a
        return self.expert_action()

    def _note_search(self, command: str, obs: str) -> None:
        """Track what the agent has been shown, from a valid command and its result.

        Read by :meth:`search_expert_action` and reported in ``info`` (``places``,
        ``location``, ``carrying``, ``searched``): what the agent saw itself (the first
        observation lists the places), what ``look`` and ``inventory`` would tell it, never
        where the object is.
        """
        if command.startswith(("go to ", "open ")) and "you see" in obs:
            self._searched[command.removeprefix("go to ").removeprefix("open ")] = None
        if command.startswith("go to "):
            self._location = command.removeprefix("go to ")
        elif command.startswith("take ") and " from " in command:
            self._carrying = command.removeprefix("take ").split(" from ")[0]
        elif command.startswith("move ") and " to " in command:
            self._carrying = ""
        if self._goal is not None and command.startswith(
            f"take {self._goal.obj.removesuffix('type')} "
        ):
            self._holding = True

    def _advance_plan(self, command: str) -> None:
        if self._plan and command == self._plan[0]:
            self._plan = self._plan[1:]
        elif not command.startswith(_READ_ONLY):
            self._plan = None  # the state left the known plan: replan when asked

    # -- Helpers --------------------------------------------------------------------------------

    def _get_engine(self) -> Any:
        if self._engine is None:
            from agent_gym.envs.alfworld.engine import Engine

            self._engine = Engine()
        return self._engine

    def _observation(self, text: str) -> str:
        """Game text as the agent gets it: UTF-8-encodable, within the observation space."""
        return _encodable(text)[: self.observation_space.max_length]

    def _info(self) -> dict[str, Any]:
        assert self._record is not None
        info: dict[str, Any] = {
            "task": self._task,
            "task_id": _encodable(self._record.task_id),
            "task_type": self._record.task_type,
            "anchor_obs": self._anchor,
            "admissible_actions": [] if self._won else [_encodable(a) for a in self._admissible],
            "won": self._won,
            "score": 1.0 if self._won else 0.0,
            "data_source": self._record.data_source,
            "game_file": _encodable(str(self._record.path)),
            "places": list(self._places),
            "location": self._location,
            "carrying": self._carrying,
            "searched": list(self._searched),
        }
        if self.expert_plan:
            info["expert_plan"] = [_encodable(a) for a in self._expert_plan()]
        return info

    # -- Data -----------------------------------------------------------------------------------

    @classmethod
    def prepare(cls, *, progress: bool = True, **kwargs: Any) -> str:
        """Build the default game set on disk (idempotent) and return a one-line summary.

        Generated data: writes every game of every split (``split=`` for one split,
        ``num_games=`` to change the count). Official data: walks and checks the folder.
        """
        data = kwargs.get("data", "generated")
        splits = [kwargs["split"]] if "split" in kwargs else list(SPLITS)
        if str(data) != "generated":
            from agent_gym.envs.alfworld.official import OfficialGames

            counts = {
                s: len(OfficialGames(data, s, kwargs.get("task_types"), kwargs.get("num_games")))
                for s in splits
            }
            return f"ALFWorld official games: {counts} under {data}"
        counts, new = {}, 0
        for split in splits:
            games = GeneratedGames(
                split,
                kwargs.get("num_games", DEFAULT_NUM_GAMES[split]),
                kwargs.get("task_types"),
                kwargs.get("generator_seed", 0),
            )
            new += games.build(progress=progress)
            counts[split] = len(games)
        return (
            f"ALFWorld generated games (not the official ones): {counts}, {new} new, "
            f"in {games.root}"
        )
