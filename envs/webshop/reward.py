"""WebShop's purchase reward: upstream's ``get_reward`` (``web_agent_site/engine/goal.py``).

On "Buy Now" the purchased product, its chosen options and its price are scored against the
goal::

    total = (attribute matches + option matches + [price <= price_upper])
            / (#goal attributes + #goal options + 1)
    total *= r_type

``reward="upstream"`` (the default) is upstream's current rule:

* An attribute matches when one of the product's ``Attributes`` scores above 85 with it on
  :func:`fuzzy_score` (thefuzz's ``token_set_ratio``), or else it is a substring of the
  lower-cased title, bullets or description.
* Each *goal* option counts once, when any chosen option value scores above 85 with it; both
  sides pass through :func:`normalize_color` first. There is no substring fallback and no
  exact rule for sizes, so "pack of 3" matches a goal's "pack of 6" (score 89).
* ``r_type`` is 1, 0.5, 0.1 or 0 from query equality, product-category overlap and the
  overlap of the nouns in the two titles (:func:`type_reward`, nouns from
  :mod:`~agent_gym.envs.webshop.nouns`).

``reward="strict"`` (this project's option, not upstream's) changes the option part only:

* a chosen ``size`` counts only when it equals a goal option (lower-cased, after
  :func:`normalize_color`): "pack of 3" no longer passes for "pack of 6", nor "x-large" for
  "large";
* every other chosen option needs a fuzzy score above 85, as upstream;
* each goal option is paired with at most one chosen option and each chosen option with at
  most one goal option (the largest such pairing is counted), so a strict reward is never
  above the upstream one.

The attribute, price and type parts are the same in both modes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_gym.envs.webshop.nouns import title_nouns

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

#: Reward modes accepted by :func:`purchase_reward` and the env's ``reward=`` keyword.
REWARD_MODES = ("upstream", "strict")
#: Option names ``reward="strict"`` compares exactly rather than fuzzily.
EXACT_MATCH_OPTIONS = frozenset({"size"})
#: A fuzzy score must exceed this to match (upstream's constant).
FUZZY_THRESHOLD = 85

# thefuzz (since 0.20 a wrapper of rapidfuzz) deletes the code points 128-255 before scoring
# when force_ascii is on, its default; other non-ASCII letters are kept.
_LATIN1_DROP = {i: None for i in range(128, 256)}


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
        option_matches: Goal options the chosen options satisfy.
        price_ok: The price is within the goal's limit.
        num_attributes: Number of goal attributes.
        num_options: Number of goal options.
        query_match: See :class:`TypeReward`.
        category_match: See :class:`TypeReward`.
        title_score: See :class:`TypeReward`.
        mode: ``"upstream"`` or ``"strict"``.
        noun_parser: ``"heuristic"`` or ``"spacy:<model>"``.
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
    mode: str = "upstream"
    noun_parser: str = "heuristic"

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (for ``info["reward_info"]``)."""
        return dict(self.__dict__)


def normalize_color(value: str) -> str:
    """Return the first :data:`COLOR_SET` entry contained in ``value``, else ``value``.

    Plain, case-sensitive substring search, as upstream: ``"steelivy fuchsia"`` becomes
    ``"fuchsia"`` (it comes first in the list), ``"standard"`` becomes ``"tan"``, and
    ``"Red"`` stays ``"Red"``.

    Example:
        >>> normalize_color("black forest"), normalize_color("webshop")
        ('black', 'webshop')
    """
    for color in COLOR_SET:
        if color in value:
            return color
    return value


def _prepare(text: str) -> str:
    from rapidfuzz.utils import default_process

    return default_process(text.translate(_LATIN1_DROP))


def fuzzy_score(a: str, b: str) -> int:
    """Upstream's fuzzy score: thefuzz's ``token_set_ratio(a, b)``, computed with rapidfuzz.

    thefuzz first deletes the characters U+0080-U+00FF, then applies rapidfuzz's
    ``default_process`` (lower case, every non-alphanumeric character a space, trimmed),
    scores with rapidfuzz's ``token_set_ratio`` and rounds to an integer. Upstream pins
    thefuzz 0.19.0, which scored with difflib instead of rapidfuzz; see docs/datasets.md.

    Example:
        >>> fuzzy_score("Machine Wash", "machine wash"), fuzzy_score("pack of 3", "pack of 6")
        (100, 89)
    """
    from rapidfuzz import fuzz

    return int(round(fuzz.token_set_ratio(_prepare(a), _prepare(b))))


