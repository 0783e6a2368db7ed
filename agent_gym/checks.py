"""Checks of an env's constructor keywords: one line that names the keyword, at construction.

A keyword typed on a command line (``--env-arg num_products=abc``) or in a recipe reaches the
env as whatever was written; without these a wrong one failed later, far from its name
(``invalid literal for int()`` at the first reset) or not at all (``discrete_reward="no"`` is
truthy).
"""

from __future__ import annotations

import math
import operator
from typing import Any


def whole(name: str, value: Any, minimum: int | None = None, *, none: bool = False) -> int | None:
    """``value`` as an int when it is a whole number (not a bool) of at least ``minimum``.

    Raises:
        ValueError: The message names ``name`` and the value.

    >>> whole("top_k", 3, 1)
    3
    """
    if value is None and none:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        kind = "a whole number" + (" or None" if none else "")
        raise ValueError(f"{name} must be {kind}, {_got(value)}") from None
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number}")
    return number


def real(name: str, value: Any, *, none: bool = False) -> float | None:
    """``value`` as a finite float (an int or float, not a bool or a string).

    Raises:
        ValueError: The message names ``name`` and the value.
    """
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        kind = "a finite number" + (" or None" if none else "")
        raise ValueError(f"{name} must be {kind}, {_got(value)}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """``value`` when it is a bool (``"no"`` or ``0`` is not taken for False or True).

    Raises:
        ValueError: The message names ``name`` and the value.
    """
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, {_got(value)}")
    return value


def _got(value: Any) -> str:
    """``got 'ten' (str)``: the value and its type, for a message."""
    return f"got {value!r:.80} ({type(value).__name__})"
