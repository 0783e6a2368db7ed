"""The WebShop catalogue: products and goals, loaded from upstream's data files.

One loader, :func:`load_catalogue`, reads a folder holding upstream's files (the official
``items_shuffle*.json``, ``items_ins_v2*.json``, ``items_human_ins.json`` and optional
``reviews.json``, or the same files written by :mod:`~agent_gym.envs.webshop.generator`) and
does what upstream's ``engine.load_products`` and ``goal.get_human_goals`` do:

* products: first ``num_products`` records, duplicates and ids that are ``"nan"`` or longer
  than 10 characters skipped; option names and values lower-cased with ``/`` shown as ``|``;
  ``pricing`` ``"$a"`` or ``"$a - $b"`` parsed to one or two prices; a product with two prices
  costs a uniform draw between them (seeded by its id here, unseeded upstream);
* goals: every human instruction with at least one attribute; its price limit is the larger
  of two of the first four multiples of 10 above the price (drawn from a fixed seed here,
  unseeded upstream), appended as ``", and price lower than X dollars"``;
* goals shuffled with ``random.Random(233)`` as upstream, then split: goals 0-499 ``test``,
  500-1499 ``eval``, the rest ``train``.

Malformed records raise :class:`CatalogueError` naming the file, the record and the field;
so does a file that is not UTF-8 or not JSON. Upstream accepts more (an ``attributes``
string becomes one attribute per character, ``instruction_options: null`` fails only at the
purchase); here such records stop the load.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_gym.datafiles import DataFileError, read_json

PRODUCT_FILES = ("items_shuffle.json", "items_shuffle_1000.json")
ATTRIBUTE_FILES = ("items_ins_v2.json", "items_ins_v2_1000.json")
GOAL_FILE = "items_human_ins.json"
REVIEW_FILE = "reviews.json"
#: ``data_source`` of records that do not name one (the official files do not).
OFFICIAL_SOURCE = "official:webshop"
#: Upstream's split boundaries over the shuffled goals.
SPLITS: dict[str, tuple[int, int | None]] = {
    "test": (0, 500),
    "eval": (500, 1500),
    "train": (1500, None),
}
_PRICE_STEPS = [10.0 * i for i in range(1, 100)]  # upstream's PRICE_RANGE
_NUMBER = re.compile(r"[^\d.]")


class CatalogueError(DataFileError):
    """A data file is missing, unreadable or not JSON, or a record in it is malformed."""


@dataclass(frozen=True, slots=True)
class Product:
    """One product, with upstream's derived fields.

    Attributes:
        asin: Product id (upper case in the pages, lower case in ``click[...]``).
        name: Title.
        category: Upstream's top-level category.
        query: The search upstream collected it under (lower case).
        product_category: Category path, levels joined by ``›``.
        description: Full description.
        bullets: Bullet points ("features").
        attributes: Upstream ``Attributes`` (from ``items_ins_v2``).
        options: Option name -> values.
        price_tag: Price as shown ("$12.99" or "$10.0 to $13.0").
        price: Price the reward compares with the goal's limit.
        rating: Average review score, or "N.A.".
        reviews: ``{"title", "score", "body"}`` dicts.
        image: First image URL, or None.
        data_source: Where the record came from.
    """

    asin: str
    name: str
    category: str
    query: str
    product_category: str
    description: str
    bullets: tuple[str, ...]
    attributes: tuple[str, ...]
    options: dict[str, tuple[str, ...]]
    price_tag: str
    price: float
    rating: Any
    reviews: tuple[dict[str, Any], ...]
    image: str | None
    data_source: str


@dataclass(frozen=True, slots=True)
class Goal:
    """One shopping goal (upstream's goal dict).

    Attributes:
        index: Position among the shuffled goals (fixes the split).
        asin: The product the instruction was written for.
        instruction: Instruction text shown to the agent, price limit included.
        attributes: Attributes the purchase should have.
        options: Option values the purchase should have.
        price_upper: Price limit (1e6 when there is none).
        name: Title of the goal's product (for the type reward).
        query: Its ``query``.
        category: Its ``category``.
        product_category: Its ``product_category``.
        data_source: Where the goal came from.
    """

    index: int
    asin: str
    instruction: str
    attributes: tuple[str, ...]
    options: tuple[str, ...]
    price_upper: float
    name: str
    query: str
    category: str
    product_category: str
    data_source: str


@dataclass
class Catalogue:
    """Products and shuffled goals of one data folder."""

    products: list[Product]
    goals: list[Goal]
    directory: Path
    skipped_goals: int = 0
    by_asin: dict[str, Product] = field(init=False)

    def __post_init__(self) -> None:
        self.by_asin = {p.asin: p for p in self.products}

    def split(self, name: str) -> Sequence[Goal]:
        """The goals of split ``name`` (``train``, ``eval`` or ``test``).

        Raises:
            ValueError: For an unknown split, or a split with no goals.
        """
        if name not in SPLITS:
            raise ValueError(f"split={name!r} is not one of {list(SPLITS)}")
        lo, hi = SPLITS[name]
        goals = self.goals[lo:hi]
        if not goals:
            raise ValueError(
                f"split {name!r} (goals {lo}-{'end' if hi is None else hi - 1}) is empty: "
                f"{self.directory} has only {len(self.goals)} goals; use more data or "
                f"split='test'"
            )
        return goals


def _err(file: str, where: str, message: str) -> CatalogueError:
    return CatalogueError(f"{file}: {where}: {message}")


def _find(directory: Path, names: Sequence[str], required: bool = True) -> Path | None:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    if required:
        raise CatalogueError(
            f"{directory}: none of {', '.join(names)} found; point data= at a folder with "
            "upstream WebShop's data files (see docs/datasets.md)"
        )
    return None


def _read_json(path: Path) -> Any:
    return read_json(path, error=CatalogueError)


def check_data_folder(directory: str | Path) -> Path:
    """Check, without parsing anything, that ``directory`` holds upstream's data files.

    Envs call this when they are created, so a wrong ``data=`` fails at once with one line,
    not at the first reset inside a worker.

    Raises:
        CatalogueError: The folder is missing, or lacks a product, attribute or goal file.
    """
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise CatalogueError(
            f"data={str(directory)!r} is not a folder; pass data='generated' or the folder "
            "holding upstream WebShop's items_shuffle*.json and items_human_ins.json"
        )
    for names in (PRODUCT_FILES, ATTRIBUTE_FILES, (GOAL_FILE,)):
        _find(path, names)
    return path


def _text(rec: dict, key: str, file: str, where: str, *, optional: bool = False) -> str:
    value = rec.get(key)
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        got = "missing" if key not in rec else f"a {type(value).__name__}, not a string"
        raise _err(file, where, f"field {key!r} is {got}")
    return value


def _parse_pricing(raw: Any, file: str, where: str) -> list[float]:
    if not raw:
        return [100.0]  # upstream's default for products without a price
    if not isinstance(raw, str):
        raise _err(file, where, f"field 'pricing' must be a string like '$12.99', got {raw!r}")
    prices = []
    for part in raw.split("$")[1:]:
        number = _NUMBER.sub("", part)
        try:
            prices.append(float(number))
        except ValueError:
            raise _err(file, where, f"field 'pricing' {raw!r} has no number after '$'") from None
    if not prices:
        raise _err(file, where, f"field 'pricing' {raw!r} has no '$' price")
    return prices[:2]


def _parse_options(raw: Any, file: str, where: str) -> dict[str, tuple[str, ...]]:
    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise _err(file, where, "field 'customization_options' must be an object or null")
    options = {}
    for name, contents in raw.items():
        if contents is None:
            continue
        if not isinstance(contents, list):
            raise _err(file, where, f"customization_options[{name!r}] must be a list")
        values = []
        for k, content in enumerate(contents):
            value = content.get("value") if isinstance(content, dict) else None
            if not isinstance(value, str):
                raise _err(
                    file, where, f"customization_options[{name!r}][{k}] needs a string 'value'"
                )
            values.append(value.strip().replace("/", " | ").lower())
        options[name.lower()] = tuple(values)
    return options


def _parse_reviews(path: Path | None) -> dict[str, tuple[tuple[dict[str, Any], ...], Any]]:
    if path is None:
        return {}
    data = _read_json(path)
    if not isinstance(data, list):
        raise CatalogueError(f"{path.name}: expected a list of {{asin, reviews}} records")
    out = {}
    for i, rec in enumerate(data):
        where = f"record {i}"
        if not isinstance(rec, dict) or not isinstance(rec.get("asin"), str):
            raise _err(path.name, where, "needs a string field 'asin'")
        reviews = []
        for r in rec.get("reviews") or []:
            if not isinstance(r, dict):
                raise _err(path.name, where, "each review must be an object")
            reviews.append(
                {
                    "title": str(r.get("title", "")),
                    "score": r.get("score", r.get("stars", 0)),
                    "body": str(r.get("body", r.get("review", ""))),
                }
            )
        out[rec["asin"]] = (tuple(reviews), rec.get("average_rating", "N.A."))
    return out


def _attributes_of(attributes: dict[str, Any], asin: str, file: str) -> list[str]:
    """The ``attributes`` list of ``asin`` in the attribute file ``file`` ([] when none)."""
    rec = attributes.get(asin)
    if rec is None:
        return []
    where = f"asin {asin!r}"
    if not isinstance(rec, dict):
        raise _err(file, where, f"must be an object with an 'attributes' list, got {rec!r:.60}")
    attrs = rec.get("attributes")
    if attrs is None:
        return []
    if isinstance(attrs, str):
        raise _err(
            file,
            where,
            f"field 'attributes' is a string ({attrs!r:.60}), not a list of strings; write "
            'it as a JSON list such as ["tea tree", "essential oils"]',
        )
    if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
        raise _err(file, where, f"field 'attributes' must be a list of strings, got {attrs!r:.60}")
    return attrs


def _parse_product(
    rec: Any,
    i: int,
    file: str,
    attributes: dict[str, Any],
    attr_file: str,
    reviews: dict[str, tuple[tuple[dict[str, Any], ...], Any]],
) -> Product | None:
    if not isinstance(rec, dict):
        raise _err(file, f"record {i}", "must be an object")
    asin = _text(rec, "asin", file, f"record {i}")
    if asin == "nan" or len(asin) > 10:  # upstream skips these ids
        return None
    where = f"record {i} (asin {asin!r})"
    bullets = rec.get("small_description") or []
    if isinstance(bullets, str):
        bullets = [bullets]
    if not isinstance(bullets, list) or not all(isinstance(b, str) for b in bullets):
        raise _err(file, where, "field 'small_description' must be a string or list of strings")
    prices = _parse_pricing(rec.get("pricing"), file, where)
    if len(prices) == 1:
        price, tag = prices[0], f"${prices[0]}"
    else:
        price = random.Random(f"price:{asin}").uniform(prices[0], prices[1])
        tag = f"${prices[0]} to ${prices[1]}"
    attrs = _attributes_of(attributes, asin, attr_file) or ["DUMMY_ATTR"]  # upstream's filler
    item_reviews, rating = reviews.get(asin, ((), "N.A."))
    images = rec.get("images") or []
    return Product(
        asin=asin,
        name=_text(rec, "name", file, where),
        category=_text(rec, "category", file, where),
        query=_text(rec, "query", file, where).lower().strip(),
        product_category=_text(rec, "product_category", file, where),
        description=_text(rec, "full_description", file, where, optional=True),
        bullets=tuple(bullets),
        attributes=tuple(attrs),
        options=_parse_options(rec.get("customization_options"), file, where),
        price_tag=tag,
        price=price,
        rating=rating,
        reviews=item_reviews,
        image=images[0] if images and isinstance(images[0], str) else None,
        data_source=str(rec.get("data_source", OFFICIAL_SOURCE)),
    )


def _price_limit(price: float, rng: random.Random) -> tuple[float, str]:
    first = int(price // 10) + 1  # the first multiple of 10 strictly above the price
    steps = [10.0 * k for k in range(max(first, 1), min(first + 4, 100))]
    if len(steps) < 2:
        return 1_000_000.0, ""
    upper = max(rng.sample(steps, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def _goals_of(
    product: Product, records: Any, file: str, rng: random.Random
) -> tuple[list[dict[str, Any]], int]:
    if not isinstance(records, list):
        raise _err(file, f"asin {product.asin!r}", "must map to a list of instructions")
    goals, skipped = [], 0
    for j, rec in enumerate(records):
        where = f"asin {product.asin!r}, instruction {j}"
        if not isinstance(rec, dict):
            raise _err(file, where, "must be an object")
        attrs = rec.get("instruction_attributes")
        options = rec.get("instruction_options")
        if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
            raise _err(
                file,
                where,
                f"field 'instruction_attributes' must be a list of strings, got {attrs!r:.60}",
            )
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            got = "missing" if "instruction_options" not in rec else f"{options!r:.60}"
            raise _err(
                file,
                where,
                f"field 'instruction_options' must be a list of strings ([] for none), got {got}",
            )
        if not attrs:  # upstream skips goals without attributes
            skipped += 1
            continue
        upper, price_text = _price_limit(product.price, rng)
        goals.append(
            dict(
                asin=product.asin,
                instruction=_text(rec, "instruction", file, where).strip(".") + price_text,
                attributes=tuple(attrs),
                options=tuple(options),
                price_upper=upper,
                name=product.name,
                query=product.query,
                category=product.category,
                product_category=product.product_category,
                data_source=str(rec.get("data_source", OFFICIAL_SOURCE)),
            )
        )
    return goals, skipped


def load_catalogue(
    directory: str | Path,
    num_products: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Catalogue:
    """Load products and goals from a folder of upstream WebShop data files.

    Args:
        directory: Folder with ``items_shuffle*.json``, ``items_ins_v2*.json``,
            ``items_human_ins.json`` and optionally ``reviews.json``.
        num_products: Keep only the first this many product records (upstream's
            ``num_products``); None keeps all.
        progress: Called with a count of products parsed, for progress bars.

    Returns:
        The catalogue, its goals shuffled as upstream.

    Raises:
        CatalogueError: A file is missing or not JSON, or a record lacks a field or has the
            wrong type; the message names the file, the record and the field.
    """
    directory = check_data_folder(directory)
    product_path = _find(directory, PRODUCT_FILES)
    attr_path = _find(directory, ATTRIBUTE_FILES)
    goal_path = _find(directory, (GOAL_FILE,))
    records = _read_json(product_path)
    if not isinstance(records, list):
        raise CatalogueError(f"{product_path.name}: expected a list of product records")
    attributes = _read_json(attr_path)
    if not isinstance(attributes, dict):
        raise CatalogueError(f"{attr_path.name}: expected an object mapping asin -> record")
    reviews = _parse_reviews(_find(directory, (REVIEW_FILE,), required=False))
    if num_products is not None:
        records = records[:num_products]
    products, seen = [], set()
    for i, rec in enumerate(records):
        product = _parse_product(rec, i, product_path.name, attributes, attr_path.name, reviews)
        if product is not None and product.asin not in seen:
            seen.add(product.asin)
            products.append(product)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(1000)
    human = _read_json(goal_path)
    if not isinstance(human, dict):
        raise CatalogueError(f"{goal_path.name}: expected an object mapping asin -> instructions")
    found: list[dict[str, Any]] = []
    skipped = 0
    rng = random.Random("webshop-price-limits")  # upstream draws these unseeded
    for product in products:
        if product.asin in human:
            goals, n = _goals_of(product, human[product.asin], goal_path.name, rng)
            found.extend(goals)
            skipped += n
    random.Random(233).shuffle(found)  # upstream: random.seed(233); random.shuffle(goals)
    goals = [Goal(index=i, **g) for i, g in enumerate(found)]
    return Catalogue(products, goals, directory, skipped_goals=skipped)
