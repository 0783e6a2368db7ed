r"""Strings the env returns must encode as UTF-8 and stay within the observation space.

A Python ``str`` may hold lone surrogates (``"\ud800"``): an LLM's decoded output can, and so
can a JSON data file (``"\ud800"`` is a valid escape). UTF-8 cannot encode them, so a
tokenizer's ``apply_chat_template`` or a JSON log fails later, far from the cause.
:func:`encodable` drops them; :func:`bounded` cuts a string to a length limit.
"""

from __future__ import annotations

#: Appended to a string that :func:`bounded` cut.
CUT_MARK = " [...]"


def encodable(text: str) -> str:
    r"""``text`` without the characters UTF-8 cannot encode (lone surrogates).

    Example:
        >>> encodable("red \ud800shoes"), encodable("café 🛒")
        ('red shoes', 'café 🛒')
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "ignore").decode("utf-8")
    return text


def bounded(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in :data:`CUT_MARK` when cut.

    Example:
        >>> bounded("abcdefghij", 8), bounded("abc", 8)
        ('ab [...]', 'abc')
    """
    if len(text) <= limit:
        return text
    return text[: max(limit - len(CUT_MARK), 0)] + CUT_MARK[: max(limit, 0)]
