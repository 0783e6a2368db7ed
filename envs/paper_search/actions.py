"""Parsing an action string into tool calls: ``search[...]``, ``expand[...]``, ``finish[]``.

One action holds up to ``max_calls`` calls, one per line (the parallel tool calls of
PaperScout). Lines that are not a well-formed call are reported and skipped, as upstream skips
unknown tools and bad arguments without penalty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CALL = re.compile(r"(search|expand|finish)\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

#: Longest argument accepted; longer ones are invalid (a query is words, an id is short).
MAX_ARG_CHARS = 1000


@dataclass(frozen=True)
class Call:
    """One tool call.

    Attributes:
        tool: ``"search"``, ``"expand"`` or ``"finish"``.
        arg: The query or paper id, cleaned (no control characters, outer space stripped);
            ``""`` for finish.
    """

    tool: str
    arg: str

    def __str__(self) -> str:
        return f"{self.tool}[{self.arg}]"


@dataclass
class ParsedAction:
    """The calls found in an action and why other lines were skipped.

    Attributes:
        calls: Valid calls, in order, at most ``max_calls``.
        problems: One message per skipped line.
    """

    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _show(text: str, limit: int = 60) -> str:
    """A short printable rendering of untrusted text for feedback messages."""
    text = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _clean(arg: str) -> str:
    """Clean a call argument for use and display.

    Control characters and lone surrogates go, outer space and one layer of brackets or
    quotes are stripped (agents copy ``[id]`` from the paper list), runs of space collapse.
    """
    arg = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", arg)).strip()
    if len(arg) >= 2 and (arg[0], arg[-1]) in (("[", "]"), ('"', '"'), ("'", "'")):
        arg = arg[1:-1].strip()
    return " ".join(arg.split())


def parse_action(text: str, max_calls: int = 5) -> ParsedAction:
    r"""Split ``text`` into tool calls, one per line.

    Args:
        text: The action string (any ``str``).
        max_calls: Calls beyond this many are skipped with a message.

    Returns:
        The valid calls and a message for each skipped line.

    Example:
        >>> parsed = parse_action("search[graph neural networks]\nexpand[[syn:2101.00007]]\nhello")
        >>> [str(c) for c in parsed.calls], len(parsed.problems)
        (['search[graph neural networks]', 'expand[syn:2101.00007]'], 1)
    """
    out = ParsedAction()
    for line in text.splitlines():
        line = _BULLET.sub("", line.strip())
        if not line:
            continue
        m = _CALL.fullmatch(line)
        if m is None:
            out.problems.append(
                f"{_show(line)} is not a tool call; write search[query], expand[paper_id] "
                "or finish[]"
            )
            continue
        tool, raw = m.group(1).lower(), m.group(2)
        arg = _clean(raw)
        if tool == "finish":
            if arg:
                out.problems.append(f"{_show(line)}: finish takes no argument; write finish[]")
                continue
        elif not arg:
            what = "query" if tool == "search" else "paper id"
            out.problems.append(f"{_show(line)}: {tool} needs a {what}")
            continue
        elif len(arg) > MAX_ARG_CHARS:
            out.problems.append(f"{_show(line)}: argument longer than {MAX_ARG_CHARS} characters")
            continue
        if len(out.calls) >= max_calls:
            out.problems.append(f"{_show(line)}: only the first {max_calls} calls of a step run")
            continue
        out.calls.append(Call(tool, arg))
    return out
