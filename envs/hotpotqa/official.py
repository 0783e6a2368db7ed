"""Loaders for the official HotpotQA files and for a fullwiki passage corpus.

Formats (as released by the HotpotQA authors):

* ``hotpot_train_v1.1.json``, ``hotpot_dev_distractor_v1.json``, ``hotpot_dev_fullwiki_v1.json``:
  one JSON list; each record has ``_id``, ``question``, ``answer``, ``type``
  (``bridge``/``comparison``), ``level``, ``supporting_facts`` (``[[title, sentence_index],
  ...]``) and ``context`` (``[[title, [sentence, ...]], ...]``: 10 paragraphs in the
  distractor setting, the retrieved ones in fullwiki). The test files have no answers, so they
  cannot be scored here.
* A fullwiki corpus: JSONL, one passage per line with ``title`` and ``text`` (a string, or a
  list of sentences as in the processed Wikipedia abstracts, joined with no separator since
  HotpotQA sentences keep their leading spaces). This is the format of Agent-R1's
  ``hpqa_corpus.jsonl``.

Malformed input raises :class:`DataFormatError` naming the file, the record and the field:
a file that is not UTF-8 or not JSON, a missing or mistyped field, ``supporting_facts`` that is
not a list of ``[title, sentence_index]`` pairs with integer indices, and (distractor setting)
a supporting title that is not one of the record's ``context`` paragraphs, which the question
could then never retrieve.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_gym.datafiles import DataFileError, iter_jsonl, read_json
from agent_gym.envs.hotpotqa.records import Passage, Question


class DataFormatError(DataFileError):
    """A data file does not follow the official format (or is not UTF-8 JSON)."""


def _paragraph_text(value: Any) -> str | None:
    """A paragraph as a string (sentences joined), or None if it is neither form."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return "".join(value)
    return None


def _supporting_titles(where: str, facts: Any) -> tuple[str, ...]:
    """The distinct titles of ``supporting_facts``, in order, after checking its form."""
    if facts is None:
        return ()
    if not isinstance(facts, list):
        raise DataFormatError(
            f"{where}: field 'supporting_facts' must be a list of [title, sentence_index] "
            f"pairs, got {type(facts).__name__} {json.dumps(facts, ensure_ascii=False)[:60]}"
        )
    titles: list[str] = []
    for j, fact in enumerate(facts):
        if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str)):
            raise DataFormatError(
                f"{where}: field 'supporting_facts'[{j}] must be [title, sentence_index], "
                f"got {json.dumps(fact, ensure_ascii=False)[:80]}"
            )
        index = fact[1]
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise DataFormatError(
                f"{where}: field 'supporting_facts'[{j}][1] must be a sentence index (an "
                f"integer >= 0), got {json.dumps(index, ensure_ascii=False)[:40]}"
            )
        if fact[0] not in titles:
            titles.append(fact[0])
    return tuple(titles)


def _question(path: Path, index: int, rec: Any, *, need_context: bool) -> Question:
    where = f"{path}: record {index}"
    if not isinstance(rec, dict):
        raise DataFormatError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    if isinstance(rec.get("_id"), str):
        where += f" (_id {rec['_id']!r})"

    def field(name: str) -> str:
        if name not in rec:
            hint = " (test files have no answers and cannot be scored)" if name == "answer" else ""
            raise DataFormatError(f"{where}: missing field {name!r}{hint}")
        if not isinstance(rec[name], str):
            raise DataFormatError(
                f"{where}: field {name!r} must be a string, got {type(rec[name]).__name__}"
            )
        return rec[name]

    qid, question, answer = field("_id"), field("question"), field("answer")
    context: list[Passage] = []
    raw_context = rec.get("context")
    if raw_context is None and need_context:
        raise DataFormatError(
            f"{where}: missing field 'context' (the distractor setting needs each question's "
            "paragraphs; pass corpus=... for fullwiki files without them)"
        )
    if raw_context is not None:
        if not isinstance(raw_context, list):
            raise DataFormatError(f"{where}: field 'context' must be a list of [title, sentences]")
        for j, item in enumerate(raw_context):
            text = _paragraph_text(item[1]) if isinstance(item, list) and len(item) == 2 else None
            if text is None or not isinstance(item[0], str):
                raise DataFormatError(
                    f"{where}: field 'context'[{j}] must be [title, [sentence, ...]], "
                    f"got {json.dumps(item, ensure_ascii=False)[:80]}"
                )
            context.append(Passage(item[0], text))
        if need_context and not context:
            raise DataFormatError(f"{where}: field 'context' is empty")
    titles = _supporting_titles(where, rec.get("supporting_facts"))
    if need_context:
        # In the distractor setting a question searches only its own paragraphs; a supporting
        # title missing from them (a typo, a record cut short) could never be retrieved.
        have = {p.title for p in context}
        missing = [t for t in titles if t not in have]
        if missing:
            raise DataFormatError(
                f"{where}: field 'supporting_facts' names {missing[0]!r}, which is not a title "
                f"in 'context' (its titles: {', '.join(repr(t) for t in sorted(have)[:10])})"
            )
    return Question(
        id=qid,
        question=question,
        answer=answer,
        type=rec.get("type") if isinstance(rec.get("type"), str) else "",
        supporting_titles=titles,
        context=tuple(context),
        level=rec.get("level") if isinstance(rec.get("level"), str) else "",
    )


def load_questions(path: str | Path, *, need_context: bool = True) -> list[Question]:
    """Read an official HotpotQA JSON file.

    Args:
        path: ``hotpot_dev_distractor_v1.json`` or another file in the same format.
        need_context: Require every record's ``context`` (the distractor setting). Fullwiki
            use with a separate corpus passes False.

    Returns:
        The questions in file order.

    Raises:
        DataFormatError: The file is missing, not UTF-8, not JSON or not a list, or a record
            lacks a field or has a malformed one.
    """
    path = Path(path)
    data = read_json(path, error=DataFormatError)
    if not isinstance(data, list):
        raise DataFormatError(
            f"{path}: expected a JSON list of question records, got {type(data).__name__}"
        )
    questions = [_question(path, i, rec, need_context=need_context) for i, rec in enumerate(data)]
    seen: set[str] = set()
    for i, q in enumerate(questions):
        if q.id in seen:
            raise DataFormatError(f"{path}: record {i}: duplicate _id {q.id!r}")
        seen.add(q.id)
    if not questions:
        raise DataFormatError(f"{path}: the file holds no questions")
    return questions


def load_corpus(path: str | Path) -> list[Passage]:
    """Read a fullwiki corpus: JSONL with ``title`` and ``text`` per line (blank lines skipped).

    Raises:
        DataFormatError: The file is missing or not UTF-8, or a line is not a JSON object or
            lacks ``title``/``text``.
    """
    path = Path(path)
    passages = []
    for lineno, rec in iter_jsonl(path, error=DataFormatError):
        for key in ("title", "text"):
            if key not in rec:
                raise DataFormatError(f"{path}: line {lineno}: missing key {key!r}")
        text = _paragraph_text(rec["text"])
        if not isinstance(rec["title"], str) or text is None:
            raise DataFormatError(
                f"{path}: line {lineno}: 'title' must be a string and 'text' a string or "
                "a list of strings"
            )
        passages.append(Passage(rec["title"], text))
    if not passages:
        raise DataFormatError(f"{path}: the corpus holds no passages")
    return passages
