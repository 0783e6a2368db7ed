"""The offline HotpotQA-*style* question set, generated from ``countryinfo`` facts.

This is not HotpotQA: the questions are templated, the "Wikipedia" paragraphs are written from
the facts in :mod:`agent_gym.envs.hotpotqa.countries`, and ``info["data_source"]`` says
``generated:countryinfo``. It follows HotpotQA's two question types:

* **bridge**: the answer is a fact about an entity the question only describes, so the agent
  must find that entity first (``"What is the capital of the country that borders Ethiopia
  and uses the currency code KES?"`` -> Kenya's page -> ``Nairobi``).
* **comparison**: two named entities are compared (``"Which country has the larger area,
  Chile or Peru?"``), including yes/no questions (``"Do Chad and Niger use the same
  currency?"``), which the official yes/no F1 rule applies to.

Every clue is checked to pick out exactly one entity (one-sided border claims count as
borders for this check), numeric comparisons need a 10% margin so that the figures' age cannot
flip the answer, and latitude comparisons a 1 degree margin.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from itertools import combinations
from pathlib import Path

from agent_gym.datafiles import iter_jsonl
from agent_gym.envs.hotpotqa.countries import (
    Country,
    CountryCorpus,
    build_corpus,
    countryinfo_version,
    load_countries,
)
from agent_gym.envs.hotpotqa.records import Passage, Question
from agent_gym.envs.hotpotqa.scoring import normalize_answer

#: Bump when the templates or the paragraphs change (it is part of the cache key).
GENERATOR_VERSION = 1
SPLITS = ("train", "dev", "test")
#: Fractions of the questions in train, dev and test.
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
#: How many questions of each template to draw (fewer when fewer exist).
QUOTAS = {
    "bridge_border_currency": 400,
    "bridge_common_neighbour": 250,
    "bridge_province_capital": 400,
    "bridge_province_currency": 200,
    "bridge_province_subregion": 150,
    "comparison_area": 250,
    "comparison_population": 250,
    "comparison_capital_north": 200,
    "comparison_same_subregion": 150,
    "comparison_same_currency": 150,
}
_AREA_MARGIN = 1.10
_LATITUDE_MARGIN = 1.0

Candidate = tuple[str, str, tuple[str, ...], tuple[str, ...]]
"""(question, answer, supporting titles, entities named in the question)."""


class _Facts:
    """Look-ups shared by the templates."""

    def __init__(self, countries: list[Country], corpus: CountryCorpus) -> None:
        self.countries = countries
        self.by_name = {c.name: c for c in countries}
        self.corpus = corpus
        owners: dict[str, list[Country]] = {}
        for c in countries:
            for p in set(c.provinces):
                owners.setdefault(p, []).append(c)
        place_names = {c.name for c in countries} | {c.capital for c in countries}
        # A province is a usable clue when one country lists it and it is not also the name
        # of a country or capital (that would make "the province X" read ambiguously).
        self.unique_provinces = sorted(
            (p, cs[0])
            for p, cs in owners.items()
            if len(cs) == 1 and p not in place_names and (cs[0].name, p) in corpus.province_title
        )


def _bridge_border_currency(f: _Facts) -> Iterator[Candidate]:
    for c in f.countries:
        for neighbour in c.borders:
            for cur in c.currencies:
                matches = [
                    o for o in f.countries if neighbour in o.claimed_borders and cur in o.currencies
                ]
                if matches == [c]:
                    yield (
                        f"What is the capital of the country that borders {neighbour} and "
                        f"uses the currency code {cur}?",
                        c.capital,
                        (f.corpus.country_title[neighbour], f.corpus.country_title[c.name]),
                        (neighbour, cur),
                    )


def _bridge_common_neighbour(f: _Facts) -> Iterator[Candidate]:
    sharers: dict[tuple[str, str], list[Country]] = {}
    for o in f.countries:
        for a, b in combinations(sorted(o.claimed_borders), 2):
            sharers.setdefault((a, b), []).append(o)
    for (a, b), shared in sorted(sharers.items()):
        if len(shared) == 1 and {a, b} <= set(shared[0].borders):
            yield (
                f"Which country shares a land border with both {a} and {b}?",
                shared[0].name,
                (f.corpus.country_title[a], f.corpus.country_title[b]),
                (a, b),
            )


def _bridge_province(attribute: str) -> Callable[[_Facts], Iterator[Candidate]]:
    asks = {
        "capital": "What is the capital of the country that has a province named {p}?",
        "currency": "What currency code does the country with the province {p} use?",
        "subregion": "In which subregion is the country that has the province {p}?",
    }

    def generate(f: _Facts) -> Iterator[Candidate]:
        for province, c in f.unique_provinces:
            if attribute == "currency":
                if len(c.currencies) != 1:
                    continue
                answer = c.currencies[0]
            else:
                answer = getattr(c, attribute)
            yield (
                asks[attribute].format(p=province),
                answer,
                (f.corpus.province_title[(c.name, province)], f.corpus.country_title[c.name]),
                (province,),
            )

    return generate


def _pairs(f: _Facts) -> Iterator[tuple[Country, Country]]:
    for i, a in enumerate(f.countries):
        for b in f.countries[i + 1 :]:
            yield a, b


def _comparison_numeric(attribute: str, adjective: str) -> Callable[[_Facts], Iterator[Candidate]]:
    def generate(f: _Facts) -> Iterator[Candidate]:
        for a, b in _pairs(f):
            x, y = getattr(a, attribute), getattr(b, attribute)
            if max(x, y) < _AREA_MARGIN * min(x, y):
                continue
            yield (
                f"Which country has the larger {adjective}, {a.name} or {b.name}?",
                a.name if x > y else b.name,
                (f.corpus.country_title[a.name], f.corpus.country_title[b.name]),
                (a.name, b.name),
            )

    return generate


def _comparison_capital_north(f: _Facts) -> Iterator[Candidate]:
    capital_count: dict[str, int] = {}
    for c in f.countries:
        capital_count[c.capital] = capital_count.get(c.capital, 0) + 1
    for a, b in _pairs(f):
        if capital_count[a.capital] > 1 or capital_count[b.capital] > 1:
            continue
        if abs(a.capital_lat - b.capital_lat) < _LATITUDE_MARGIN:
            continue
        yield (
            f"Which capital city lies further north, {a.capital} or {b.capital}?",
            a.capital if a.capital_lat > b.capital_lat else b.capital,
            (f.corpus.capital_title[a.name], f.corpus.capital_title[b.name]),
            (a.capital, b.capital),
        )


def _comparison_same(attribute: str) -> Callable[[_Facts], Iterator[Candidate]]:
    asks = {
        "subregion": "Are {a} and {b} in the same subregion?",
        "currencies": "Do {a} and {b} use the same currency?",
    }

    def generate(f: _Facts) -> Iterator[Candidate]:
        for a, b in _pairs(f):
            if attribute == "subregion":
                same = a.subregion == b.subregion
            else:
                # "the same currency" is only clear-cut when each uses a single one.
                if len(a.currencies) != 1 or len(b.currencies) != 1:
                    continue
                same = a.currencies == b.currencies
            yield (
                asks[attribute].format(a=a.name, b=b.name),
                "yes" if same else "no",
                (f.corpus.country_title[a.name], f.corpus.country_title[b.name]),
                (a.name, b.name),
            )

    return generate


_TEMPLATES: dict[str, tuple[str, Callable[[_Facts], Iterator[Candidate]]]] = {
    "bridge_border_currency": ("bridge", _bridge_border_currency),
    "bridge_common_neighbour": ("bridge", _bridge_common_neighbour),
    "bridge_province_capital": ("bridge", _bridge_province("capital")),
    "bridge_province_currency": ("bridge", _bridge_province("currency")),
    "bridge_province_subregion": ("bridge", _bridge_province("subregion")),
    "comparison_area": ("comparison", _comparison_numeric("area", "area")),
    "comparison_population": ("comparison", _comparison_numeric("population", "population")),
    "comparison_capital_north": ("comparison", _comparison_capital_north),
    "comparison_same_subregion": ("comparison", _comparison_same("subregion")),
    "comparison_same_currency": ("comparison", _comparison_same("currencies")),
}


def _draw(name: str, candidates: list[Candidate], quota: int, rng: random.Random) -> list:
    """Sample ``quota`` candidates; yes/no templates get half yes and half no."""
    if name.startswith("bridge"):
        # A bridge question must not contain its own answer (e.g. a province named after
        # the capital).
        candidates = [c for c in candidates if normalize_answer(c[1]) not in normalize_answer(c[0])]
    usable = candidates
    if usable and usable[0][1] in ("yes", "no"):
        yes = [c for c in usable if c[1] == "yes"]
        no = [c for c in usable if c[1] == "no"]
        half = min(quota // 2, len(yes), len(no))
        return rng.sample(yes, half) + rng.sample(no, half)
    return rng.sample(usable, min(quota, len(usable)))


def generate_questions(
    countries: list[Country], corpus: CountryCorpus, *, seed: int = 0
) -> list[Question]:
    """Draw the question set and assign splits; deterministic for a given ``seed``.

    Returns:
        Questions sorted by id, each with ``split`` set; no question text appears twice.
    """
    facts = _Facts(countries, corpus)
    rng = random.Random(seed)
    drawn: list[Question] = []
    seen: set[str] = set()
    for name, (qtype, template) in _TEMPLATES.items():
        for number, (text, answer, titles, entities) in enumerate(
            _draw(name, list(template(facts)), QUOTAS[name], rng)
        ):
            if text in seen:
                continue
            seen.add(text)
            drawn.append(
                Question(
                    id=f"gen-{name}-{number:04d}",
                    question=text,
                    answer=answer,
                    type=qtype,
                    supporting_titles=titles,
                    template=name,
                    entities=entities,
                )
            )
    rng.shuffle(drawn)
    n_train = round(SPLIT_FRACTIONS[0] * len(drawn))
    n_dev = round(SPLIT_FRACTIONS[1] * len(drawn))
    bounds = {"train": (0, n_train), "dev": (n_train, n_train + n_dev)}
    bounds["test"] = (n_train + n_dev, len(drawn))
    out = []
    for split, (lo, hi) in bounds.items():
        out.extend(_with_split(q, split) for q in drawn[lo:hi])
    return sorted(out, key=lambda q: q.id)


def _with_split(q: Question, split: str) -> Question:
    return replace(q, split=split)


def _code_fingerprint() -> str:
    """Hash of the modules that shape the cached files, so editing them invalidates the cache."""
    digest = hashlib.sha256()
    for name in ("countries.py", "generated.py", "search.py", "sources.py"):
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:12]


def build_params(seed: int = 0) -> dict:
    """Everything the generated set depends on (hashed into its cache folder name)."""
    return {
        "kind": "generated:countryinfo",
        "generator": GENERATOR_VERSION,
        "code": _code_fingerprint(),
        "countryinfo": countryinfo_version(),
        "seed": seed,
    }


def build(seed: int = 0) -> tuple[list[Passage], list[Question]]:
    """Load the facts, write the paragraphs and generate the questions (well under a second)."""
    countries = load_countries()
    corpus = build_corpus(countries)
    return list(corpus.passages), generate_questions(countries, corpus, seed=seed)


def write(directory: Path, passages: list[Passage], questions: list[Question]) -> None:
    """Write ``passages.jsonl`` and ``questions.jsonl`` into ``directory``."""
    with open(directory / "passages.jsonl", "w", encoding="utf-8") as fh:
        for p in passages:
            fh.write(json.dumps(p.to_json(), ensure_ascii=False) + "\n")
    with open(directory / "questions.jsonl", "w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps(q.to_json(), ensure_ascii=False) + "\n")


def read(directory: Path) -> tuple[list[Passage], list[Question]]:
    """Inverse of :func:`write`."""
    passages = [Passage(**rec) for _, rec in iter_jsonl(directory / "passages.jsonl")]
    questions = [Question.from_json(rec) for _, rec in iter_jsonl(directory / "questions.jsonl")]
    return passages, questions
