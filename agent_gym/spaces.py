"""Text spaces that hold natural language.

Gymnasium's :class:`gymnasium.spaces.Text` checks every character against a charset that
defaults to the 62 alphanumerics, so ``"go to desk 1"`` (it has spaces) is not a member.
LLM agents read and write arbitrary Unicode, so the spaces here accept any ``str`` up to a
length limit while still sampling readable strings.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium import spaces

#: Characters used by :meth:`Text.sample`: printable ASCII without control whitespace.
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "


class Text(spaces.Text):
    """A space of Python strings of length ``min_length..max_length``, any Unicode.

    ``contains`` checks only the type and the length; ``sample`` draws printable ASCII.

    Example:
        >>> from agent_gym.spaces import Text
        >>> space = Text(max_length=100)
        >>> space.contains("go to desk 1"), space.contains("café — ünïcode ✓"), space.contains(3)
        (True, True, False)
        >>> isinstance(space.sample(), str)
        True
    """

    def __init__(
        self,
        max_length: int,
        *,
        min_length: int = 0,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        """Create the space.

        Args:
            max_length: Longest string in the space.
            min_length: Shortest string in the space (default 0: the empty string is allowed).
            seed: Seed for :meth:`sample`.
        """
        super().__init__(
            max_length=max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed
        )

    def contains(self, x: Any) -> bool:
        """Return True for any ``str`` whose length is within the bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"agent_gym.spaces.Text(min_length={self.min_length}, max_length={self.max_length})"
