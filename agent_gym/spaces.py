"""Text spaces that hold natural language.

Gymnasium's :class:`gymnasium.spaces.Text` checks every character against a charset that
defaults to the 62 alphanumerics, so ``"go to desk 1"`` (it has spaces) is not a member.
LLM agents read and write arbitrary Unicode, so the spaces here accept any ``str`` up to a
length limit while still sampling readable strings.
"""

from __future__ import annotations

import re
import string
from typing import Any

import numpy as np
from gymnasium import spaces

#: Characters used by :meth:`Text.sample`: printable ASCII without control whitespace.
SAMPLE_CHARSET = string.ascii_letters + string.digits + string.punctuation + " "

#: Lone surrogates: legal in a Python ``str`` (JSON's ``"\ud800"`` escape decodes to one) but
#: not encodable as UTF-8, so neither a tokenizer nor a JSON reply takes them.
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (the replacement character).

    >>> replace_surrogates("a" + chr(0xD800))
    'a\ufffd'
    """
    return _SURROGATE.sub("\ufffd", text)


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


#: Chat roles a :class:`Messages` observation may use.
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool"})


class Messages(spaces.Space[list]):
    """A space of chat conversations: lists of ``{"role": str, "content": str}`` dicts.

    This is the observation space of :class:`agent_gym.wrappers.ChatPrompt`: the messages a
    learner passes to ``tokenizer.apply_chat_template``. ``contains`` checks the structure
    (roles in :data:`CHAT_ROLES`, ``content`` a ``str``, total content length within
    ``max_length``); ``sample`` returns a ``[system, user]`` pair of printable strings. Vector
    envs batch it as a ``Tuple`` of lists, like :class:`Text`.

    Example:
        >>> from agent_gym.spaces import Messages
        >>> space = Messages(max_length=1000)
        >>> space.contains([{"role": "system", "content": "Act."}, {"role": "user", "content": "Go."}])
        True
        >>> space.contains([{"role": "narrator", "content": "x"}]), space.contains("Go.")
        (False, False)
    """

    def __init__(
        self, max_length: int = 1_000_000, *, seed: int | np.random.Generator | None = None
    ):
        """Create the space.

        Args:
            max_length: Largest total number of characters over all messages' contents.
            seed: Seed for :meth:`sample`.
        """
        super().__init__(shape=None, dtype=None, seed=seed)
        self.max_length = max_length

    def contains(self, x: Any) -> bool:
        """Return True for a list of role/content dicts within the length limit."""
        if not isinstance(x, list):
            return False
        total = 0
        for message in x:
            if not (
                isinstance(message, dict)
                and message.get("role") in CHAT_ROLES
                and isinstance(message.get("content"), str)
            ):
                return False
            total += len(message["content"])
        return total <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        """Return ``[system, user]`` messages with short printable contents."""
        if mask is not None or probability is not None:
            raise ValueError("Messages.sample takes no mask or probability")
        text = Text(
            max_length=min(self.max_length // 2, 64), seed=int(self.np_random.integers(2**31))
        )
        return [
            {"role": "system", "content": text.sample()},
            {"role": "user", "content": text.sample()},
        ]

    @property
    def is_np_flattenable(self) -> bool:
        """Chat messages have no fixed-size numeric form."""
        return False

    def __eq__(self, other: object) -> bool:
        # AsyncVectorEnv compares each worker's space with the first env's by ==, so two
        # separately built spaces with the same bounds must be equal (the base class compares ids).
        return isinstance(other, Messages) and self.max_length == other.max_length

    def __hash__(self) -> int:
        return hash((Messages, self.max_length))

    def __repr__(self) -> str:
        return f"agent_gym.spaces.Messages(max_length={self.max_length})"
