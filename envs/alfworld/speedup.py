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

The translation of a game is also kept on disk (:func:`sas_cache_dir`, gzip-compressed JSON,
40-60 KB a game, written once): the next process that loads the game reads it back in a few
milliseconds instead of translating for half a second, which is most of a first reset. The file
holds the SAS text and the parts of the translated task that ``PddlState`` reads (types,
objects, action parameters, initial atoms); it is keyed by a hash of the domain and problem
text and the TextWorld and fast-downward versions, never executes anything when read, and a
file that does not parse is translated again and rewritten. Only the engine's own loads
(inside :func:`deferred_replan`) use it; deleting the directory is always safe.

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
import gzip
import hashlib
import json
import sys
import threading
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

#: The TextWorld version these patches were verified against (byte-identical replays).
VERIFIED_TEXTWORLD = "1.7.0"

_CACHE_SIZE = 4096  # grammar strings and queries: a few hundred per game, shared across games
_SAS_CACHE_SIZE = 128  # held-out games replayed by later evaluations, and the groups
_SAS_FORMAT = 1  # the layout of the translations kept on disk; a change starts a new directory

_lock = threading.Lock()
_originals: dict[str, Any] = {}
_enabled = False  # read by the patched functions; set by _refresh() only
_asked: bool | None = None  # the latest of install() (True) and disable() (False); None: neither
_stock_blocks = 0  # stock() blocks open (in any thread: the patches are process-wide)
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


def sas_cache_dir() -> Path:
    """Where the engine keeps its translated games: ``$AGENT_GYM_HOME/alfworld/sas-v<format>``."""
    from agent_gym.paths import cache_dir

    return cache_dir("alfworld", f"sas-v{_SAS_FORMAT}", create=False)


@functools.cache
def _engine_versions() -> tuple[str, str]:
    """The TextWorld and fast-downward versions (read from package metadata once)."""
    from importlib.metadata import version

    return _version(), version("fast_downward_textworld")


def _sas_path(domain: str, problem: str) -> Path:
    key = hashlib.sha256()
    for part in (*_engine_versions(), domain, problem):
        key.update(part.encode("utf-8"))
        key.update(b"\0")
    return sas_cache_dir() / f"{key.hexdigest()[:32]}.json.gz"


def _task_record(task: Any, sas: str) -> dict[str, Any] | None:
    """What ``PddlState`` reads of a translated task, as JSON values (None: not representable)."""
    from fast_downward.translate.pddl import conditions, f_expression

    init: list[list[Any]] = []
    for fact in task.init:
        if type(fact) is conditions.Atom:
            init.append(["atom", fact.predicate, list(fact.args)])
        elif (
            type(fact) is f_expression.Assign
            and type(fact.fluent) is f_expression.PrimitiveNumericExpression
            and type(fact.expression) is f_expression.NumericConstant
        ):
            init.append(
                ["assign", fact.fluent.symbol, list(fact.fluent.args), fact.expression.value]
            )
        else:  # pragma: no cover - not in ALFWorld's domain; such a game is simply not stored
            return None
    return {
        "format": _SAS_FORMAT,
        "types": [[t.name, list(t.supertype_names)] for t in task.types],
        "objects": [[o.name, o.type_name] for o in task.objects],
        "actions": [[a.name, [[p.name, p.type_name] for p in a.parameters]] for a in task.actions],
        "init": init,
        "sas": sas,
    }


def _stored_task(record: dict[str, Any]) -> tuple[Any, str]:
    """``(task, sas)`` back from a :func:`_task_record` dict.

    The task has only what ``PddlState`` reads; the initial facts are fast-downward's own
    classes, since ``PddlState`` tests their type.
    """
    from fast_downward.translate.pddl import conditions, f_expression

    def fact(entry: list[Any]) -> Any:
        if entry[0] == "atom":
            return conditions.Atom(entry[1], entry[2])
        fluent = f_expression.PrimitiveNumericExpression(entry[1], entry[2])
        return f_expression.Assign(fluent, f_expression.NumericConstant(entry[3]))

    task = SimpleNamespace(
        types=[SimpleNamespace(name=n, supertype_names=list(up)) for n, up in record["types"]],
        objects=[SimpleNamespace(name=n, type_name=t) for n, t in record["objects"]],
        actions=[
            SimpleNamespace(
                name=name, parameters=[SimpleNamespace(name=n, type_name=t) for n, t in params]
            )
            for name, params in record["actions"]
        ],
        init=[fact(entry) for entry in record["init"]],
    )
    if not isinstance(record["sas"], str):
        raise ValueError("sas is not a string")
    return task, record["sas"]


