"""Make TextWorld's PDDL engine fast on ALFWorld games without changing a byte of its output.

A profile of stock TextWorld 1.7.0 on ALFWorld games shows two costs:

* **steps**: about 95% of a step is TatSu re-parsing the same few grammar strings.
  ``PddlEnv._gather_infos`` derives every admissible command's text through
  ``ContextSensitiveGrammar.derive``, which parses its start string
  (``textgen._parse_and_convert``) and each rule condition (``Rule.parse_conjunctive_query``)
  from scratch, every time. Both are pure functions of their text, so they are memoised here
  (an LRU keyed by the text; callers get a deep copy, since the derivation mutates symbols).
* **resets**: ``PddlEnv.load`` and ``PddlEnv.reset`` each build a ``PddlState``, and each
  ``PddlState`` translates the PDDL problem twice with fast-downward (``pddl2sas``, plain and
  ``optimize=True``), about 0.1-1 s apiece. The translation is a pure function of the
  (domain, problem) text, so it is memoised too; and inside :func:`deferred_replan` the
  ``optimize=True`` translation, which only the planner reads, is skipped until
  :func:`load_replan_task` asks for it (fast-downward's ``load_sas_replan`` only stores the
  string, so loading it later gives the same plans).

The game's grammar (``GameLogic``'s parse of the ``alfred.twl2`` text) is memoised the same
way. ``tests/envs/alfworld/test_speedup.py`` replays recorded action sequences with and without
these patches and compares every observation and info.

The patches are process-wide (they replace attributes of textworld and fast_downward modules)
and verified against **textworld 1.7.0** only; :func:`install` refuses other versions.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: The TextWorld version these patches were verified against (byte-identical replays).
VERIFIED_TEXTWORLD = "1.7.0"

_CACHE_SIZE = 4096  # grammar strings and queries: a few hundred per game, shared across games
_SAS_CACHE_SIZE = 128  # held-out games replayed by later evaluations, and the groups

_lock = threading.Lock()
_originals: dict[str, Any] = {}
_enabled = False
_defer = threading.local()


def _version() -> str:
    from importlib.metadata import version

    return version("textworld")


def _copy_symbols(value: Any) -> Any:
    """Copy a parsed grammar string (nested lists of ``textgen.Symbol``) for one derivation.

    Derivations assign ``symbol.context`` on the symbols they get, so each caller needs its own
    symbol objects; the strings and the (never mutated) context dicts inside can be shared.
    Equivalent to ``copy.deepcopy`` here, at a fraction of its cost.
    """
    from textworld.envs.pddl.textgen import Symbol

    if isinstance(value, list):
        return [_copy_symbols(v) for v in value]
    if isinstance(value, Symbol):
        new = copy.copy(value)
        for key, attr in vars(new).items():
            if isinstance(attr, (list, Symbol)):
                setattr(new, key, _copy_symbols(attr))
        return new
    return value


def _shared(value: Any) -> Any:
    return value


def _memoise(
    fn: Callable[..., Any], size: int, copier: Callable[[Any], Any] = copy.deepcopy
) -> Callable[..., Any]:
    """Wrap ``fn`` in an LRU keyed by its arguments; callers get ``copier(cached value)``."""

    @functools.lru_cache(maxsize=size)
    def cached(args: tuple, kwargs: tuple) -> Any:
        return fn(*args, **dict(kwargs))

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _enabled:
            return fn(*args, **kwargs)
        try:
            key = (args, tuple(sorted(kwargs.items())))
            hash(key)
        except TypeError:  # an unhashable argument: nothing to memoise
            return fn(*args, **kwargs)
        return copier(cached(*key))

    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _pddl2sas_memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Memoise ``fast_downward.pddl2sas(domain, problem, verbose, optimize)``.

    The returned planning task is only read by ``PddlState`` (actions, types, objects, init),
    so load and reset may share one; the SAS text is an immutable string.
    """

    @functools.lru_cache(maxsize=_SAS_CACHE_SIZE)
    def cached(domain: str, problem: str, optimize: bool) -> Any:
        argv = sys.argv  # pddl2sas overwrites sys.argv for fast-downward's option parser
        try:
            return fn(domain, problem, verbose=False, optimize=optimize)
        finally:
            sys.argv = argv

    def wrapper(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        if not _enabled or verbose:
            return fn(domain, problem, verbose=verbose, optimize=optimize)
        if optimize and getattr(_defer, "active", False):
            # Only the planner reads the optimised task; load_replan_task() supplies it later.
            return None, ""
        return cached(domain, problem, optimize)

    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def _copy_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``textgen.copy_context`` with shallow copies of the two dicts it deep-copies.

    A derivation context maps placeholder names to ``EntityInfo`` objects (``variables``) and
    placeholders to variables (``mapping``). The grammar code adds entries to these dicts but
    never mutates the objects in them (grammar expressions only read ``x.name`` and
    ``x.indefinite``), so copying the dicts is enough; the deep copy was most of a step.
    """

    def wrapper(context: dict[str, Any]) -> dict[str, Any]:
        if not _enabled:
            return fn(context)
        return {
            "state": context["state"],
            "facts": context["facts"],
            "variables": dict(context["variables"]),
            "mapping": dict(context["mapping"]),
            "entity_infos": context["entity_infos"],
        }

    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    """Apply the patches (idempotent) and enable them.

    Raises:
        RuntimeError: The installed TextWorld is not the verified version.
    """
    global _enabled
    with _lock:
        if not _originals:
            if _version() != VERIFIED_TEXTWORLD:
                raise RuntimeError(
                    f"agent-gym's ALFWorld speed-up is verified against textworld "
                    f"{VERIFIED_TEXTWORLD}, found {_version()}; install textworld[pddl]=="
                    f"{VERIFIED_TEXTWORLD} (pinned by agent-gym) or call "
                    "agent_gym.envs.alfworld.speedup.disable()"
                )
            import fast_downward
            import textworld.envs.pddl.logic as pddl_logic
            import textworld.envs.pddl.textgen as textgen
            from textworld.logic import Rule

            _originals["textgen"] = textgen._parse_and_convert
            _originals["query"] = Rule.__dict__["parse_conjunctive_query"]
            _originals["logic"] = pddl_logic._parse_and_convert
            _originals["pddl2sas"] = fast_downward.pddl2sas
            _originals["copy_context"] = textgen.copy_context
            textgen._parse_and_convert = _memoise(
                textgen._parse_and_convert, _CACHE_SIZE, _copy_symbols
            )
            # Rules are only read (State.all_assignments), so callers may share one.
            query = _memoise(Rule.parse_conjunctive_query.__func__, _CACHE_SIZE, _shared)
            Rule.parse_conjunctive_query = classmethod(query)
            pddl_logic._parse_and_convert = _memoise(pddl_logic._parse_and_convert, 16)
            fast_downward.pddl2sas = _pddl2sas_memo(fast_downward.pddl2sas)
            textgen.copy_context = _copy_context(textgen.copy_context)
        _enabled = True


def disable() -> None:
    """Make the patched functions behave exactly as stock TextWorld (the patches stay in place)."""
    global _enabled
    _enabled = False


def enabled() -> bool:
    """Whether the memoisation is active."""
    return _enabled


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Run a block with stock TextWorld behaviour (for comparisons and benchmarks)."""
    global _enabled
    before = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = before


@contextlib.contextmanager
def deferred_replan() -> Iterator[None]:
    """Within the block, skip the ``optimize=True`` translation that only the planner needs.

    Use around ``PddlEnv.load`` / ``reset`` of an env whose planner calls go through
    :func:`load_replan_task`. Outside the block (other TextWorld users in the process) nothing
    changes.
    """
    before = getattr(_defer, "active", False)
    _defer.active = _enabled
    try:
        yield
    finally:
        _defer.active = before


def load_replan_task(pddl_state: Any) -> None:
    """Give fast-downward the planner's task for ``pddl_state`` if it was deferred.

    Args:
        pddl_state: A ``textworld.envs.pddl.logic.PddlState`` built inside
            :func:`deferred_replan` (no-op for one built with the full translation).
    """
    if pddl_state.sas_replan:
        return
    import fast_downward

    before = getattr(_defer, "active", False)
    _defer.active = False
    try:
        _, sas = fast_downward.pddl2sas(
            pddl_state._logic.domain, pddl_state.pddl_problem, optimize=True
        )
    finally:
        _defer.active = before
    pddl_state.sas_replan = sas
    pddl_state.downward_lib.load_sas_replan(sas.encode("utf-8"))
