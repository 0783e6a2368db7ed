"""Answer scoring exactly as HotpotQA's official ``hotpot_evaluate_v1.py`` does it.

The official script normalises both strings with ``normalize_answer`` (lower-case, drop
``string.punctuation``, replace the articles a/an/the by a space, collapse whitespace), then:

* EM: the normalised strings are equal.
* F1: token-level F1 over the normalised tokens (multiset intersection), except that when
  either normalised string is ``yes``, ``no`` or ``noanswer`` and the two differ, precision,
  recall and F1 are all 0 (a yes/no question gets no partial credit).

Two consequences of following the script literally, kept on purpose: two empty strings are an
exact match (EM 1) but have F1 0 (no common tokens), and punctuation outside ASCII (for example
``"–"`` or ``"¿"``) is not removed.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    """Normalise an answer the way ``hotpot_evaluate_v1.normalize_answer`` does.

    Example:
        >>> normalize_answer("The  Eiffel-Tower!")
        'eiffeltower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_precision_recall(prediction: str, gold: str) -> tuple[float, float, float]:
    """Token-level ``(f1, precision, recall)`` with the official yes/no/noanswer rule.

    Example:
        >>> f1_precision_recall("the city of Paris", "Paris")  # tokens: city, of, paris
        (0.5, 0.3333333333333333, 1.0)
        >>> f1_precision_recall("yes", "yes indeed")
        (0.0, 0.0, 0.0)
    """
    pred = normalize_answer(prediction)
    ref = normalize_answer(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0.0, 0.0, 0.0
    pred_tokens = pred.split()
    ref_tokens = ref.split()
    same = sum((Counter(pred_tokens) & Counter(ref_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred_tokens)
    recall = same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def score_answer(prediction: str, golds: str | Iterable[str]) -> tuple[float, float]:
    """``(em, f1)`` of a prediction against one gold answer or the best of several aliases.

    Args:
        prediction: The agent's answer text.
        golds: The gold answer, or several accepted aliases (the maximum of each metric over
            them is taken, as SQuAD-style evaluations do with multiple references).

    Returns:
        ``(em, f1)``, each in ``[0, 1]``; ``(0.0, 0.0)`` when ``golds`` is empty.
    """
    if isinstance(golds, str):
        golds = (golds,)
    em = f1 = 0.0
    for gold in golds:
        em = max(em, exact_match(prediction, gold))
        f1 = max(f1, f1_precision_recall(prediction, gold)[0])
    return em, f1
