"""WebShop's purchase reward: upstream's formula from ``web_agent_site/engine/goal.py``.

On "Buy Now" the purchased product, its chosen options and its price are scored against the
goal::

    total = (attribute matches + option matches + [price <= price_upper])
            / (#goal attributes + #goal options + 1)
    total *= r_type

* An attribute matches when any of the product's ``Attributes`` has
  ``token_set_ratio > 85`` with it, or else it is a substring of the lower-cased title,
  bullets or description.
* Each *chosen* option ``(name, value)`` is compared after :func:`normalize_color` (applied
  to every value, as upstream does): a ``size`` must be an exact member of the goal options,
  any other option needs ``token_set_ratio > 85`` with one of them; failing that, the value
  may be a substring of the title, bullets or description. Upstream counts matches over the
  chosen options, so extra options that happen to match can push the total above 1.
* ``r_type`` is 1, 0.5, 0.1 or 0 from query equality, product-category overlap and the
  overlap of the nouns in the two product names (:func:`type_reward`).

Upstream finds nouns with spaCy's ``en_core_web_lg``, a model that no package registry ships.
``noun_parser="heuristic"`` (the default here) keeps the content words of the name instead;
on upstream's published test cases it gives the same title scores within 0.01, but on other
titles it can differ from spaCy, so ``r_type`` (and the score) of a purchase can differ from
upstream's. ``noun_parser="spacy"`` uses the model when it is installed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Upstream's colour vocabulary (``engine/normalize.py``), in its order: the first entry found
#: inside a value is that value's normal form, so "navy blue" becomes "blue".
COLOR_SET: tuple[str, ...] = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black",
    "blue", "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel",
    "champagne", "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee",
    "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant",
    "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray",
    "green", "grey", "heather", "indigo", "ivory", "ivy", "khaki", "lavender", "lemon",
    "leopard", "light", "lilac", "lime", "magenta", "maroon", "mauve", "merlot", "midnight",
    "mint", "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude", "olive",
    "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal",
    "rust", "sand", "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone",
    "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise", "violet", "walnut",
    "wheat", "white", "wine", "yellow",
)  # fmt: skip

#: Option names compared exactly rather than fuzzily (upstream ``EXACT_MATCH_OPTS``).
EXACT_MATCH_OPTIONS = frozenset({"size"})
#: ``token_set_ratio`` must exceed this for a fuzzy match (upstream's constant).
FUZZY_THRESHOLD = 85
#: Noun parsers accepted by :func:`title_nouns`.
NOUN_PARSERS = ("heuristic", "spacy")
#: The spaCy model upstream loads.
SPACY_MODEL = "en_core_web_lg"

# Words the heuristic noun finder drops: function words, and adjectives/participles common in
# product titles that spaCy does not tag NOUN/PROPN ("UL Listed", "Ultra HD").
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


@dataclass(frozen=True)
class TypeReward:
    """Upstream's type factor and what it was computed from.

    Attributes:
        r_type: 1.0, 0.5, 0.1 or 0.0.
        query_match: The two products share the search ``query`` they were collected under.
        category_match: At least two ``product_category`` levels are shared.
        title_score: Fraction of the goal name's nouns found in the purchased name
            (0.2 when the goal name has none).
    """

    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


@dataclass(frozen=True)
class Reward:
    """The reward of one purchase with its parts (upstream's ``verbose`` info).

    Attributes:
        total: The reward; 1.0 is a success.
        r_type: Type factor (see :class:`TypeReward`).
        attribute_matches: Goal attributes found in the product.
        option_matches: Chosen options that match the goal options.
        price_ok: The price is within the goal's limit.
        num_attributes: Number of goal attributes.
        num_options: Number of goal options.
        query_match: See :class:`TypeReward`.
        category_match: See :class:`TypeReward`.
        title_score: See :class:`TypeReward`.
    """

    total: float
    r_type: float
    attribute_matches: int
    option_matches: int
    price_ok: bool
    num_attributes: int
    num_options: int
    query_match: bool
    category_match: bool
    title_score: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for ``info["reward_info"]``)."""
        return dict(self.__dict__)


def normalize_color(value: str) -> str:
    """Return the first :data:`COLOR_SET` entry contained in ``value``, else ``value``.

    Plain substring search, as upstream: ``"steelivy fuchsia"`` becomes ``"fuchsia"`` (it
    comes first in the list), and ``"standard"`` becomes ``"tan"``.

    Example:
        >>> normalize_color("black forest"), normalize_color("webshop")
        ('black', 'webshop')
    """
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def _heuristic_nouns(name: str) -> list[str]:
    tokens = (t.strip(".'") for t in _TOKEN_SPLIT.split(name.lower()))
    return [
        t
        for t in tokens
        if len(t) > 1
        and any(c.isalpha() for c in t)
        and t not in _STOPWORDS
        and t not in _NON_NOUNS
    ]


@functools.lru_cache(maxsize=1)
def _spacy_pipeline() -> Any:
    try:
        import spacy

        return spacy.load(SPACY_MODEL, disable=["parser", "ner", "lemmatizer"])
    except (ImportError, OSError) as exc:
        raise RuntimeError(
            f"noun_parser='spacy' needs spaCy with the {SPACY_MODEL!r} model installed "
            f"({exc}); install it, or use noun_parser='heuristic'"
        ) from exc


@functools.lru_cache(maxsize=65536)
def title_nouns(name: str, parser: str = "heuristic") -> tuple[str, ...]:
    """The lower-cased nouns of a product name, duplicates kept (upstream counts them).

    Args:
        name: A product title.
        parser: ``"heuristic"`` (content words: no stopwords, numbers, single letters or
            common title adjectives) or ``"spacy"`` (tokens spaCy tags NOUN or PROPN).

    Example:
        >>> title_nouns("Saireed UL Listed 2 Prong Power Cord for JBL Bar 3.1")
        ('saireed', 'ul', 'prong', 'power', 'cord', 'jbl', 'bar')
    """
    if parser == "heuristic":
        return tuple(_heuristic_nouns(name))
    if parser == "spacy":
        doc = _spacy_pipeline()(name)
        return tuple(t.text.lower() for t in doc if t.pos_ in ("NOUN", "PROPN"))
    raise ValueError(f"noun_parser={parser!r} is not one of {NOUN_PARSERS}")


def type_reward(
    purchased_name: str,
    purchased_query: str,
    purchased_category: str,
    goal_name: str,
    goal_query: str,
    goal_category: str,
    noun_parser: str = "heuristic",
) -> TypeReward:
    """Upstream's ``get_type_reward``: is the purchase the same kind of product?

    Args:
        purchased_name: Title of the purchased product.
        purchased_query: Its upstream ``query`` field.
        purchased_category: Its ``product_category`` (levels joined by ``›``).
        goal_name: Title of the goal's product.
        goal_query: The goal product's ``query``.
        goal_category: The goal product's ``product_category``.
        noun_parser: See :func:`title_nouns`.

    Returns:
        r_type = 0 if no goal noun is in the purchased name, 0.1 if under 10% are, 0.5 if
        neither query, category (>= 2 shared levels) nor title (> 20% of nouns) agree, else 1.
    """
    query_match = purchased_query == goal_query
    bought = {x.strip() for x in purchased_category.split("›")}
    wanted = {x.strip() for x in goal_category.split("›")}
    category_match = len(bought & wanted) >= 2
    bought_nouns = set(title_nouns(purchased_name, noun_parser))
    wanted_nouns = title_nouns(goal_name, noun_parser)
    if wanted_nouns:
        title_score = len(bought_nouns & set(wanted_nouns)) / len(wanted_nouns)
    else:
        title_score = 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeReward(r_type, query_match, category_match, title_score)


def _fuzzy(a: str, b: str) -> float:
    from rapidfuzz import fuzz

    # rapidfuzz returns 0 for two empty strings where thefuzz returned 0 too; same scale.
    return fuzz.token_set_ratio(a, b)


def _in_text(value: str, title: str, bullets: Sequence[str], description: str) -> bool:
    return (
        value in title.lower() or value in " ".join(bullets).lower() or value in description.lower()
    )


def attribute_matches(
    goal_attributes: Iterable[str],
    product_attributes: Iterable[str],
    title: str,
    bullets: Sequence[str],
    description: str,
) -> int:
    """Upstream's ``get_attribute_reward`` count: goal attributes the product has.

    Each goal attribute counts once: a product attribute with ``token_set_ratio > 85``, or
    else the attribute as a substring of the lower-cased title, bullets or description.
    """
    product_attributes = list(product_attributes)
    n = 0
    for wanted in goal_attributes:
        if any(_fuzzy(have, wanted) > FUZZY_THRESHOLD for have in product_attributes):
            n += 1
        elif _in_text(wanted, title, bullets, description):
            n += 1
    return n


def option_matches(
    goal_options: Iterable[str],
    chosen_options: Mapping[str, str],
    title: str,
    bullets: Sequence[str],
    description: str,
) -> int:
    """Upstream's ``get_option_reward`` count: chosen options that satisfy the goal.

    Args:
        goal_options: The goal's option values (upstream's ``goal_options`` values).
        chosen_options: Option name -> chosen value at purchase time.
        title: Product title (substring fallback).
        bullets: Product bullet points (substring fallback).
        description: Product description (substring fallback).
    """
    wanted = [normalize_color(v) for v in goal_options]
    n = 0
    for name, value in chosen_options.items():
        value = normalize_color(value)
        if name.lower() in EXACT_MATCH_OPTIONS:
            matched = value in wanted
        else:
            matched = any(_fuzzy(w, value) > FUZZY_THRESHOLD for w in wanted)
        if matched or _in_text(value, title, bullets, description):
            n += 1
    return n


def purchase_reward(
    product: Any, goal: Any, chosen_options: Mapping[str, str], noun_parser: str = "heuristic"
) -> Reward:
    """Score a purchase with upstream's formula (see the module docstring).

    Args:
        product: The purchased :class:`~agent_gym.envs.webshop.catalog.Product` (anything
            with ``name, query, product_category, attributes, bullets, description, price``).
        goal: The :class:`~agent_gym.envs.webshop.catalog.Goal` (``name, query,
            product_category, attributes, options, price_upper``).
        chosen_options: Option name -> value chosen on the item page.
        noun_parser: See :func:`title_nouns`.

    Returns:
        The total and its parts.
    """
    t = type_reward(
        product.name,
        product.query,
        product.product_category,
        goal.name,
        goal.query,
        goal.product_category,
        noun_parser,
    )
    n_attr = attribute_matches(
        goal.attributes, product.attributes, product.name, product.bullets, product.description
    )
    n_opt = option_matches(
        goal.options, chosen_options, product.name, product.bullets, product.description
    )
    price_ok = product.price <= goal.price_upper
    denominator = len(goal.attributes) + len(goal.options) + 1
    total = (n_attr + n_opt + int(price_ok)) / denominator * t.r_type
    return Reward(
        total=float(total),
        r_type=t.r_type,
        attribute_matches=n_attr,
        option_matches=n_opt,
        price_ok=bool(price_ok),
        num_attributes=len(goal.attributes),
        num_options=len(goal.options),
        query_match=t.query_match,
        category_match=t.category_match,
        title_score=t.title_score,
    )
