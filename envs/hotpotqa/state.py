"""The episode state and its text form, rebuilt every step as Agent-R1's HotpotQA flow does.

The observation is never an appended transcript: it is the question, every search made so
far and the retrieved passages (deduplicated, each trimmed, the whole block within a character
budget with the oldest passages dropped first). That text is also ``info["anchor_obs"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_gym.envs.hotpotqa.actions import clean
from agent_gym.envs.hotpotqa.records import Passage

#: Searches listed in the observation (the latest); 5 steps of 4 searches never reach it.
MAX_SEARCHES_SHOWN = 40


@dataclass(frozen=True)
class Retrieved:
    """A passage in the state, with the query that first found it."""

    passage: Passage
    query: str


@dataclass
class EpisodeState:
    """What the agent has done so far in one episode.

    Attributes:
        question: The question text.
        searches: Every query run, in order (repeats included).
        passages: Distinct passages found, oldest first.
    """

    question: str
    searches: list[str] = field(default_factory=list)
    passages: list[Retrieved] = field(default_factory=list)
    _seen: set[Passage] = field(default_factory=set, repr=False)

    def add(self, query: str, found: list[Passage]) -> int:
        """Record a search and its results; return how many passages were new."""
        self.searches.append(query)
        new = 0
        for p in found:
            if p not in self._seen:
                self._seen.add(p)
                self.passages.append(Retrieved(p, query))
                new += 1
        return new


def render_state(state: EpisodeState, *, passage_chars: int, budget: int) -> str:
    """The state as text.

    Args:
        state: The episode state.
        passage_chars: Each passage's text is cut to this many characters.
        budget: The passages block (headers included) is kept within this many characters by
            dropping the oldest passages; a single passage longer than the budget is cut.

    Returns:
        Sections ``### Question``, ``### Searches so far`` (the latest
        :data:`MAX_SEARCHES_SHOWN`) and ``### Retrieved passages``. Every piece is cut to a
        fixed length, so the text is bounded whatever the agent writes.
    """
    lines = ["### Question", clean(state.question, 2000), "", "### Searches so far"]
    shown = state.searches[-MAX_SEARCHES_SHOWN:]
    if len(state.searches) > len(shown):
        lines.append(f"({len(state.searches) - len(shown)} earlier searches not shown)")
    lines += [f"[Search] {clean(q, 300)}" for q in shown] or ["(none yet)"]
    lines += ["", "### Retrieved passages"]
    blocks: list[str] = []
    used = 0
    for number in range(len(state.passages), 0, -1):
        item = state.passages[number - 1]
        block = (
            f"[{number}] {clean(item.passage.title, 200)} (query: {clean(item.query, 100)})\n"
            f"{clean(item.passage.text, passage_chars)}"
        )
        if used + len(block) > budget:
            if not blocks:
                blocks.append(block[: max(budget, 0)])
            break
        blocks.append(block)
        used += len(block) + 1
    omitted = len(state.passages) - len(blocks)
    if not state.passages:
        lines.append("(none yet)")
    elif omitted:
        lines.append(f"({omitted} older passage(s) omitted to fit the budget)")
    lines += reversed(blocks)
    return "\n".join(lines)
