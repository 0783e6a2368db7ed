"""BM25 search over paper titles and abstracts (bm25s), with a small deterministic tokenizer."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")

#: English stopwords plus words every request contains ("find papers that ..."), which
#: would otherwise reward documents for sharing boilerplate with the query.
STOPWORDS = frozenset(
    """a an and are as at be but by for from has have in into is it its of on or such that the
    their then there these they this to was were will with we our us which what who how when
    where can could would should do does did not no than so via also all any each more most
    other some very i me my you your find paper papers work works research need looking
    published since onwards later using use uses""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric words without stopwords, plurals made singular.

    The light plural rule (``networks`` -> ``network``, ``classes`` -> ``class``,
    ``studies`` -> ``study``; ``corpus`` and ``analysis`` stay) stands in
    for a stemmer so that no extra package is needed; it is applied to documents and queries
    alike.

    Example:
        >>> tokenize("Graph Neural Networks for the Cora dataset!")
        ['graph', 'neural', 'network', 'cora', 'dataset']
    """
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOPWORDS:
            continue
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif w.endswith("sses"):
            w = w[:-2]
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        out.append(w)
    return out


class SearchIndex:
    """A BM25 index over a fixed list of documents (bm25s, ``method="lucene"``).

    Args:
        retriever: A built ``bm25s.BM25``.

    Use :meth:`build` or :meth:`load` to make one.
    """

    def __init__(self, retriever) -> None:
        self._bm25 = retriever
        self._vocab = retriever.vocab_dict
        self.num_docs = int(retriever.scores["num_docs"])

    @classmethod
    def build(
        cls, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> SearchIndex:
        """Index ``texts`` (document ``i`` is ``texts[i]``).

        Args:
            texts: One string per document.
            progress: Called with the number of documents tokenized so far, every 1,000.
        """
        import bm25s

        tokens = []
        for i, text in enumerate(texts):
            tokens.append(tokenize(text) or [""])
            if progress is not None and (i + 1) % 1000 == 0:
                progress(i + 1)
        retriever = bm25s.BM25(method="lucene")
        retriever.index(tokens, show_progress=False)
        return cls(retriever)

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the index to ``directory`` atomically (a temporary folder, then a rename)."""
        directory = Path(directory)
        tmp = directory.with_name(f".{directory.name}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        self._bm25.save(str(tmp), show_progress=False)
        try:
            os.replace(tmp, directory)
        except OSError:  # another process finished the same build first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
            if not directory.exists():
                raise

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> SearchIndex:
        """Read an index written by :meth:`save`."""
        import bm25s

        return cls(bm25s.BM25.load(str(directory), show_progress=False, verbosity=0))

    def search(self, query: str, k: int = 10) -> list[int]:
        """The ``k`` best documents for ``query``, best first.

        Documents that share no term with the query are never returned, so the list may be
        shorter than ``k`` (empty for a query of stopwords or unknown words). Ties are
        broken by document position, so results are deterministic.
        """
        ids = [self._vocab[t] for t in tokenize(query) if t in self._vocab]
        if not ids or k <= 0:
            return []
        scores = self._bm25.get_scores_from_ids(ids)
        k = min(k, self.num_docs)
        kth = np.partition(scores, self.num_docs - k)[self.num_docs - k]
        cand = np.flatnonzero(scores >= max(kth, np.finfo(scores.dtype).tiny))
        # Score descending, then document index ascending: ties at the cut-off are decided
        # by position, so results never depend on the partition algorithm.
        order = np.lexsort((cand, -scores[cand]))
        return [int(i) for i in cand[order[:k]]]
