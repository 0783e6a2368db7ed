"""The context-length rule: how a prompt that is over its token budget is shortened.

The rule (documented in docs/learner.md):

1. Render the chat messages with the tokenizer's chat template. If the prompt fits
   ``max_prompt_tokens``, use it unchanged.
2. Otherwise drop **older history first**: the oldest observation/action pairs go one at a
   time, the system prompt, the task and the newest observation always stay.
3. If the prompt still does not fit with no history left, the episode ends with reason
   ``"context_limit"`` (the step is not taken and no row is written for it).

The newest observation is never cut: a silently truncated observation would train the policy
on a state it never saw.

History is shortened through whichever form the observation has:

* a multi-turn message list ``[system?, user, assistant, user, assistant, ..., user]``: the
  oldest ``user``/``assistant`` pairs are removed;
* a ``ChatPrompt`` observation whose history is rendered inside the last user message: the
  rollout asks the wrapper (in whatever process or machine it runs) for the same prompt with a
  shorter history (see :func:`fit_prompt`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

Messages = list[dict[str, str]]


def as_messages(obs: Any) -> Messages:
    """Turn an observation into chat messages: a message list passes, a string becomes a user turn.

    Raises:
        TypeError: ``obs`` is neither a ``str`` nor a list of ``{"role", "content"}`` dicts.
    """
    if isinstance(obs, str):
        return [{"role": "user", "content": obs}]
    if isinstance(obs, Sequence) and all(isinstance(m, dict) and "role" in m for m in obs):
        return [dict(m) for m in obs]
    raise TypeError(
        "the rollout needs str observations or chat message lists (wrap the env in "
        f"agent_gym.wrappers.ChatPrompt); got {type(obs).__name__}: {obs!r:.80}"
    )


def encode(tokenizer: Any, messages: Messages) -> list[int]:
    """Prompt token ids: the chat template applied with the generation prompt appended."""
    enc = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(enc, dict) or hasattr(enc, "input_ids"):
        enc = enc["input_ids"]
    return list(enc)


def drop_oldest_turns(messages: Messages) -> Iterator[Messages]:
    """Yield ``messages`` with 1, 2, ... of its oldest user/assistant pairs removed.

    The leading system message and the final user message are kept. Yields nothing for a
    conversation with no earlier turns.

    Example:
        >>> m = [{"role": "system", "content": "s"}, {"role": "user", "content": "o1"},
        ...      {"role": "assistant", "content": "a1"}, {"role": "user", "content": "o2"}]
        >>> [[x["content"] for x in v] for v in drop_oldest_turns(m)]
        [['s', 'o2']]
    """
    head = 1 if messages and messages[0]["role"] == "system" else 0
    body = messages[head:]
    k = 0
    while len(body) - k >= 3 and body[k]["role"] == "user" and body[k + 1]["role"] == "assistant":
        k += 2
        yield messages[:head] + body[k:]


def fit_prompt(
    tokenizer: Any,
    messages: Messages,
    max_tokens: int,
    rerender: Callable[[int], Messages] | None = None,
    held: int | Callable[[], int] = 0,
) -> tuple[list[int] | None, int]:
    """Apply the context-length rule to one prompt.

    Args:
        tokenizer: A tokenizer with a chat template.
        messages: The full prompt (newest observation last).
        max_tokens: Budget for the prompt's token count.
        rerender: Optional ``rerender(k)`` returning the same prompt rendered with only the
            ``k`` most recent history entries, as a ``ChatPrompt`` wrapper can
            (:meth:`~algos.env_slots.EnvSlots.messages`). Tried with ``k`` going down from
            ``held - 1`` to 0.
        held: How many history entries the prompt holds (for ``rerender``), or a callable
            asked only once re-rendering is needed (a round trip to an async or Ray env).

    Returns:
        ``(ids, dropped)``: the prompt ids and how many history entries were dropped, or
        ``(None, dropped)`` when no variant fits (end the episode with ``"context_limit"``).
    """
    ids = encode(tokenizer, messages)
    if len(ids) <= max_tokens:
        return ids, 0
    dropped = 0
    for variant in drop_oldest_turns(messages):
        dropped += 1
        ids = encode(tokenizer, variant)
        if len(ids) <= max_tokens:
            return ids, dropped
    if rerender is not None:
        # Shorter histories, newest kept, down to none.
        size = held() if callable(held) else held
        for k in range(size - 1, -1, -1):
            dropped += 1
            ids = encode(tokenizer, rerender(k))
            if len(ids) <= max_tokens:
                return ids, dropped
    return None, dropped
