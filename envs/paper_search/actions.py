"""Parsing an action string into tool calls: ``search[...]``, ``expand[...]``, ``finish[]``.

One action holds up to ``max_calls`` calls, one per line (the parallel tool calls of
PaperScout). Lines that are not a well-formed call are reported and skipped, as upstream skips
unknown tools and bad arguments without penalty. Only the first :data:`MAX_REPORTED` skipped
lines are quoted back (each cut to 60 characters), so no action, however long, makes a long
observation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .text import CONTROL, scrub, show

_CALL = re.compile(r"(search|expand|finish)\s*\[(.*)\]", re.IGNORECASE | re.DOTALL)
# Any ``name[...]`` line: what a tool call looks like, whatever the tool.
_CALL_SHAPED = re.compile(r"[A-Za-z_]\w*\s*\[.*\]", re.DOTALL)
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s+")

#: Longest argument accepted; longer ones are invalid (a query is words, an id is short).
MAX_ARG_CHARS = 1000
#: Skipped lines quoted in ``problems``; the rest are only counted.
MAX_REPORTED = 10


@dataclass(frozen=True)
class Call:
    """One tool call.

    Attributes:
        tool: ``"search"``, ``"expand"`` or ``"finish"``.
        arg: The query or paper id, cleaned (no control characters, outer space stripped);
            ``""`` for finish.
        raw: The argument as written, only stripped of outer space (Agent-R1's recipe
            compares searches by this exact string); ``""`` means the same as ``arg``.
    """

    tool: str
    arg: str
    raw: str = field(default="", compare=False)

    @property
    def exact(self) -> str:
        """The argument as written (outer space stripped)."""
        return self.raw or self.arg

    def __str__(self) -> str:
        return f"{self.tool}[{self.arg}]"


@dataclass
class ParsedAction:
    """The calls found in an action and why other lines were skipped.

    Attributes:
        calls: Valid calls, in order, at most ``max_calls``.
        problems: One message for each of the first :data:`MAX_REPORTED` skipped lines.
        skipped: How many lines were skipped (all of them, reported or not).
    """

    calls: list[Call] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: int = 0

    def skip(self, message: str) -> None:
        """Count a skipped line, keeping its message if fewer than MAX_REPORTED are kept."""
        self.skipped += 1
        if len(self.problems) < MAX_REPORTED:
            self.problems.append(message)


def _clean(arg: str) -> str:
    """Clean a call argument for use and display.

    Control characters and lone surrogates go, outer space and one layer of brackets or
    quotes are stripped (agents copy ``[id]`` from the paper list), runs of space collapse.
    """
    arg = scrub(CONTROL.sub(" ", arg)).strip()
    if len(arg) >= 2 and (arg[0], arg[-1]) in (("[", "]"), ('"', '"'), ("'", "'")):
        arg = arg[1:-1].strip()
    return " ".join(arg.split())


def parse_action(
    text: str, max_calls: int = 5, *, limit_counts_malformed: bool = False
) -> ParsedAction:
    r"""Split ``text`` into tool calls, one per line.

    Args:
        text: The action string (any ``str``).
        max_calls: Calls beyond this many are skipped with a message.
        limit_counts_malformed: Count every call-shaped line (``name[...]``, valid or not)
            towards ``max_calls``, as Agent-R1's recipe keeps the first ``max_calls`` tool
            calls before it drops unknown tools and bad arguments. Otherwise only valid calls
            count.

    Returns:
        The valid calls and a message for each skipped line.

    Example:
        >>> parsed = parse_action("search[graph neural networks]\nexpand[[syn:2101.00007]]\nhello")
        >>> [str(c) for c in parsed.calls], parsed.skipped
        (['search[graph neural networks]', 'expand[syn:2101.00007]'], 1)
    """
    out = ParsedAction()
    shaped = 0  # call-shaped lines so far, for limit_counts_malformed
    for line in text.splitlines():
        line = _BULLET.sub("", line.strip())
        if not line:
            continue
        if limit_counts_malformed and _CALL_SHAPED.fullmatch(line):
            shaped += 1
            if shaped > max_calls:
                out.skip(f"{show(line)}: only the first {max_calls} calls of a step run")
                continue
        m = _CALL.fullmatch(line)
        if m is None:
            out.skip(
                f"{show(line)} is not a tool call; write search[query], expand[paper_id] "
                "or finish[]"
            )
            continue
        tool, raw = m.group(1).lower(), m.group(2)
        arg = _clean(raw)
        if tool == "finish":
            if arg:
                out.skip(f"{show(line)}: finish takes no argument; write finish[]")
                continue
        elif not arg:
            what = "query" if tool == "search" else "paper id"
            out.skip(f"{show(line)}: {tool} needs a {what}")
            continue
        elif len(arg) > MAX_ARG_CHARS:
            out.skip(f"{show(line)}: argument longer than {MAX_ARG_CHARS} characters")
            continue
        if len(out.calls) >= max_calls:
            out.skip(f"{show(line)}: only the first {max_calls} calls of a step run")
            continue
        out.calls.append(Call(tool, arg, raw.strip()))
    return out
