"""A seeded generator of WebShop-format catalogues and shopping goals (invented data).

:func:`generate` returns the four upstream data files as JSON objects, so the generated
catalogue goes through the same loader as the official files
(:func:`agent_gym.envs.webshop.catalog.load_catalogue`):

* ``items_shuffle.json``: product records (``asin, name, full_description,
  small_description, pricing, customization_options, category, query, product_category,
  images``);
* ``items_ins_v2.json``: ``asin -> {attributes, instruction, instruction_attributes}``;
* ``items_human_ins.json``: ``asin -> [{instruction, instruction_attributes,
  instruction_options}, ...]``, the goals (the loader appends the price limit, as upstream);
* ``reviews.json``: ``[{asin, reviews: [{title, score, body}], average_rating}]``.

Every record carries ``"data_source": "generated:webshop-catalogue"``. Products, brands and
reviews are invented from :mod:`~agent_gym.envs.webshop.vocabulary`; nothing is Amazon data.
The output depends only on the arguments (no use of Python's salted ``hash``).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

from agent_gym.envs.webshop.vocabulary import (
    ATTRIBUTE_PHRASES,
    BRAND_SYLLABLES,
    FILLER,
    OPENINGS,
    OPTION_PHRASES,
    PRODUCT_TYPES,
    REVIEW_TITLES,
    ProductType,
)

#: ``data_source`` of every generated record.
DATA_SOURCE = "generated:webshop-catalogue"
#: Bumped whenever the generator's output changes, so cached catalogues are rebuilt.
GENERATOR_VERSION = 1

_ASIN_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _asin(seed: int, index: int, taken: set[str]) -> str:
    """A 10-character, Amazon-looking id ("B0" + 8 characters) from a hash of seed and index."""
    salt = 0
    while True:
        digest = hashlib.sha256(f"webshop:{seed}:{index}:{salt}".encode()).digest()
        asin = "B0" + "".join(_ASIN_CHARS[b % 36] for b in digest[:8])
        if asin not in taken:
            taken.add(asin)
            return asin
        salt += 1


def _brand(rng: random.Random) -> str:
    return "".join(rng.choice(BRAND_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def _title(rng: random.Random, brand: str, ptype: ProductType, attrs: list[str]) -> str:
    shown = [a.title() for a in attrs[: rng.randint(0, 2)]]
    parts = [brand, *shown, ptype.noun]
    title = " ".join(parts)
    if rng.random() < 0.7:
        title += (", " if rng.random() < 0.5 else " - ") + rng.choice(ptype.extras)
    return title


def _bullets(rng: random.Random, ptype: ProductType, attrs: list[str]) -> list[str]:
    noun = ptype.noun.lower()
    forms: tuple[Callable[[str], str], ...] = (
        lambda a: f"{a.upper()}: this {noun} was built around {a}, tested by our team.",
        lambda a: f"{a.upper()} - the feature our customers mention most often.",
        lambda a: f"Designed with {a} in mind, so you get more from your {noun}.",
    )
    return [rng.choice(forms)(a) for a in attrs]


def _description(rng: random.Random, brand: str, ptype: ProductType, attrs: list[str]) -> str:
    noun = ptype.noun.lower()
    listed = ", ".join(attrs[:-1]) + (" and " if len(attrs) > 1 else "") + attrs[-1]
    fillers = rng.sample(FILLER, 2)
    return f"Meet the {brand} {noun}. Key features: {listed}. " + " ".join(
        f.format(noun=noun) for f in fillers
    )


def _pricing(rng: random.Random, ptype: ProductType) -> str:
    low, high = ptype.price
    price = round(rng.uniform(low, high)) + 0.99
    if rng.random() < 0.2:
        return f"${price:.2f} - ${price * 1.3:.2f}"
    return f"${price:.2f}"


def _options(rng: random.Random, ptype: ProductType) -> dict[str, list[dict[str, Any]]]:
    if rng.random() < 0.2:  # about one product in five has nothing to choose
        return {}
    options = {}
    for name, values in ptype.options:
        k = rng.randint(min(2, len(values)), min(5, len(values)))
        chosen = sorted(rng.sample(range(len(values)), k))
        options[name] = [{"value": values[i], "image": None} for i in chosen]
    return options


def _instruction(
    rng: random.Random, ptype: ProductType, attrs: list[str], options: list[tuple[str, str]]
) -> str:
    # Half the instructions name the product with the catalogue's words, half paraphrase.
    phrase = ptype.phrases[0] if rng.random() < 0.5 else rng.choice(ptype.phrases[1:])
    predicates = []
    for a in attrs:
        forms = ATTRIBUTE_PHRASES[a]
        predicates.append(forms[0] if rng.random() < 0.5 else rng.choice(forms[1:]))
    text = f"{rng.choice(OPENINGS)} {phrase} that " + ", and ".join(predicates)
    for name, value in options:
        forms = OPTION_PHRASES.get(name, ("with {v}",))
        text += ", " + rng.choice(forms).format(v=value)
    return text


def _reviews(rng: random.Random, ptype: ProductType, attrs: list[str]) -> list[dict[str, Any]]:
    out = []
    for _ in range(rng.choice((0, 1, 2, 3))):
        title, score = rng.choice(REVIEW_TITLES)
        if score >= 4:
            body = (
                f"I like that it is {rng.choice(attrs)}. Would buy this {ptype.noun.lower()} again."
            )
        else:
            body = f"It says {rng.choice(attrs)} but it did not work out for me."
        out.append({"title": title, "score": score, "body": body})
    return out


def generate(
    num_products: int = 1000,
    goals_per_product: int = 6,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Build a catalogue and goals in upstream's file formats.

    Args:
        num_products: Number of products (1 to a few hundred thousand).
        goals_per_product: Shopping goals written per product (``items_human_ins.json``).
        seed: Seed of the generator; the same arguments always give the same files.
        progress: Called with the number of products finished since the last call.

    Returns:
        File name -> JSON object, for the four files listed in the module docstring.

    Raises:
        ValueError: If ``num_products`` or ``goals_per_product`` is not positive.
    """
    if num_products < 1 or goals_per_product < 1:
        raise ValueError(
            f"num_products={num_products} and goals_per_product={goals_per_product} must both "
            "be at least 1"
        )
    rng = random.Random(f"webshop-catalogue:{seed}")
    brands = sorted({_brand(rng) for _ in range(max(20, num_products // 5))})
    products, ins_v2, human, reviews = [], {}, {}, []
    taken: set[str] = set()
    for i in range(num_products):
        ptype = PRODUCT_TYPES[rng.randrange(len(PRODUCT_TYPES))]
        asin = _asin(seed, i, taken)
        brand = rng.choice(brands)
        attrs = rng.sample(ptype.attributes, rng.randint(3, min(5, len(ptype.attributes))))
        options = _options(rng, ptype)
        name = _title(rng, brand, ptype, attrs)
        products.append(
            {
                "asin": asin,
                "name": name,
                "full_description": _description(rng, brand, ptype, attrs),
                "small_description": _bullets(rng, ptype, attrs),
                "pricing": _pricing(rng, ptype),
                "customization_options": options,
                "category": ptype.category,
                "query": ptype.query,
                "product_category": ptype.path,
                "images": [],
                "data_source": DATA_SOURCE,
            }
        )
        ins_v2[asin] = {
            "attributes": attrs,
            "instruction": _instruction(rng, ptype, attrs[:2], []),
            "instruction_attributes": attrs[:2],
            "data_source": DATA_SOURCE,
        }
        goals = []
        for _ in range(goals_per_product):
            wanted = rng.sample(attrs, rng.randint(1, min(3, len(attrs))))
            picked = [
                (name_, rng.choice(values)["value"])
                for name_, values in options.items()
                if rng.random() < 0.8
            ]
            goals.append(
                {
                    "asin": asin,
                    "instruction": _instruction(rng, ptype, wanted, picked),
                    "instruction_attributes": wanted,
                    "instruction_options": [v for _, v in picked],
                    "data_source": DATA_SOURCE,
                }
            )
        human[asin] = goals
        item_reviews = _reviews(rng, ptype, attrs)
        mean = sum(r["score"] for r in item_reviews) / len(item_reviews) if item_reviews else None
        reviews.append(
            {
                "asin": asin,
                "reviews": item_reviews,
                "average_rating": round(mean, 1) if mean is not None else "N.A.",
            }
        )
        if progress is not None and (i + 1) % 1000 == 0:
            progress(1000)
    if progress is not None and num_products % 1000:
        progress(num_products % 1000)
    return {
        "items_shuffle.json": products,
        "items_ins_v2.json": ins_v2,
        "items_human_ins.json": human,
        "reviews.json": reviews,
    }
