"""Loader of ALFWorld's official games (``json_2.1.1``), walked the way upstream walks them.

Upstream (``alfworld/agents/environment/alfred_tw_env.py``, ``collect_game_files``) walks
``<data>/<split>/**`` for folders holding ``traj_data.json`` and keeps a folder's
``game.tw-pddl`` unless its path names a ``movable`` or ``Sliced`` task, its task type is not
selected, the game file is missing, or the game lacks ``"solvable": true``. This loader keeps
the same rules and sorts the result (upstream's order is the filesystem's).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from agent_gym.envs.alfworld.gamefile import GameFileError, game_fault, read_object
from agent_gym.envs.alfworld.games import (
    GENERATED_SOURCE,
    GameRecord,
    check_count,
    check_split,
    check_task_types,
)

#: ``info["data_source"]`` of official games.
OFFICIAL_SOURCE = "official:json_2.1.1"

HOW_TO_GET = (
    "The official ALFWorld games are downloaded by the alfworld package's `alfworld-download` "
    "command (it needs access to GitHub releases), which writes "
    "$ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}/<task>/<trial>/game.tw-pddl; "
    "pass that json_2.1.1 folder as data=..., or use data='generated' for the built-in games."
)


def resolve_root(data: str | os.PathLike[str]) -> Path:
    """The ``json_2.1.1`` folder named by ``data`` (the folder itself or its parent).

    Raises:
        FileNotFoundError: ``data`` does not exist or holds no split folder.
    """
    path = Path(data).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"ALFWorld data path {str(path)!r} does not exist. {HOW_TO_GET}")
    if (path / "json_2.1.1").is_dir():
        path = path / "json_2.1.1"
    if not path.is_dir() or not any(
        (path / s).is_dir() for s in ("train", "valid_seen", "valid_unseen")
    ):
        raise FileNotFoundError(
            f"ALFWorld data path {str(path)!r} has no train/valid_seen/valid_unseen folder; "
            f"expected the json_2.1.1 folder. {HOW_TO_GET}"
        )
    return path


class OfficialGames:
    """The solvable games of one split of an official ``json_2.1.1`` folder.

    The folder is walked on first use (reading every game file, as upstream does); each kept
    game file is checked then (:func:`.gamefile.game_fault`), so a malformed one fails with its
    path before any game is played.

    Args:
        data: The ``json_2.1.1`` folder (or its parent).
        split: ``train``, ``valid_seen`` or ``valid_unseen``.
        task_types: Keep only these task types (default: the six).
        num_games: Keep only the first ``num_games`` games (upstream's ``num_train_games``).
    """

    def __init__(
        self,
        data: str | os.PathLike[str],
        split: str,
        task_types: str | Iterable[str] | None = None,
        num_games: int | None = None,
    ) -> None:
        self.split = check_split(split)
        self.task_types = check_task_types(task_types)
        self.num_games = check_count("num_games", num_games)
        self.root = resolve_root(data)
        self._records: list[GameRecord] | None = None

    @property
    def data_source(self) -> str:
        """Where the games come from (``official:json_2.1.1``)."""
        return OFFICIAL_SOURCE

    def records(self) -> list[GameRecord]:
        """All kept games, sorted by task id (walks the folder once)."""
        if self._records is None:
            self._records = self._scan()
        return self._records

    def _scan(self) -> list[GameRecord]:
        split_dir = self.root / self.split
        if not split_dir.is_dir():
            raise FileNotFoundError(
                f"ALFWorld data path {str(self.root)!r} has no {self.split!r} folder. {HOW_TO_GET}"
            )
        records = []
        for folder, dirs, files in os.walk(split_dir):
            dirs.sort()
            if "traj_data.json" not in files:
                continue
            rel = Path(folder).relative_to(self.root).as_posix()
            if "movable" in rel or "Sliced" in rel:  # upstream: not supported by the text env
                continue
            traj = read_object(Path(folder) / "traj_data.json")
            task_type = traj.get("task_type")
            if task_type not in self.task_types:
                continue
            game_path = Path(folder) / "game.tw-pddl"
            if not game_path.is_file():
                continue
            game = read_object(game_path)
            if not game.get("solvable", False):  # upstream skips unknown and unsolvable games
                continue
            fault = game_fault(game)
            if fault:
                raise GameFileError(f"{game_path}: {fault}")
            # Games this package generated carry a marker; they are never labelled official.
            source = GENERATED_SOURCE if "generated" in traj else OFFICIAL_SOURCE
            records.append(GameRecord(rel, game_path, task_type, source))
        records.sort(key=lambda r: r.task_id)
        if self.num_games is not None:
            records = records[: self.num_games]
        if not records:
            raise FileNotFoundError(
                f"no solvable ALFWorld game of types {list(self.task_types)} under "
                f"{str(split_dir)!r}. {HOW_TO_GET}"
            )
        return records

    def __len__(self) -> int:
        return len(self.records())

    def record(self, k: int) -> GameRecord:
        """The ``k``-th game (sorted by task id)."""
        return self.records()[k]

    def position(self, task_id: str) -> int:
        """Position of ``task_id`` (a folder relative to ``json_2.1.1``).

        Raises:
            ValueError: No kept game has that id.
        """
        for k, record in enumerate(self.records()):
            if record.task_id == task_id:
                return k
        raise ValueError(
            f"task_id {task_id!r} is not a solvable game of split {self.split!r} under "
            f"{str(self.root)!r}; ids are game folders relative to json_2.1.1, as in "
            "info['task_id']"
        )