def _translate_on_disk(fn: Callable[..., Any], domain: str, problem: str) -> Any:
    """``fn(domain, problem)`` through the translations kept on disk (module docstring)."""
    from agent_gym.paths import atomic_write_bytes

    path = _sas_path(domain, problem)
    if path.is_file():
        try:
            record = json.loads(gzip.decompress(path.read_bytes()))
            if record.get("format") == _SAS_FORMAT:
                return _stored_task(record)
        except (
            OSError,
            EOFError,
            zlib.error,
            ValueError,
            LookupError,
            TypeError,
            AttributeError,
        ) as err:
            warnings.warn(
                f"{path}: unreadable ALFWorld translation ({err}); translating again", stacklevel=3
            )
    task, sas = fn(domain, problem, verbose=False, optimize=False)
    record = _task_record(task, sas)
    if record is not None:
        try:
            atomic_write_bytes(path, gzip.compress(json.dumps(record).encode("utf-8"), 1))
        except OSError as err:  # a read-only cache still plays every game
            warnings.warn(f"{path}: could not keep the ALFWorld translation ({err})", stacklevel=3)
    return task, sas


def _pddl2sas_memo(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Memoise ``fast_downward.pddl2sas(domain, problem, verbose, optimize)``.

    The returned planning task is only read by ``PddlState`` (actions, types, objects, init),
    so load and reset may share one; the SAS text is an immutable string. The engine's own
    plain translations also go through the copies kept on disk (:func:`_translate_on_disk`).
    """

    def argv_kept(call: Callable[..., Any], *args: Any) -> Any:
        argv = sys.argv  # pddl2sas overwrites sys.argv for fast-downward's option parser
        try:
            return call(*args)
        finally:
            sys.argv = argv

    @functools.lru_cache(maxsize=_SAS_CACHE_SIZE)
    def cached(domain: str, problem: str, optimize: bool) -> Any:
        return argv_kept(lambda: fn(domain, problem, verbose=False, optimize=optimize))

    @functools.lru_cache(maxsize=_SAS_CACHE_SIZE)
    def engine_cached(domain: str, problem: str) -> Any:
        return argv_kept(_translate_on_disk, fn, domain, problem)

    def wrapper(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        if not _enabled or verbose:
            return fn(domain, problem, verbose=verbose, optimize=optimize)
        engine = getattr(_defer, "active", False)
        if optimize and engine:
            # Only the planner reads the optimised task; load_replan_task() supplies it later.
            return None, ""
        if engine:
            return engine_cached(domain, problem)
        return cached(domain, problem, optimize)

    def cache_clear() -> None:
        cached.cache_clear()
        engine_cached.cache_clear()

    wrapper.cache_clear = cache_clear  # type: ignore[attr-defined]
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
    """Apply the patches (idempotent) and enable them, also after :func:`disable`.

    Inside a :func:`stock` block the patches are applied but stay off until the block ends.

    Raises:
        RuntimeError: The installed TextWorld is not the verified version.
    """
    global _asked
    with _lock:
        if not _originals:
            if _version() != VERIFIED_TEXTWORLD:
                raise RuntimeError(
                    f"agent-gym's ALFWorld speed-up is verified against textworld "
                    f"{VERIFIED_TEXTWORLD}, found {_version()}; install textworld[pddl]=="
                    f"{VERIFIED_TEXTWORLD} (pinned by agent-gym) or call "
                    "agent_gym.envs.alfworld.speedup.disable() before making the env (it then "
                    "runs stock TextWorld)"
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
        _asked = True
        _refresh()


def install_unless_disabled() -> None:
    """:func:`install`, unless :func:`disable` was called since (what every ALFWorld engine does).

    So ``disable()`` keeps the speed-up off for engines made later in the process, and lets
    them run on a TextWorld version :func:`install` refuses.
    """
    if _asked is not False:
        install()


def disable() -> None:
    """Make the patched functions behave exactly as stock TextWorld (the patches stay in place).

    Engines made later leave them off too; :func:`install` turns them back on.
    """
    global _asked
    with _lock:
        _asked = False
        _refresh()


def enabled() -> bool:
    """Whether the memoisation is active."""
    return _enabled


@contextlib.contextmanager
def stock() -> Iterator[None]:
    """Run a block with stock TextWorld behaviour (for comparisons and benchmarks).

    Nothing inside the block turns the speed-up on, not even an engine made there (whose
    :func:`install` takes effect when the block ends).
    """
    global _stock_blocks
    with _lock:
        _stock_blocks += 1
        _refresh()
    try:
        yield
    finally:
        with _lock:
            _stock_blocks -= 1
            _refresh()


def _refresh() -> None:
    """Set :data:`_enabled` from what was asked: on when installed, not disabled, no stock block."""
    global _enabled
    _enabled = bool(_asked) and _stock_blocks == 0


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
