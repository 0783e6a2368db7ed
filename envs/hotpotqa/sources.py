"""Where an env's questions and passages come from: the generated set or the official files.

:func:`open_source` turns the env's ``data``/``corpus`` arguments into a :class:`QASource`,
building and caching whatever index it needs. Sources are cached per process, so many envs
in one process (a ``SyncVectorEnv``) share one copy of the data.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from agent_gym.envs.hotpotqa import generated
from agent_gym.envs.hotpotqa.cache import build_once
from agent_gym.envs.hotpotqa.official import load_corpus, load_questions
from agent_gym.envs.hotpotqa.records import Passage, Question
from agent_gym.paths import cache_dir, params_key

GENERATED_SOURCE = "generated:countryinfo"
_PER_QUESTION_INDEXES = 64
#: Sources opened in this process, by what they were opened from.
_OPEN: dict[tuple, QASource] = {}


def _document(p: Passage) -> str:
    return f"{p.title}\n{p.text}"


def title_key(text: str) -> str:
    """The form in which a query matches a title exactly (word tokens, stop words dropped)."""
    from agent_gym.envs.hotpotqa.search import tokenize

    return " ".join(tokenize(text))


def _title_index(passages: list[Passage] | tuple[Passage, ...]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for i, p in enumerate(passages):
        index.setdefault(title_key(p.title), []).append(i)
    return index


def _rank(titles: dict[str, list[int]], key: str, bm25_hits: list[int], k: int) -> list[int]:
    # Like Wikipedia's search box, a query that is a page title returns that page first;
    # BM25 alone ranks a short page that mentions the name twice ("Saint George
    # (Dominica) is a province of Dominica") above the long page about Dominica itself.
    title_hits = titles.get(key, []) if key else []
    return list(dict.fromkeys(title_hits + bm25_hits))[:k]


class QASource:
    """Questions by split, and passage search for a given question.

    Attributes:
        data_source: The ``info["data_source"]`` label.
        location: A folder or file to show in summaries.
    """

    def __init__(
        self,
        *,
        data_source: str,
        location: str,
        questions: list[Question],
        passages: list[Passage] | None = None,
        index_dir: Path | None = None,
    ) -> None:
        self.data_source = data_source
        self.location = location
        self._by_split: dict[str, list[Question]] = {}
        for q in questions:
            self._by_split.setdefault(q.split, []).append(q)
        self.by_id = {q.id: q for q in questions}
        self._passages = passages
        self._index = None
        if index_dir is not None:
            from agent_gym.envs.hotpotqa.search import BM25Index

            self._index = BM25Index.load(index_dir)
        self._titles: dict[str, list[int]] | None = None
        self._per_question: OrderedDict[str, tuple] = OrderedDict()

    @property
    def num_passages(self) -> int:
        """Passages in the shared corpus (0 in the distractor setting)."""
        return len(self._passages or ())

    def questions(self, split: str) -> list[Question]:
        """The questions of ``split``; an official file is one split, so it returns them all."""
        if "" in self._by_split:
            return self._by_split[""]
        return self._by_split.get(split, [])

    def split_sizes(self) -> dict[str, int]:
        """Number of questions per split (``{"": n}`` for an official file)."""
        return {k: len(v) for k, v in self._by_split.items()}

    def search(self, question: Question, query: str, k: int) -> list[Passage]:
        """The top ``k`` passages for ``query``.

        They come from the shared corpus, or else from the question's own paragraphs
        (HotpotQA's distractor setting).

        Passages whose title equals the query (compared as :func:`title_key`) come first,
        then the BM25 ranking.
        """
        key = title_key(query)
        if self._index is not None and self._passages is not None:
            if self._titles is None:
                self._titles = _title_index(self._passages)
            hits = _rank(self._titles, key, self._index.search(query, k), k)
            return [self._passages[i] for i in hits]
        if not question.context:
            return []
        cached = self._per_question.get(question.id)
        if cached is None:
            from agent_gym.envs.hotpotqa.search import BM25Index

            index = BM25Index.build([_document(p) for p in question.context])
            cached = (index, _title_index(question.context))
            self._per_question[question.id] = cached
            if len(self._per_question) > _PER_QUESTION_INDEXES:
                self._per_question.popitem(last=False)
        else:
            self._per_question.move_to_end(question.id)
        index, titles = cached
        hits = _rank(titles, key, index.search(query, k), k)
        return [question.context[i] for i in hits]


def generated_dir(seed: int = 0) -> Path:
    """Cache folder of the generated set for ``seed``."""
    return cache_dir("hotpotqa") / f"generated-{params_key(generated.build_params(seed))}"


def _build_generated(directory: Path, seed: int, progress: bool) -> None:
    from agent_gym.envs.hotpotqa.search import BM25Index

    passages, questions = generated.build(seed)
    generated.write(directory, passages, questions)
    BM25Index.build([_document(p) for p in passages], progress=progress).save(directory / "index")


def _generated_source(seed: int, progress: bool) -> QASource:
    directory = build_once(generated_dir(seed), lambda tmp: _build_generated(tmp, seed, progress))
    passages, questions = generated.read(directory)
    return QASource(
        data_source=GENERATED_SOURCE,
        location=str(directory),
        questions=questions,
        passages=passages,
        index_dir=directory / "index",
    )


def _file_key(path: Path) -> dict:
    stat = path.stat()
    return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def corpus_index_dir(corpus: Path) -> Path:
    """Cache folder of the BM25 index of a fullwiki corpus (keyed by path, size and mtime)."""
    return cache_dir("hotpotqa") / f"corpus-{params_key(_file_key(corpus))}"


def _official_source(data: Path, corpus: Path | None, progress: bool) -> QASource:
    questions = load_questions(data, need_context=corpus is None)
    label = f"official:{data.name}"
    if corpus is None:
        return QASource(data_source=label, location=str(data), questions=questions)
    passages = load_corpus(corpus)

    def build(tmp: Path) -> None:
        from agent_gym.envs.hotpotqa.search import BM25Index

        BM25Index.build([_document(p) for p in passages], progress=progress).save(tmp)

    index_dir = build_once(corpus_index_dir(corpus), build)
    return QASource(
        data_source=f"{label}+corpus:{corpus.name}",
        location=f"{data} + {corpus}",
        questions=questions,
        passages=passages,
        index_dir=index_dir,
    )


def open_source(
    data: str | os.PathLike[str], corpus: str | os.PathLike[str] | None, *, progress: bool
) -> QASource:
    """Open (building and caching on first use) the source the env arguments name.

    Args:
        data: ``"generated"`` or the path of an official HotpotQA JSON file.
        corpus: ``None`` or the path of a fullwiki JSONL corpus (official data only).
        progress: Show progress bars while building.

    Raises:
        FileNotFoundError: A path does not exist.
        ValueError: ``corpus`` was given with the generated set.
        agent_gym.envs.hotpotqa.official.DataFormatError: A file is malformed.
    """
    if data == "generated":
        if corpus is not None:
            raise ValueError(
                "corpus=... is only used with an official HotpotQA file (data='/path/....json'); "
                "the generated set has its own corpus"
            )
        key: tuple = ("generated", 0)
        if key not in _OPEN:
            _OPEN[key] = _generated_source(0, progress)
        return _OPEN[key]
    data_path = Path(data)
    corpus_path = None if corpus is None else Path(corpus)
    for path in (data_path, corpus_path):
        if path is not None and not path.is_file():
            raise FileNotFoundError(
                f"HotpotQA data file {str(path)!r} not found; pass data='generated' or the path "
                "of an official file such as hotpot_dev_distractor_v1.json"
            )
    data_path = data_path.resolve()
    corpus_path = corpus_path.resolve() if corpus_path is not None else None
    # Keyed by size and mtime too, so an edited file is read again.
    key = tuple(
        tuple(_file_key(p).values()) if p is not None else None for p in (data_path, corpus_path)
    )
    if key not in _OPEN:
        _OPEN[key] = _official_source(data_path, corpus_path, progress)
    return _OPEN[key]
