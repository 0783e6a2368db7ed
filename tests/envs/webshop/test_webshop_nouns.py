"""Title nouns for the type reward: spaCy (upstream's), the heuristic, and how one is chosen."""

from __future__ import annotations

import pytest

from agent_gym.envs.webshop import nouns
from agent_gym.envs.webshop.nouns import (
    NounParserError,
    heuristic_nouns,
    installed_spacy_model,
    resolve_noun_parser,
    title_nouns,
)


def test_heuristic_drops_numbers_stopwords_and_title_adjectives():
    assert heuristic_nouns("Ultra HD 4K TV for the Living Room, 55 Inch") == (
        "hd", "4k", "tv", "living", "room", "inch",
    )  # fmt: skip
    assert title_nouns("Ultra HD 4K TV", "heuristic") == ("hd", "4k", "tv")


@pytest.mark.skipif(installed_spacy_model() is None, reason="needs agent-gym[webshop-spacy]")
def test_spacy_keeps_noun_and_propn_tokens_lower_cased():
    # en_core_web_sm 3.8.0 tags Ultra, HD, TV, Living, Room and Inch NOUN/PROPN; "4K" is split
    # into "4" (NUM) and "K" (PROPN). The heuristic differs on 'ultra' and '4k'.
    assert title_nouns("Ultra HD 4K TV for the Living Room, 55 Inch", "spacy") == (
        "ultra", "hd", "k", "tv", "living", "room", "inch",
    )  # fmt: skip
    assert resolve_noun_parser("auto") == f"spacy:{installed_spacy_model()}"


def test_without_a_model_auto_falls_back_and_spacy_is_an_error(monkeypatch):
    monkeypatch.setattr(nouns, "SPACY_MODELS", ("agent_gym_no_such_model",))
    assert installed_spacy_model() is None
    nouns._warn_fallback.cache_clear()
    with pytest.warns(UserWarning, match="no spaCy model is installed"):
        assert resolve_noun_parser("auto") == "heuristic"
    with pytest.raises(NounParserError) as e:
        resolve_noun_parser("spacy")
    assert "pip install 'agent-gym[webshop-spacy]'" in str(e.value) and "\n" not in str(e.value)


def test_unknown_parser_is_an_error():
    with pytest.raises(NounParserError, match="noun_parser='nltk' is not one of"):
        title_nouns("x", "nltk")
