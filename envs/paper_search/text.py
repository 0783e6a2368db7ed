r"""Making untrusted text safe to show: printable, UTF-8 encodable and of bounded length.

An action may hold anything a Python ``str`` can, including lone surrogates (``"\ud800"``:
legal in a ``str``, but ``.encode("utf-8")`` raises) and 100 kB of text; data files may too
(JSON's ``"\ud800"`` escape, a file name that was not UTF-8). Every string the env returns goes
through :func:`scrub`, and whatever it echoes from an action through :func:`show`, so an
observation stays within the observation space and a tokenizer or a JSON log never chokes on it.
"""

from __future__ import annotations

import re
from typing import Any

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
SURROGATE = re.compile(r"[\ud800-\udfff]")


def scrub(text: str) -> str:
    r"""``text`` with every lone surrogate replaced by U+FFFD, so it encodes as UTF-8.

    Example:
        >>> scrub("a\ud800b").encode("utf-8")
        b'a\xef\xbf\xbdb'
    """
    return SURROGATE.sub("\ufffd", text)


def scrub_all(value: Any) -> Any:
    """:func:`scrub` every string in ``value`` (a str, or dicts, lists and tuples of them)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_all(v) for v in value)
    return value


def show(text: str, limit: int = 60) -> str:
    r"""A short printable quotation of untrusted text for feedback messages.

    Control characters become spaces, lone surrogates U+FFFD, and the text is cut to
    ``limit`` characters (with "...") before it is quoted.

    Example:
        >>> show("look\x00" + "x" * 100, limit=8)
        "'look xxx...'"
    """
    text = scrub(CONTROL.sub(" ", text[: limit + 1]))
    return repr(text if len(text) <= limit else text[:limit] + "...")


def fit(text: str, max_length: int) -> str:
    """``text`` scrubbed and, if longer than ``max_length``, cut with a note at the end.

    The env's own bounds keep observations far below the observation space; this is the
    last guarantee that an observation is a member of it.
    """
    text = scrub(text)
    if len(text) <= max_length:
        return text
    note = "\n[observation cut to fit the observation space]"
    return text[: max(max_length - len(note), 0)] + note[:max_length]
