"""BM25 product search (``bm25s``), standing in for upstream's pyserini/Lucene index.

Upstream indexes, per product, ``(title + description + first bullet + options).lower()``
and returns the top 50 hits (``SEARCH_RETURN_N``), shown 10 per page. Lucene's English
analyser drops stopwords and stems; here tokens are lower-cased word characters, English
stopwords are dropped and plurals are folded by a small suffix rule (:func:`stem`), so hit
lists are close to, not identical with, upstream's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: Results per search (upstream ``SEARCH_RETURN_N``).
SEARCH_RETURN_N = 50
#: Query tokens kept; longer queries are cut (a 100 kB "query" must not stall a step).
MAX_QUERY_TOKENS = 256

_WORD = re.compile(r"\w+")


def stem(token: str) -> str:
    """Fold an English plural to its singular ("shoes" -> "shoe", "batteries" -> "battery").

    Example:
        >>> [stem(t) for t in ("shoes", "boxes", "batteries", "glass", "bus", "oz")]
        ['shoe', 'box', 'battery', 'glass', 'bus', 'oz']
    """
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 4 and token.endswith(("ches", "shes", "sses", "xes", "zes")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str, stopwords: frozenset[str]) -> list[str]:
    """Lower-case word tokens of ``text``, stopwords dropped and plurals folded."""
    return [stem(t) for t in _WORD.findall(text.lower()) if t not in stopwords]


def document_text(product: Any) -> str:
    """The text upstream indexes for a product: title, description, first bullet, options."""
    parts = [product.name, product.description]
    if product.bullets:
        parts.append(product.bullets[0])
    for name, values in product.options.items():
        parts.append(f"{name}: {', '.join(values)}")
    return " ".join(parts).lower()


class SearchIndex:
    """A BM25 index over a catalogue's products, in catalogue order.

    Example:
        >>> from types import SimpleNamespace as P
        >>> docs = [P(asin="A", name="red shoe", description="", bullets=(), options={}),
        ...         P(asin="B", name="blue hat", description="", bullets=(), options={})]
        >>> SearchIndex.build(docs, show_progress=False).search("red shoes")
        [0]
    """

    def __init__(self, retriever: Any, asins: Sequence[str]) -> None:
        self._retriever = retriever
        self.asins = list(asins)
        self._stopwords = _stopwords()

    @classmethod
    def build(cls, products: Iterable[Any], show_progress: bool = False) -> SearchIndex:
        """Index ``products`` (objects with ``asin, name, description, bullets, options``)."""
        import bm25s

        products = list(products)
        stop = _stopwords()
        corpus = [tokenize(document_text(p), stop) for p in products]
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=show_progress)
        return cls(retriever, [p.asin for p in products])

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` atomically (a temp folder, then a rename)."""
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
        try:
            self._retriever.save(str(tmp), show_progress=False)
            (tmp / "asins.json").write_text(json.dumps(self.asins), encoding="utf-8")
            try:
                os.replace(tmp, directory)
            except OSError:
                if not (directory / "asins.json").is_file():  # not another process's copy
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def load(cls, directory: str | Path) -> SearchIndex:
        """Read an index written by :meth:`save`."""
        import bm25s

        directory = Path(directory)
        retriever = bm25s.BM25.load(str(directory), show_progress=False)
        asins = json.loads((directory / "asins.json").read_text(encoding="utf-8"))
        return cls(retriever, asins)

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Catalogue positions of the ``k`` best products with a nonzero score.

        Equal scores are ordered by catalogue position, so results are deterministic. A query
        with no indexed word returns ``[]``.
        """
        import numpy as np

        tokens = tokenize(query, self._stopwords)[:MAX_QUERY_TOKENS]
        ids = self._retriever.get_tokens_ids(tokens)
        if not ids:
            return []
        scores = self._retriever.get_scores_from_ids(ids)
        n = min(k, len(scores))
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[scores[top] > 0]
        order = np.lexsort((top, -scores[top]))  # by score, then by position
        return [int(i) for i in top[order]]
