"""Reading and checking ALFWorld game files (``game.tw-pddl``, ``traj_data.json``).

A ``game.tw-pddl`` is JSON holding the PDDL domain and problem and the text grammar that
TextWorld's ``PddlEnv`` loads. TextWorld reports a broken one deep inside its parsers, at
``reset()``, without naming the file (a bare ``AssertionError``, a TatSu token error, a
fast-downward ``ParseError``). Here every failure is one line that starts with the file:

* :func:`read_game` checks what can be checked cheaply (valid JSON, an object, the three
  fields present as text, the PDDL's parentheses balanced and ``(define`` first) when the game
  is read, before TextWorld sees it;
* :func:`load_error` turns whatever TextWorld's parsers raise on the rest into an error that
  names the file and the part (grammar or PDDL) that failed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agent_gym.datafiles import DataFileError, read_json

#: The fields of a ``game.tw-pddl`` that TextWorld's ``PddlEnv.load`` needs.
GAME_FIELDS = ("pddl_domain", "grammar", "pddl_problem")
PDDL_FIELDS = ("pddl_domain", "pddl_problem")

_COMMENT = re.compile(r";[^\n]*")


class GameFileError(DataFileError):
    """An ALFWorld game file cannot be played; the message names the file and the fault."""


def read_object(path: str | Path) -> dict[str, Any]:
    """Parse a JSON file that must hold an object (``traj_data.json``, ``game.tw-pddl``).

    Raises:
        GameFileError: Missing, unreadable, not UTF-8, not JSON, or not an object.
    """
    data = read_json(path, error=GameFileError)
    if not isinstance(data, dict):
        raise GameFileError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def read_game(path: str | Path, *, check_pddl: bool = True) -> dict[str, Any]:
    """Parse a ``game.tw-pddl`` and check its fields (see the module docstring).

    Args:
        path: The file.
        check_pddl: Also check the PDDL texts' parentheses (a few ms on ALFWorld's domain).

    Raises:
        GameFileError: The file or one of its fields is malformed; the message says which.
    """
    data = read_object(path)
    fault = game_fault(data, check_pddl=check_pddl)
    if fault:
        raise GameFileError(f"{path}: {fault}")
    return data


def game_fault(data: dict[str, Any], *, check_pddl: bool = True) -> str | None:
    """What is wrong with a parsed ``game.tw-pddl`` (``None`` if nothing visible is)."""
    missing = [k for k in GAME_FIELDS if k not in data]
    if missing:
        return f"lacks {', '.join(missing)}; is it a game.tw-pddl from ALFWorld's json_2.1.1?"
    for key in GAME_FIELDS:
        if not isinstance(data[key], str) or not data[key].strip():
            return f"{key} should be non-empty text, got {type(data[key]).__name__}"
    if check_pddl:
        for key in PDDL_FIELDS:
            fault = pddl_fault(data[key])
            if fault:
                return f"{key} is not valid PDDL: {fault}"
    walkthrough = data.get("walkthrough")
    if walkthrough is not None and not (
        isinstance(walkthrough, list) and all(isinstance(c, str) for c in walkthrough)
    ):
        return "walkthrough should be a list of commands (strings)"
    return None


def pddl_fault(text: str) -> str | None:
    r"""A syntax fault a Lisp reader would stop at: unbalanced parentheses, no ``(define``.

    Example:
        >>> pddl_fault("(define (problem p)\n(:init (at a)\n")
        "line 1: '(' is never closed (2 missing)"
        >>> pddl_fault("(define (domain d))") is None
        True
    """
    code = _COMMENT.sub("", text)
    if not code.lstrip().lower().startswith("(define"):
        return "it should start with '(define'"
    opened_at: list[int] = []  # line of each '(' still open
    for line_no, line in enumerate(code.splitlines(), 1):
        if "(" not in line and ")" not in line:
            continue
        for ch in line:
            if ch == "(":
                opened_at.append(line_no)
            elif ch == ")":
                if not opened_at:
                    return f"line {line_no}: ')' closes nothing"
                opened_at.pop()
    if opened_at:
        return f"line {opened_at[0]}: '(' is never closed ({len(opened_at)} missing)"
    return None


def load_error(path: str | Path, err: BaseException) -> GameFileError:
    """The error to raise when TextWorld fails to load or reset the game in ``path``.

    The part named is the one whose code raised, innermost first: fast-downward's translator
    or TextWorld's ``PddlState`` (the PDDL), TatSu or TextWorld's grammar code (the grammar).
    """
    part = "TextWorld cannot load it"
    frames = []
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append((code.co_filename.replace("\\", "/"), getattr(code, "co_qualname", "")))
        tb = tb.tb_next
    for filename, qualname in reversed(frames):  # innermost first
        if "/fast_downward/" in filename or qualname.startswith("PddlState."):
            part = "its PDDL (pddl_domain + pddl_problem) does not translate"
            break
        if "/tatsu/" in filename or "/textgen/" in filename or qualname.startswith("GameLogic."):
            part = "its grammar does not parse"
            break
    detail = str(err).strip().splitlines()[0][:200] if str(err).strip() else ""
    return GameFileError(f"{path}: {part} ({type(err).__name__}{': ' + detail if detail else ''})")
