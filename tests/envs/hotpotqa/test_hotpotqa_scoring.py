"""Official HotpotQA answer scoring, checked on hand-computed cases."""

from __future__ import annotations

import pytest

from agent_gym.envs.hotpotqa.scoring import (
    exact_match,
    f1_precision_recall,
    normalize_answer,
    score_answer,
)

# (prediction, gold, EM, F1), each worked out by hand from hotpot_evaluate_v1.py's rules.
CASES = [
    ("Paris", "paris", 1, 1.0),
    ("The Paris", "Paris", 1, 1.0),  # article removed
    ("An apple", "apple", 1, 1.0),
    ("a cat", "the cat", 1, 1.0),
    ("Paris!", "Paris", 1, 1.0),  # ASCII punctuation removed
    ("Washington, D.C.", "Washington D.C.", 1, 1.0),  # both -> "washington dc"
    ("U.S.A.", "USA", 1, 1.0),
    ("1,000", "1000", 1, 1.0),
    ("theatre", "atre", 0, 0.0),  # "the" inside a word is not an article
    ("New York City", "New York", 0, 0.8),  # P 2/3, R 1 -> 0.8
    ("Paris Paris", "Paris", 0, 2 / 3),  # multiset overlap 1: P 1/2, R 1
    ("yes", "Yes.", 1, 1.0),
    ("yes", "no", 0, 0.0),
    ("yes it is", "yes", 0, 0.0),  # special rule: gold is yes, strings differ
    ("no", "no way", 0, 0.0),  # special rule: prediction is no, strings differ
    ("no answer", "noanswer", 0, 0.0),  # gold normalises to "noanswer"
    ("São Tomé", "são tomé", 1, 1.0),  # Unicode lower-casing
    ("ÉCOLE", "école", 1, 1.0),
    ("Zürich", "Zurich", 0, 0.0),  # no accent folding
    ("naïve café—bar", "naïve café bar", 0, 0.4),  # the em dash is not ASCII punctuation
    ("", "", 1, 0.0),  # the script's own quirk: EM 1 but F1 0 (no tokens)
    ("the the", "", 1, 0.0),
]


@pytest.mark.parametrize(("prediction", "gold", "em", "f1"), CASES)
def test_official_cases(prediction: str, gold: str, em: int, f1: float) -> None:
    assert exact_match(prediction, gold) == em
    assert f1_precision_recall(prediction, gold)[0] == pytest.approx(f1)
    assert score_answer(prediction, gold) == (em, pytest.approx(f1))


def test_normalize_steps_in_official_order() -> None:
    # Punctuation goes before articles: "the-end" -> "theend" keeps no article to remove.
    assert normalize_answer("The-End") == "theend"
    assert normalize_answer("  A\tB \n the  C ") == "b c"


def test_precision_and_recall() -> None:
    # "the" goes, leaving 3 tokens of which 1 matches: P 1/3, R 1, F1 2PR/(P+R) = 1/2.
    assert f1_precision_recall("the city of Paris", "Paris") == (0.5, 1 / 3, 1.0)


def test_aliases_take_the_best_of_each_metric() -> None:
    assert score_answer("New York", ["NYC", "New York City"]) == (0.0, pytest.approx(0.8))
    assert score_answer("NYC", ["NYC", "New York City"]) == (1.0, 1.0)
    assert score_answer("x", []) == (0.0, 0.0)
