"""Real facts about countries from the ``countryinfo`` package (MIT), and paragraphs about them.

``countryinfo`` ships one JSON file per country or territory (capital, capital coordinates,
area, population, borders, currencies, region, subregion, provinces, ...). The facts are used
as shipped (population figures are from the package's sources, mostly around 2014), after
three consistency rules:

* Records missing a capital, capital coordinates, a positive area or population, a region or
  a currency are left out (e.g. Heard Island, French Guiana).
* Records that share an ISO alpha-3 code with another complete record (the two Vatican City
  files) and the withdrawn ISO 3166-3 codes ``SCG`` (Serbia and Montenegro, dissolved 2006)
  and ``ANT`` (Netherlands Antilles, dissolved 2010) are left out, so no fact has two values.
* A border is written only where *both* countries list each other (``countryinfo`` 1.0.1 has
  about 20 one-sided entries, e.g. Nepal lists China but China does not list Nepal).
  One-sided claims are still kept in :attr:`Country.claimed_borders` so that question
  generation can reject a clue that a one-sided border would make ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

from agent_gym.datafiles import read_json
from agent_gym.envs.hotpotqa.records import Passage

#: Withdrawn ISO 3166-1 codes (ISO 3166-3) still present in countryinfo's data.
WITHDRAWN_CODES = {"SCG": "Serbia and Montenegro", "ANT": "Netherlands Antilles"}


@dataclass(frozen=True)
class Country:
    """The facts about one country or territory that the generated questions use.

    Attributes:
        name: English short name, e.g. ``"France"``.
        code: ISO 3166-1 alpha-3 code.
        capital: Capital city.
        capital_lat: Capital latitude in degrees (north positive).
        capital_lon: Capital longitude in degrees (east positive).
        area: Area in square kilometres.
        population: Population.
        region: Continent-level region, e.g. ``"Europe"``.
        subregion: UN subregion, e.g. ``"Western Europe"``.
        currencies: ISO 4217 currency codes.
        borders: Names of land neighbours that list this country back (symmetric).
        claimed_borders: ``borders`` plus one-sided claims in either direction.
        demonym: What its people are called.
        calling_codes: International calling codes (digits, no ``+``).
        tlds: Internet country-code domains.
        provinces: First-level divisions as the package lists them.
    """

    name: str
    code: str
    capital: str
    capital_lat: float
    capital_lon: float
    area: float
    population: int
    region: str
    subregion: str
    currencies: tuple[str, ...]
    borders: tuple[str, ...]
    claimed_borders: frozenset[str]
    demonym: str
    calling_codes: tuple[str, ...]
    tlds: tuple[str, ...]
    provinces: tuple[str, ...]


def countryinfo_version() -> str:
    """Installed ``countryinfo`` version (part of the cache key of the generated set)."""
    return metadata.version("countryinfo")


def _raw_records() -> list[dict]:
    folder = resources.files("countryinfo") / "data"
    records = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".json"):
            records.append(read_json(Path(str(entry))))
    return records


def _is_complete(rec: dict) -> bool:
    latlng = rec.get("capital_latlng") or []
    return (
        isinstance(rec.get("name"), str)
        and bool(rec.get("name"))
        and isinstance(rec.get("capital"), str)
        and bool(rec["capital"].strip())
        and len(latlng) == 2
        and isinstance(rec.get("area"), (int, float))
        and rec["area"] > 0
        and isinstance(rec.get("population"), int)
        and rec["population"] > 0
        and bool(rec.get("region"))
        and bool(rec.get("subregion"))
        and bool(rec.get("currencies"))
        and isinstance(rec.get("borders"), list)
        and bool(rec.get("ISO", {}).get("alpha3"))
    )


def load_countries() -> list[Country]:
    """All usable countries and territories, sorted by name (about 225 with countryinfo 1.0.1)."""
    complete = [r for r in _raw_records() if _is_complete(r)]
    by_code: dict[str, list[dict]] = {}
    for rec in complete:
        by_code.setdefault(rec["ISO"]["alpha3"], []).append(rec)
    kept = {
        code: recs[0]
        for code, recs in by_code.items()
        if len(recs) == 1 and code not in WITHDRAWN_CODES
    }
    listed = {code: set(rec["borders"]) & set(kept) - {code} for code, rec in kept.items()}
    countries = []
    for code, rec in kept.items():
        mutual = sorted(kept[b]["name"] for b in listed[code] if code in listed[b])
        claimed = {kept[b]["name"] for b in listed[code]}
        claimed |= {kept[o]["name"] for o in kept if code in listed[o]}
        lat, lon = rec["capital_latlng"]
        countries.append(
            Country(
                name=rec["name"],
                code=code,
                capital=rec["capital"].strip(),
                capital_lat=float(lat),
                capital_lon=float(lon),
                area=float(rec["area"]),
                population=int(rec["population"]),
                region=rec["region"],
                subregion=rec["subregion"],
                currencies=tuple(rec["currencies"]),
                borders=tuple(mutual),
                claimed_borders=frozenset(claimed),
                demonym=rec.get("demonym") or "",
                calling_codes=tuple(c for c in rec.get("callingCodes", []) if c),
                tlds=tuple(t for t in rec.get("tld", []) if t),
                provinces=tuple(p.strip() for p in rec.get("provinces", []) if p.strip()),
            )
        )
    return sorted(countries, key=lambda c: c.name)


def _join(items: list[str] | tuple[str, ...]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def format_area(area: float) -> str:
    """'640,679' for whole numbers, '2.02' otherwise."""
    return f"{int(area):,}" if float(area).is_integer() else f"{area:,.2f}"


def _coordinate(value: float, positive: str, negative: str) -> str:
    return f"{abs(value):.2f}° {positive if value >= 0 else negative}"


def country_paragraph(c: Country) -> str:
    """The 'Wikipedia-style' paragraph about a country, written only from its facts."""
    parts = [
        f"{c.name} is a country or territory in {c.subregion}, in the {c.region} region.",
        f"Its capital is {c.capital}.",
        f"It has an area of {format_area(c.area)} square kilometres and a population of "
        f"{c.population:,}.",
    ]
    if c.borders:
        parts.append(f"It shares land borders with {_join(c.borders)}.")
    else:
        parts.append("It has no land border with another country in this collection.")
    noun = "code is" if len(c.currencies) == 1 else "codes are"
    parts.append(f"Its currency {noun} {_join(c.currencies)}.")
    if c.demonym:
        parts.append(f"Its people are called {c.demonym}.")
    if c.calling_codes and c.tlds:
        parts.append(
            f"Its international calling code is +{c.calling_codes[0]} and its internet "
            f"domain is {c.tlds[0]}."
        )
    return " ".join(parts)


def capital_paragraph(c: Country) -> str:
    """The paragraph about a country's capital city (coordinates are only here)."""
    return (
        f"{c.capital} is the capital city of {c.name}. It lies at "
        f"{_coordinate(c.capital_lat, 'N', 'S')}, {_coordinate(c.capital_lon, 'E', 'W')}."
    )


