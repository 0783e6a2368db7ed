"""TextWorld's PDDL engine running one ALFWorld game at a time, with ALFWorld's entity names.

This is the layer that upstream gets from ``textworld.gym.register_games(..., wrappers=
[AlfredDemangler(), AlfredInfos])``, without TextWorld's batch gym API (old 4-tuple steps,
subprocesses): a ``textworld.envs.pddl.PddlEnv`` that is loaded with a game, demangled with
ALFWorld's own ``Demangler`` and stepped directly.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any

from agent_gym.envs.alfworld import speedup

# Copies of fast-downward's library released by closed engines. Each engine needs its own copy
# (the library keeps its state in globals), and unloading a copy with dlclose crashes the
# next load, so closed engines hand their copy to the next engine instead.
_free_libs: list[Any] = []
_free_lock = threading.Lock()


@contextlib.contextmanager
def _reuse_free_lib() -> Iterator[None]:
    import fast_downward

    with _free_lock:
        lib = _free_libs.pop() if _free_libs else None
    if lib is None:
        yield
        return
    load_lib = fast_downward.load_lib
    fast_downward.load_lib = lambda: lib  # PddlEnv.__init__ calls fast_downward.load_lib()
    try:
        yield
    finally:
        fast_downward.load_lib = load_lib


def forget_interned_logic() -> int:
    """Empty TextWorld's process-wide intern table of logic objects; return how many it held.

    ``textworld.logic`` builds ``Signature`` and ``Proposition`` through the ``mementos``
    metaclass, which keeps every instance ever made in one module-level dict
    (``mementos.core._memento_cache``) that nothing ever empties: about 1,200 entries (1.1-1.5
    MB) per distinct ALFWorld game, for the life of the process. Interning is only a shortcut:
    both classes are immutable and compare and hash by value, and nothing in TextWorld tests
    them by identity, so after the table is emptied new instances are equal to the old ones
    and every output stays byte-identical (``tests/envs/alfworld/test_alfworld_memory.py``
    replays games across loads against stock TextWorld). Objects still held by other loaded
    games (other envs in the process) stay valid; their new facts are simply not shared.
    """
    import mementos.core

    table = getattr(mementos.core, "_memento_cache", None)
    if not isinstance(table, dict):  # pragma: no cover - another mementos version
        return 0
    held = len(table)
    table.clear()
    return held


@contextlib.contextmanager
def _engine_call() -> Iterator[None]:
    # fast-downward's translator overwrites sys.argv (for its option parser); keep the host
    # program's argv intact.
    argv = sys.argv[:]
    try:
        with speedup.deferred_replan():
            yield
    finally:
        sys.argv = argv


class Engine:
    """A TextWorld ``PddlEnv`` that plays ALFWorld-format games.

    Args:
        fast: Install the byte-identical speed-up of :mod:`.speedup` (process-wide).

    Example:
        >>> engine = Engine()                                  # doctest: +SKIP
        >>> engine.load("train/...", game_data)                # doctest: +SKIP
        >>> feedback, admissible, won = engine.reset()         # doctest: +SKIP
    """

    def __init__(self, fast: bool = True) -> None:
        try:
            import textworld
            from textworld.envs.pddl import PddlEnv
        except ImportError as err:  # pragma: no cover - textworld is a base dependency
            raise ImportError(
                "AgentR1/ALFWorld-v0 needs textworld with its PDDL engine: "
                "pip install 'textworld[pddl]==1.7.0' alfworld==0.4.2"
            ) from err
        if fast:
            speedup.install_unless_disabled()
        with _reuse_free_lib():
            self._tw = PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True))
        self.game_key: str | None = None
        self._loaded = False  # fast-downward holds a task (close() must free it)
        self._closed = False

    def load(self, key: str, data: dict[str, Any]) -> None:
        """Load a game (parsed ``game.tw-pddl`` JSON) unless ``key`` is already loaded.

        Loading a new game first empties TextWorld's intern table (:func:`forget_interned_logic`),
        which otherwise grows by every game a process ever plays.
        """
        if key == self.game_key:
            return
        from alfworld.agents.utils.misc import Demangler

        forget_interned_logic()
        self.game_key = None  # a load that fails half-way leaves no game loaded
        self._loaded = True  # even a failed load may have handed fast-downward a task
        with _engine_call():
            self._tw.load(data)
        # ALFWorld's AlfredDemangler: "cabinet_bar__plus_00_dot_06..." -> "cabinet 3".
        demangler = Demangler(game_infos=self._tw._entity_infos)
        for info in self._tw._entity_infos.values():
            info.name = demangler.demangle_alfred_name(info.id)
        self.game_key = key

    def reset(self) -> tuple[str, list[str], bool]:
        """Restart the loaded game; return ``(intro text, admissible commands, won)``."""
        with _engine_call():
            state = self._tw.reset()
        return state.feedback, state["admissible_commands"], bool(state["won"])

    def step(self, command: str) -> tuple[str, list[str], bool]:
        """Run one command; return ``(feedback, admissible commands, won)``.

        A command that is not admissible gives TextWorld's ``"Nothing happens."`` (the env
        answers those itself and never calls this).
        """
        with _engine_call():
            state, _, _ = self._tw.step(command)
        return state.feedback, state["admissible_commands"], bool(state["won"])

    def task_plan(self, goal: Any) -> list[str] | None:
        """The task-structured planner's commands from the current state (milliseconds).

        Args:
            goal: The game's :class:`.expert.Goal`.

        Returns:
            See :func:`.expert.plan` (``None``: the task's structure has no plan here).
        """
        from agent_gym.envs.alfworld import expert

        world = expert.World.from_facts(self._tw._pddl_state.facts)
        names = {key: info.name for key, info in self._tw._entity_infos.items()}
        templates = {name: action.template for name, action in self._tw._logic.actions.items()}
        return expert.plan(goal, world, names, templates)

    def plan(self) -> list[str]:
        """Commands that solve the game from the current state (fast-downward; can take seconds).

        Returns:
            The plan, ``[]`` if the game is won already or the planner finds none.
        """
        state = self._tw._pddl_state
        with _engine_call():
            speedup.load_replan_task(state)
            return list(state.replan(self._tw._entity_infos))

    def close(self) -> None:
        """Free the game's planner state and interned facts, pass the library copy on (idempotent)."""
        if self._closed:
            return
        self._closed = True
        forget_interned_logic()
        lib = self._tw.downward_lib
        if self._loaded:
            lib.cleanup()  # frees the loaded task; the next engine's load_sas starts afresh
        with _free_lock:
            _free_libs.append(lib)
