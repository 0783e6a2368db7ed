"""Parsing the env's command text: ``search[query]`` lines or one ``answer[text]``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANSWER = re.compile(r"answer\[(.*)\]", re.IGNORECASE | re.DOTALL)
_SEARCH = re.compile(r"search\[(.*)\]", re.IGNORECASE)
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Search:
    """One to ``max_calls`` searches, run in order (Agent-R1's parallel tool calls)."""

    queries: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """The final answer; ends the episode."""

    text: str


@dataclass(frozen=True)
class Invalid:
    """Text the env does not understand, with the reason shown to the agent."""

    reason: str


def encodable(text: str) -> str:
    r"""``text`` with lone surrogates (legal in a ``str``, not in UTF-8) replaced by ``?``.

    Example:
        >>> encodable("Paris\ud800").encode("utf-8")
        b'Paris?'
    """
    return text.encode("utf-8", "replace").decode("utf-8")


def clean(text: str, limit: int) -> str:
    """Make ``text`` safe to show.

    Lone surrogates become ``?``, control characters a space; whitespace is collapsed and the
    result cut to ``limit`` characters, ending with an ellipsis when cut.
    """
    text = " ".join(_UNPRINTABLE.sub(" ", encodable(text)).split())
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def parse_action(action: str, *, max_calls: int, max_query_chars: int) -> Search | Answer | Invalid:
    r"""Parse one action.

    Accepted forms (command names are case-insensitive; surrounding whitespace is ignored):

    * ``answer[text]``: the whole action; ``text`` may not be blank.
    * ``search[query]``: one per line, 1 to ``max_calls`` lines (blank lines ignored); each
      query non-blank and at most ``max_query_chars`` characters.

    Anything else, including a mix of searches and an answer, is :class:`Invalid`.

    Example:
        >>> parse_action("search[Kenya]\nsearch[Nairobi]", max_calls=4, max_query_chars=300)
        Search(queries=('Kenya', 'Nairobi'))
        >>> parse_action("answer[ Nairobi ]", max_calls=4, max_query_chars=300)
        Answer(text='Nairobi')
    """
    text = action.strip()
    if not text:
        return Invalid("the action is empty")
    answer = _ANSWER.fullmatch(text)
    if answer:
        inner = " ".join(answer.group(1).split())
        return Answer(inner) if inner else Invalid("answer[] holds no answer")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    queries = []
    for line in lines:
        match = _SEARCH.fullmatch(line)
        if match is None:
            if _ANSWER.fullmatch(line):
                return Invalid("answer[...] must be the whole action, not mixed with searches")
            return Invalid(f"cannot parse {clean(line, 60)!r}")
        query = " ".join(match.group(1).split())
        if not query:
            return Invalid("search[] holds no query")
        if len(query) > max_query_chars:
            return Invalid(f"a query is longer than {max_query_chars} characters")
        queries.append(query)
    if len(queries) > max_calls:
        return Invalid(f"{len(queries)} searches in one action; at most {max_calls} are allowed")
    return Search(tuple(queries))
