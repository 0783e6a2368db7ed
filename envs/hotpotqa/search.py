r"""BM25 passage search over a list of passages, built with ``bm25s`` and cached on disk.

Agent-R1's HotpotQA recipe searches with FAISS over BGE embeddings, which needs a Hugging Face
download; BM25 is the offline substitute (see docs/datasets.md). Tokens are lower-cased ``\w+``
words minus ``bm25s``'s English stop words, with no stemming, so an index needs no model and the
same text always gives the same ranking.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from agent_gym.datafiles import read_json

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(STOPWORDS_EN)
_VOCAB_FILE = "vocab.json"


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words; any ``str`` is accepted.

    Example:
        >>> tokenize("What is the capital of France?")
        ['what', 'capital', 'france']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


class BM25Index:
    """A BM25 (Lucene variant, k1=1.5, b=0.75) index over ``n`` documents.

    Build with :meth:`build`, persist with :meth:`save`/:meth:`load`, query with
    :meth:`search`. Ties in score are broken by document position, so results are
    deterministic.

    Example:
        >>> index = BM25Index.build(["Paris is in France.", "Rome is in Italy."])
        >>> index.search("capital of Italy", k=5)
        [1]
    """

    def __init__(self, model: bm25s.BM25, vocab: dict[str, int], num_docs: int) -> None:
        self._model = model
        self._vocab = vocab
        self.num_docs = num_docs

    @classmethod
    def build(cls, texts: Sequence[str], *, progress: bool = False) -> BM25Index:
        """Tokenise and index ``texts`` (document ``i`` is ``texts[i]``).

        Args:
            texts: The documents; may be empty strings, not an empty list.
            progress: Show a tqdm bar while tokenising.

        Raises:
            ValueError: If ``texts`` is empty.
        """
        if not texts:
            raise ValueError("cannot build a search index over zero passages")
        from tqdm.auto import tqdm

        vocab: dict[str, int] = {}
        doc_ids: list[list[int]] = []
        for text in tqdm(texts, desc="tokenising passages", disable=not progress, unit="doc"):
            doc_ids.append([vocab.setdefault(tok, len(vocab)) for tok in tokenize(text)])
        # bm25s maps an empty document to a reserved empty token; keep the ids dense.
        vocab.setdefault("", len(vocab))
        model = bm25s.BM25()
        model.index((doc_ids, vocab), show_progress=progress, create_empty_token=False)
        return cls(model, vocab, len(texts))

    def save(self, directory: str | Path) -> None:
        """Write the index files into ``directory`` (created if missing)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._model.save(str(directory), show_progress=False)
        (directory / _VOCAB_FILE).write_text(
            json.dumps({"num_docs": self.num_docs, "vocab": self._vocab}), encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        """Read an index written by :meth:`save`."""
        directory = Path(directory)
        meta = read_json(directory / _VOCAB_FILE)
        model = bm25s.BM25.load(str(directory), load_vocab=False, show_progress=False)
        return cls(model, meta["vocab"], int(meta["num_docs"]))

    def search(self, query: str, k: int = 5) -> list[int]:
        """Positions of the ``k`` best-scoring documents, best first.

        Only documents sharing at least one token with the query are returned, so the list
        may be shorter than ``k`` (empty for a query with no indexed word). Repeated query
        words count once.
        """
        ids = list(dict.fromkeys(self._vocab[t] for t in tokenize(query) if t in self._vocab))
        if not ids or k <= 0:
            return []
        scores = self._model.get_scores_from_ids(ids)
        n = min(k, scores.shape[0])
        # argpartition finds the k-th best score; every document at or above it is then
        # ordered by (score desc, position asc) so equal scores never reorder between runs.
        kth = scores[np.argpartition(-scores, n - 1)[n - 1]]
        candidates = np.flatnonzero(scores >= max(kth, np.finfo(scores.dtype).tiny))
        order = np.lexsort((candidates, -scores[candidates]))
        return [int(i) for i in candidates[order[:n]]]