def province_paragraph(province: str, c: Country) -> str:
    """The paragraph about one province (first-level division) of a country."""
    others = [p for p in c.provinces if p != province][:3]
    text = f"{province} is a province or administrative division of {c.name}."
    if others:
        text += f" Other divisions include {_join(others)}."
    return text


@dataclass(frozen=True)
class CountryCorpus:
    """The generated corpus: one page per country, capital and province, with unique titles.

    Attributes:
        passages: All paragraphs, countries first, then capitals, then provinces.
        country_title: Country name -> title of its page (the name itself).
        capital_title: Country name -> title of its capital's page.
        province_title: ``(country name, province)`` -> title of the province page.
    """

    passages: tuple[Passage, ...]
    country_title: dict[str, str]
    capital_title: dict[str, str]
    province_title: dict[tuple[str, str], str]


def build_corpus(countries: list[Country]) -> CountryCorpus:
    """Write every paragraph and give each a unique title.

    A capital or province whose name is already a title (Singapore the city, Luxembourg the
    Belgian province, the two Kingstons) is disambiguated Wikipedia-style:
    ``"Singapore (city)"``, ``"Kingston (Jamaica)"``, ``"Luxembourg (Belgium)"``.
    """
    taken = {c.name for c in countries}
    country_title = {c.name: c.name for c in countries}
    passages = [Passage(c.name, country_paragraph(c)) for c in countries]

    capital_count: dict[str, int] = {}
    for c in countries:
        capital_count[c.capital] = capital_count.get(c.capital, 0) + 1
    capital_title = {}
    for c in countries:
        if capital_count[c.capital] > 1:
            title = f"{c.capital} ({c.name})"
        elif c.capital in taken:
            title = f"{c.capital} (city)"
        else:
            title = c.capital
        taken.add(title)
        capital_title[c.name] = title
        passages.append(Passage(title, capital_paragraph(c)))

    province_count: dict[str, int] = {}
    for c in countries:
        for p in set(c.provinces):
            province_count[p] = province_count.get(p, 0) + 1
    province_title = {}
    for c in countries:
        for p in dict.fromkeys(c.provinces):
            title = p if province_count[p] == 1 and p not in taken else f"{p} ({c.name})"
            if title in taken:  # e.g. a province listed under its country's own name
                continue
            taken.add(title)
            province_title[(c.name, p)] = title
            passages.append(Passage(title, province_paragraph(p, c)))
    return CountryCorpus(tuple(passages), country_title, capital_title, province_title)
