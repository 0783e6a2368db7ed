"""Build, cache and share a catalogue with its search index.

Generated catalogues are written once, in upstream's file format, under
``$AGENT_GYM_HOME/webshop/generated-<params_key>/`` and read back through the official
loader; the BM25 index is saved next to them. For official data the index is cached under
``webshop/official-<params_key>/``, keyed by the folder, the files' sizes and mtimes and
``num_products``. Every file is written atomically, so concurrent builders never see half a
file. Within a process, envs with the same data share one :class:`Store`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_gym.envs.webshop.catalog import (
    ATTRIBUTE_FILES,
    GOAL_FILE,
    PRODUCT_FILES,
    REVIEW_FILE,
    Catalogue,
    load_catalogue,
)
from agent_gym.envs.webshop.generator import GENERATOR_VERSION, generate
from agent_gym.envs.webshop.search import SearchIndex
from agent_gym.paths import atomic_write_text, cache_dir, params_key

#: Default size of the generated catalogue.
DEFAULT_NUM_PRODUCTS = 1000

_STORES: dict[str, Store] = {}
_LOCK = threading.Lock()


@dataclass
class Store:
    """A loaded catalogue and its index."""

    catalogue: Catalogue
    index: SearchIndex
    directory: Path


@contextmanager
def _bar(total: int, desc: str, enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield lambda n: None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, unit="products", leave=False) as bar:
        yield bar.update


def _generated_dir(num_products: int, goals_per_product: int, seed: int) -> Path:
    key = params_key(
        {
            "version": GENERATOR_VERSION,
            "num_products": num_products,
            "goals_per_product": goals_per_product,
            "seed": seed,
        }
    )
    return cache_dir("webshop", f"generated-{key}")


def _write_generated(directory: Path, num_products: int, goals: int, seed: int, bar: bool) -> None:
    names = ("items_shuffle.json", "items_ins_v2.json", GOAL_FILE, REVIEW_FILE)
    if all((directory / n).is_file() for n in names):
        return
    with _bar(num_products, "webshop: generating catalogue", bar) as update:
        files = generate(num_products, goals, seed, progress=update)
    # The product file goes last: the loader looks for it first, so a reader never finds
    # products without their attributes and goals.
    for name in (*names[1:], names[0]):
        atomic_write_text(directory / name, json.dumps(files[name], separators=(",", ":")))


def _official_key(directory: Path, num_products: int | None) -> str:
    stats = {}
    for name in (*PRODUCT_FILES, *ATTRIBUTE_FILES, GOAL_FILE, REVIEW_FILE):
        path = directory / name
        if path.is_file():
            st = path.stat()
            stats[name] = [st.st_size, st.st_mtime_ns]
    return params_key({"dir": str(directory.resolve()), "files": stats, "n": num_products})


def get_store(
    data: str = "generated",
    num_products: int | None = None,
    goals_per_product: int = 6,
    seed: int = 0,
    progress: bool = False,
) -> Store:
    """Return the (cached, shared) catalogue and index for these parameters.

    Args:
        data: ``"generated"`` or a folder of upstream WebShop data files.
        num_products: Catalogue size: default 1,000 for generated data, all records for
            official data.
        goals_per_product: Goals per product (generated data only).
        seed: Generator seed (generated data only).
        progress: Show progress bars while building.

    Raises:
        CatalogueError: The official files are missing or malformed.
    """
    if data == "generated":
        n = DEFAULT_NUM_PRODUCTS if num_products is None else int(num_products)
        directory = _generated_dir(n, goals_per_product, seed)
        key = f"generated:{directory}"
        index_dir = directory / "bm25-index"
    else:
        directory = Path(data).expanduser()
        n = num_products
        key = f"official:{_official_key(directory, n) if directory.is_dir() else directory}"
        index_dir = cache_dir("webshop", f"official-{key.split(':', 1)[1]}") / "bm25-index"
    with _LOCK:
        if key in _STORES:
            return _STORES[key]
        if data == "generated":
            _write_generated(directory, n, goals_per_product, seed, progress)
        with _bar(n or 0, "webshop: loading catalogue", progress and bool(n)) as update:
            catalogue = load_catalogue(directory, n, progress=update)
        index = None
        if (index_dir / "asins.json").is_file():
            index = SearchIndex.load(index_dir)
            if index.asins != [p.asin for p in catalogue.products]:
                index = None  # stale: rebuild
        if index is None:
            index = SearchIndex.build(catalogue.products, show_progress=progress)
            index.save(index_dir)
        store = _STORES[key] = Store(catalogue, index, directory)
        return store
