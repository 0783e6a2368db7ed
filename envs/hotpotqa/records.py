"""The two record types every HotpotQA data source produces: passages and questions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Passage:
    """One retrievable paragraph.

    Attributes:
        title: Page title (unique within a corpus; shown to the agent and used by the oracle).
        text: Paragraph text.
    """

    title: str
    text: str

    def to_json(self) -> dict[str, str]:
        """The JSONL form ``{"title", "text"}`` (the fullwiki corpus format)."""
        return {"title": self.title, "text": self.text}


@dataclass(frozen=True)
class Question:
    """One multi-hop question with its gold answer.

    Attributes:
        id: Stable id (HotpotQA's ``_id``, or ``gen-...`` for the generated set).
        question: The question text shown to the agent.
        answer: The gold answer.
        type: ``"bridge"`` or ``"comparison"`` (HotpotQA's two question types).
        supporting_titles: Titles of the gold supporting paragraphs, in reasoning order.
        context: The question's own paragraphs (HotpotQA distractor setting), or ``()`` when
            passages come from a shared corpus.
        level: HotpotQA's difficulty label (``easy``/``medium``/``hard``), ``""`` if unknown.
        template: For generated questions, the template name (e.g. ``"bridge_border_currency"``).
        entities: Names the question mentions (searching them finds the first hop).
        split: ``"train"``, ``"dev"`` or ``"test"`` for generated questions; ``""`` otherwise.
    """

    id: str
    question: str
    answer: str
    type: str = "bridge"
    supporting_titles: tuple[str, ...] = ()
    context: tuple[Passage, ...] = ()
    level: str = ""
    template: str = ""
    entities: tuple[str, ...] = ()
    split: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the on-disk cache format of the generated set)."""
        return {
            "id": self.id,
            "question": self.question,
            "answer": self.answer,
            "type": self.type,
            "supporting_titles": list(self.supporting_titles),
            "level": self.level,
            "template": self.template,
            "entities": list(self.entities),
            "split": self.split,
        }

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Question:
        """Inverse of :meth:`to_json`."""
        return cls(
            id=record["id"],
            question=record["question"],
            answer=record["answer"],
            type=record["type"],
            supporting_titles=tuple(record["supporting_titles"]),
            level=record.get("level", ""),
            template=record.get("template", ""),
            entities=tuple(record.get("entities", ())),
            split=record.get("split", ""),
        )