def type_reward(
    purchased_name: str,
    purchased_query: str,
    purchased_category: str,
    goal_name: str,
    goal_query: str,
    goal_category: str,
    noun_parser: str = "auto",
) -> TypeReward:
    """Upstream's ``get_type_reward``: is the purchase the same kind of product?

    Args:
        purchased_name: Title of the purchased product.
        purchased_query: Its upstream ``query`` field.
        purchased_category: Its ``product_category`` (levels joined by ``›``).
        goal_name: Title of the goal's product.
        goal_query: The goal product's ``query``.
        goal_category: The goal product's ``product_category``.
        noun_parser: See :func:`~agent_gym.envs.webshop.nouns.title_nouns`.

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

    Each goal attribute counts once: a product attribute with :func:`fuzzy_score` above 85,
    or else the attribute as a substring of the lower-cased title, bullets or description.
    """
    product_attributes = list(product_attributes)
    n = 0
    for wanted in goal_attributes:
        if any(fuzzy_score(have, wanted) > FUZZY_THRESHOLD for have in product_attributes):
            n += 1
        elif _in_text(wanted, title, bullets, description):
            n += 1
    return n


def option_matches(goal_options: Iterable[str], chosen_options: Mapping[str, str]) -> int:
    """Upstream's ``get_option_reward`` count: goal options some chosen option satisfies.

    Args:
        goal_options: The goal's option values.
        chosen_options: Option name -> value chosen on the item page (names are ignored).

    Example:
        >>> option_matches(["ruby red", "pack of 6"], {"color": "lavender", "size": "pack of 3"})
        1
    """
    chosen = [normalize_color(v) for v in chosen_options.values()]
    return sum(
        any(fuzzy_score(value, wanted) > FUZZY_THRESHOLD for value in chosen)
        for wanted in (normalize_color(g) for g in goal_options)
    )


def _strict_match(name: str, value: str, wanted: str) -> bool:
    if name.lower() in EXACT_MATCH_OPTIONS:
        return normalize_color(value.lower()) == normalize_color(wanted.lower())
    return fuzzy_score(normalize_color(value), normalize_color(wanted)) > FUZZY_THRESHOLD


def strict_option_matches(goal_options: Sequence[str], chosen_options: Mapping[str, str]) -> int:
    """The ``reward="strict"`` count: the largest one-to-one pairing of goal and chosen options.

    A chosen ``size`` pairs with a goal option only when they are equal (lower-cased, after
    :func:`normalize_color`); any other chosen option needs :func:`fuzzy_score` above 85.

    Example:
        >>> strict_option_matches(["ruby red", "pack of 6"], {"color": "lavender", "size": "pack of 3"})
        0
    """
    goals = list(goal_options)
    edges = [
        [j for j, wanted in enumerate(goals) if _strict_match(name, value, wanted)]
        for name, value in chosen_options.items()
    ]
    owner: dict[int, int] = {}  # goal option -> chosen option paired with it

    def pair(i: int, seen: set[int]) -> bool:  # augmenting path (Kuhn's algorithm)
        for j in edges[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or pair(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(pair(i, set()) for i in range(len(edges)))


def purchase_reward(
    product: Any,
    goal: Any,
    chosen_options: Mapping[str, str],
    noun_parser: str = "auto",
    mode: str = "upstream",
) -> Reward:
    """Score a purchase (see the module docstring for the two modes).

    Args:
        product: The purchased :class:`~agent_gym.envs.webshop.catalog.Product` (anything
            with ``name, query, product_category, attributes, bullets, description, price``).
        goal: The :class:`~agent_gym.envs.webshop.catalog.Goal` (``name, query,
            product_category, attributes, options, price_upper``).
        chosen_options: Option name -> value chosen on the item page.
        noun_parser: See :func:`~agent_gym.envs.webshop.nouns.title_nouns`.
        mode: ``"upstream"`` or ``"strict"``.

    Returns:
        The total and its parts.
    """
    if mode not in REWARD_MODES:
        raise ValueError(f"reward={mode!r} is not one of {REWARD_MODES}")
    if not noun_parser.startswith("spacy:"):
        from agent_gym.envs.webshop.nouns import resolve_noun_parser

        noun_parser = resolve_noun_parser(noun_parser)
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
    if mode == "strict":
        n_opt = strict_option_matches(goal.options, chosen_options)
    else:
        n_opt = option_matches(goal.options, chosen_options)
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
        mode=mode,
        noun_parser=noun_parser,
    )
