"""Game sets: the generated default (built lazily, cached on disk) and the common record type.

Both the generated set and the official loader (:mod:`.official`) hand the env
:class:`GameRecord` values; the env does not care where a game came from except for
``data_source``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_gym.checks import whole
from agent_gym.envs.alfworld import generator
from agent_gym.envs.alfworld.gamefile import read_game
from agent_gym.envs.alfworld.scenes import TASK_TYPES
from agent_gym.paths import cache_dir, params_key

#: ``info["data_source"]`` of generated games (never called the official benchmark).
GENERATED_SOURCE = "generated:alfworld-layouts"

#: Default number of generated games per split: the sizes of ALFWorld's official splits (so
#: evaluation protocols carry over), but the games themselves are generated, not official.
DEFAULT_NUM_GAMES = {"train": 3553, "valid_seen": 140, "valid_unseen": 134}

SPLITS = tuple(DEFAULT_NUM_GAMES)


@dataclass(frozen=True)
class GameRecord:
    """One playable game.

    Attributes:
        task_id: Stable id, the game folder relative to ``json_2.1.1``.
        path: The ``game.tw-pddl`` file.
        task_type: One of the six ALFWorld task types.
        data_source: ``"generated:alfworld-layouts"`` or ``"official:json_2.1.1"``.
    """

    task_id: str
    path: Path
    task_type: str
    data_source: str

    def read(self) -> dict[str, Any]:
        """The parsed ``game.tw-pddl`` (pddl_domain, grammar, pddl_problem, solvable, ...).

        Raises:
            GameFileError: The file is malformed (the message names it and the fault).
        """
        return read_game(self.path)


def check_split(split: str) -> str:
    """Return ``split`` if it is an ALFWorld split, else raise :class:`ValueError`."""
    if not isinstance(split, str) or split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    return split


def check_task_types(task_types: str | Iterable[str] | None) -> tuple[str, ...]:
    """Validate a task-type filter: ``None`` (all six), one task type, or several.

    Returns:
        The chosen types in upstream order.

    Raises:
        ValueError: A type is unknown or none is given (the message lists the six).
    """
    if task_types is None:
        return TASK_TYPES
    if isinstance(task_types, str):
        chosen: tuple = (task_types,)  # one type, not its characters
    else:
        try:
            chosen = tuple(task_types)
        except TypeError:
            chosen = (task_types,)
    unknown = [t for t in chosen if t not in TASK_TYPES]
    if unknown or not chosen:
        raise ValueError(
            f"task_types={task_types!r}: unknown task types {unknown or list(chosen)!r}; "
            f"choose from {', '.join(TASK_TYPES)}"
        )
    return tuple(t for t in TASK_TYPES if t in chosen)


def check_count(name: str, value: Any, minimum: int | None = 1) -> int | None:
    """Return ``value`` as an int (``None`` stays ``None``), else raise naming the argument.

    Raises:
        ValueError: ``value`` is not a whole number (``"ten"``, ``2.5``, ``True``) or is
            below ``minimum``.
    """
    return whole(name, value, minimum, none=True)


@functools.lru_cache(maxsize=1)
def _logic_texts() -> tuple[str, str]:
    """The wheel's ``alfred.pddl`` and ``alfred.twl2`` (every generated game embeds them)."""
    import alfworld

    with open(alfworld.ALFRED_PDDL_PATH, encoding="utf-8") as f:
        domain = f.read()
    with open(alfworld.ALFRED_TWL2_PATH, encoding="utf-8") as f:
        grammar = f.read()
    return domain, grammar


def generated_root(seed: int = 0) -> Path:
    """Cache folder of the generated games (official layout below ``json_2.1.1``)."""
    from importlib.metadata import version

    params = {
        "generator_version": generator.GENERATOR_VERSION,
        "seed": seed,
        "alfworld": version("alfworld"),
    }
    return cache_dir("alfworld", f"generated-{params_key(params)}", create=False) / "json_2.1.1"


class GeneratedGames:
    """The generated default game set of one split.

    Game ``i`` of a split is a pure function of ``(seed, split, i)`` and is written to the
    cache the first time it is asked for, so a fresh cache costs a few milliseconds per new
    game and nothing is built up front (:meth:`build` builds all of them).

    Args:
        split: ``train``, ``valid_seen`` or ``valid_unseen``.
        num_games: Games in the split (default :data:`DEFAULT_NUM_GAMES`).
        task_types: Keep only these task types (game ``i`` has type ``TASK_TYPES[i % 6]``).
        seed: Generator seed; another seed is another game set.
    """

    data_source = GENERATED_SOURCE

    def __init__(
        self,
        split: str,
        num_games: int | None = None,
        task_types: str | Iterable[str] | None = None,
        seed: int = 0,
    ) -> None:
        self.split = check_split(split)
        count = check_count("num_games", num_games)
        total = DEFAULT_NUM_GAMES[split] if count is None else count
        types = set(check_task_types(task_types))
        self.seed = check_count("generator_seed", seed, minimum=None) or 0
        self.root = generated_root(seed)
        self._indices = [i for i in range(total) if TASK_TYPES[i % len(TASK_TYPES)] in types]
        if not self._indices:
            raise ValueError(
                f"num_games={total} holds no game of the task types {sorted(types)}; game i has "
                f"type TASK_TYPES[i % 6], so use num_games >= 6"
            )
        self._positions = {index: k for k, index in enumerate(self._indices)}

    def __len__(self) -> int:
        return len(self._indices)

    def record(self, k: int) -> GameRecord:
        """The ``k``-th game of the set, generated and written on first use."""
        game = generator.generate(self.split, self._indices[k], seed=self.seed)
        path = self.root / game.task_id / "game.tw-pddl"
        if not path.is_file():
            generator.write_game(game, self.root, *_logic_texts())
        return GameRecord(game.task_id, path, game.goal.task_type, self.data_source)

    def position(self, task_id: str) -> int:
        """Position in this set of a task id from ``info["task_id"]``.

        Raises:
            ValueError: The id is malformed or names a game outside this split or set.
        """
        split, index = generator.parse_task_id(task_id)
        if split != self.split or index not in self._positions:
            raise ValueError(
                f"task_id {task_id!r} is not in this env's game set (split={self.split!r}, "
                f"{len(self)} games); make the env with that split, a larger num_games or "
                "the task type it names"
            )
        k = self._positions[index]
        if self.record(k).task_id != task_id:
            raise ValueError(f"task_id {task_id!r} does not match generated game {index}")
        return k

    def build(self, progress: bool = True) -> int:
        """Write every game of the set to the cache (idempotent); return how many were new."""
        from tqdm.auto import tqdm

        new = 0
        bar = tqdm(range(len(self)), desc=f"ALFWorld {self.split}", disable=not progress)
        for k in bar:
            game = generator.generate(self.split, self._indices[k], seed=self.seed)
            if not (self.root / game.task_id / "game.tw-pddl").is_file():
                generator.write_game(game, self.root, *_logic_texts())
                new += 1
        return new
