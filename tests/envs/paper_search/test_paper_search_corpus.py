"""The seeded generator, the search index, and the oracle on the default corpus."""

from __future__ import annotations

import random
import statistics

import pytest

from agent_gym.envs.paper_search.corpus import MAX_GOLD, MIN_GOLD, generate
from agent_gym.envs.paper_search.env import PaperSearchEnv
from agent_gym.envs.paper_search.records import facet_match
from agent_gym.envs.paper_search.search import SearchIndex, tokenize
from agent_gym.envs.paper_search.vocab import FIELDS


@pytest.fixture(scope="module")
def small():
    return generate(n_papers=600, n_queries=40, seed=3)


def test_generator_is_deterministic_and_seed_dependent(small) -> None:
    again = generate(n_papers=600, n_queries=40, seed=3)
    assert [p.to_json() for p in again.papers] == [p.to_json() for p in small.papers]
    assert [q.to_json() for q in again.all_queries()] == [q.to_json() for q in small.all_queries()]
    other = generate(n_papers=600, n_queries=40, seed=4)
    assert [p.title for p in other.papers] != [p.title for p in small.papers]


def test_papers_are_marked_synthetic_and_cite_only_earlier_papers(small) -> None:
    position = small.index_of
    for p in small.papers:
        assert p.paper_id.startswith("syn:")
        assert all(position[r] < position[p.paper_id] for r in p.references)
        for c in p.citations:  # the citation lists mirror the references
            assert p.paper_id in small.paper(c).references
        years = [small.paper(c).year for c in p.citations]
        assert years == sorted(years, reverse=True)  # newest first
    assert small.data_source == "generated:paper-corpus"


def test_gold_sets_are_exactly_the_papers_satisfying_the_facets(small) -> None:
    splits = {s: len(q) for s, q in small.queries.items()}
    assert splits == {"train": 32, "dev": 4, "test": 4}
    for q in small.all_queries():
        satisfying = {
            p.paper_id for p in small.papers if facet_match(q.facets, p.facets)[0] == len(q.facets)
        }
        assert q.gold == satisfying and MIN_GOLD <= len(q.gold) <= MAX_GOLD
    texts = [q.text for q in small.all_queries()]
    assert len(set(texts)) == len(texts)


def test_papers_use_aliases_so_one_phrasing_misses_some(small) -> None:
    aliases = {f.name: f for fld in FIELDS for f in (*fld.methods, *fld.tasks)}
    by_alias = 0
    for p in small.papers:
        method = aliases[p.facets["method"]]
        text = f"{p.title} {p.abstract}"
        if method.name not in text and any(a in text for a in method.aliases):
            by_alias += 1
    assert by_alias > len(small.papers) // 5


def test_generator_rejects_impossible_requests() -> None:
    with pytest.raises(ValueError, match="at least 200 papers"):
        generate(n_papers=10)
    with pytest.raises(ValueError, match="could draw only"):
        generate(n_papers=200, n_queries=1000)


def test_search_ranks_exact_title_first_and_survives_save_load(small, tmp_path) -> None:
    index = SearchIndex.build([f"{p.title}. {p.abstract}" for p in small.papers])
    target = small.papers[123]
    hits = index.search(f"{target.title} {target.abstract}")
    assert hits[0] == 123 and len(hits) == 10
    assert index.search("the of and") == [] and index.search("zzqqxx") == []
    assert index.search("graph", k=3) == index.search("graph", k=10)[:3]
    index.save(tmp_path / "idx")
    assert SearchIndex.load(tmp_path / "idx").search(target.title) == index.search(target.title)
    assert tokenize("Networks, classes & GNNs!") == ["network", "class", "gnn"]
    assert tokenize("Studies of corpus analysis") == ["study", "corpus", "analysis"]


def test_oracle_reaches_full_recall_but_search_alone_usually_does_not() -> None:
    """Issue item 4 on 60 test queries of the default corpus (5,000 papers)."""
    env = PaperSearchEnv(split="test")
    ids = [q.query_id for q in env.corpus.queries["test"]]
    ids = random.Random(0).sample(ids, 60)
    phrasings = {f.name: f.phrasings for fld in FIELDS for f in (*fld.methods, *fld.tasks)}

    def run(policy) -> list[float]:
        recalls = []
        for task_id in ids:
            _, info = env.reset(options={"task_id": task_id})
            for step in range(5):
                _, _, term, _, info = env.step(policy(step, info))
                if term:
                    break
            recalls.append(info["recall"])
        return recalls

    oracle = run(lambda step, info: env.expert_action())
    assert all(r == 1.0 for r in oracle)

    def search_only(step: int, info: dict) -> str:
        # The strongest keyword searcher: it knows the facets and every alias, 25 searches.
        f = env.query.facets
        queries = [info["task"]] + [
            f"{m} {t} {f.get('dataset', '')}".strip()
            for m in phrasings.get(f.get("method"), ("",))
            for t in phrasings[f["task"]]
        ]
        return "\n".join(f"search[{q}]" for q in queries[5 * step : 5 * step + 5]) or "finish[]"

    def search_then_expand(step: int, info: dict) -> str:
        # A plain agent: search the request, then expand the best new papers.
        if step == 0:
            return f"search[{info['task']}]"
        expands = [a for a in info["admissible_actions"] if a.startswith("expand[")]
        return "\n".join(expands[:5]) or "finish[]"

    searched = run(search_only)
    expanded = run(search_then_expand)
    assert sum(r == 1.0 for r in searched) < len(ids) / 2  # search alone usually falls short
    assert statistics.mean(expanded) > statistics.mean(searched)  # expand matters
    assert sum(r == 1.0 for r in expanded) > sum(r == 1.0 for r in searched)
