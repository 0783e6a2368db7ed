"""The JSONL loaders: our formats, PaSa's query format, and errors naming file, line, field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_gym.envs.paper_search.loader import (
    DataFormatError,
    LoadReport,
    load_corpus,
    load_papers,
    load_queries,
)

FIX = Path(__file__).parent / "fixtures"


def test_papers_fixture_builds_citations_and_drops_dangling_references() -> None:
    report = LoadReport()
    papers = {p.paper_id: p for p in load_papers(FIX / "papers.jsonl", report)}
    assert len(papers) == 5 and report.dangling_references == 1
    assert papers["2001.00004"].references == ("2001.00001", "2001.00002")
    # Cited by P2, P3 (2018) and P4 (2019): newest first, ties by id descending.
    assert papers["2001.00001"].citations == ("2001.00004", "2001.00003", "2001.00002")
    p5 = papers["2001.00005"]  # written with the arxiv_id alias and a string year
    assert (p5.year, p5.references, p5.facets) == (2015, (), None)


def test_our_queries_resolve_ids_and_normalised_titles() -> None:
    papers = load_papers(FIX / "papers.jsonl")
    report = LoadReport()
    queries = load_queries(FIX / "queries.jsonl", papers, report=report)
    assert [q.query_id for q in queries["train"]] == ["q1"]
    assert queries["test"][0].gold == frozenset({"2001.00003"})  # "graph attention networks!"
    assert (report.unresolved_answers, report.skipped_queries) == (1, 1)  # q3


def test_pasa_export_ids_with_versions_and_title_fallback() -> None:
    papers = load_papers(FIX / "papers.jsonl")
    report = LoadReport()
    queries = load_queries(FIX / "pasa_queries.jsonl", papers, report=report)
    # No split field: every query belongs to every split.
    assert all(len(queries[s]) == 2 for s in ("train", "dev", "test"))
    q1, q2 = queries["test"]
    assert q1.query_id == "AutoScholarQuery_test_1"
    assert q1.gold == frozenset({"2001.00004"})  # 2001.00004v3 matched without its version
    assert q2.gold == frozenset({"2001.00005"})  # unknown id, title matched instead
    assert report.unresolved_answers == 1  # "A Paper Outside The Corpus"


def test_load_corpus_with_a_split_mapping() -> None:
    corpus, _ = load_corpus(FIX / "papers.jsonl", {"dev": FIX / "pasa_queries.jsonl"})
    assert [len(corpus.queries[s]) for s in ("train", "dev", "test")] == [0, 2, 0]
    assert corpus.data_source == "jsonl:papers.jsonl"
    with pytest.raises(DataFormatError, match="needs queries="):
        load_corpus(FIX / "papers.jsonl", None)


GOOD = {"paper_id": "a", "title": "T", "abstract": "x", "year": 2020, "references": []}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], r"line 1: not valid JSON"),
        ([json.dumps(GOOD), "[1, 2]"], r"line 2: expected a JSON object, got list"),
        ([json.dumps({"title": "T"})], r"line 1: missing field 'paper_id' \(or 'arxiv_id', 'id'\)"),
        ([json.dumps({**GOOD, "title": 3})], r"line 1: field 'title' must be str, got int"),
        ([json.dumps({**GOOD, "year": "soon"})], r"line 1: field 'year' must be int, got str"),
        ([json.dumps({**GOOD, "references": "b"})], r"line 1: field 'references' must be list"),
        (
            [json.dumps({**GOOD, "references": [1]})],
            r"field 'references' must be a list of strings",
        ),
        (
            [json.dumps(GOOD), "", json.dumps(GOOD)],
            r"line 3: duplicate paper_id 'a' \(first on line 1\)",
        ),
        ([json.dumps({**GOOD, "paper_id": "  "})], r"line 1: field 'paper_id' is empty"),
        ([], r"no papers"),
    ],
)
def test_malformed_papers_name_file_line_and_field(tmp_path, lines, message) -> None:
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=message) as err:
        load_papers(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"answer_ids": ["a"]}, r"line 1: missing field 'query' \(or 'question'\)"),
        ({"query": "q"}, r"line 1: missing field 'answer_ids'"),
        ({"query": "q", "answer_ids": "a"}, r"field 'answer_ids' must be list"),
        ({"query": " ", "answer_ids": ["a"]}, r"field 'query' is empty"),
        ({"query": "q", "answer_ids": ["a"], "split": "valid"}, r"field 'split' is 'valid'"),
    ],
)
def test_malformed_queries_name_file_line_and_field(tmp_path, record, message) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=message) as err:
        load_queries(path, load_papers(FIX / "papers.jsonl"))
    assert str(path) in str(err.value)


def test_missing_file_and_no_resolvable_query(tmp_path) -> None:
    with pytest.raises(DataFormatError, match="absent.jsonl: no such file"):
        load_papers(tmp_path / "absent.jsonl")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "q", "answer_ids": ["zzz"]}) + "\n")
    with pytest.raises(DataFormatError, match="no query has an answer"):
        load_corpus(FIX / "papers.jsonl", queries)


def test_env_warns_about_dropped_answers(tmp_path, monkeypatch) -> None:
    from agent_gym.envs.paper_search import cache
    from agent_gym.envs.paper_search.env import PaperSearchEnv

    monkeypatch.setattr(cache, "_LOADED", {})  # force a fresh load in this process
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl")
    with pytest.warns(UserWarning, match="1 query answers are not in the papers file"):
        env.reset(seed=0)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_versioned_and_unversioned_arxiv_ids_are_one_paper(tmp_path) -> None:
    # The papers file has versions on some ids, the references name them without (and the
    # other way round); PaSa answers carry versions too. No edge and no answer may be lost.
    papers = _jsonl(
        tmp_path / "papers.jsonl",
        [
            {"paper_id": "1706.03762v5", "title": "Attention Is All You Need"},
            {"paper_id": "1810.04805", "title": "BERT", "references": ["1706.03762"]},
            {"paper_id": "arXiv:2005.14165v4", "title": "GPT-3", "references": ["1810.04805v2"]},
            {"paper_id": "hep-th/9901001v1", "title": "Old style", "citations": ["2005.14165"]},
        ],
    )
    report = LoadReport()
    by_id = {p.paper_id: p for p in load_papers(papers, report)}
    assert sorted(by_id) == ["1706.03762", "1810.04805", "2005.14165", "hep-th/9901001"]
    assert report.dangling_references == 0
    assert by_id["1810.04805"].references == ("1706.03762",)
    assert by_id["2005.14165"].references == ("1810.04805",)
    assert by_id["1706.03762"].citations == ("1810.04805",)
    assert by_id["hep-th/9901001"].citations == ("2005.14165",)
    queries = _jsonl(
        tmp_path / "q.jsonl",
        [{"query": "q", "answer_arxiv_id": ["1706.03762v1", "arXiv:1810.04805", "hep-th/9901001"]}],
    )
    (q,) = load_queries(queries, list(by_id.values()), default_split="test")["test"]
    assert q.gold == frozenset({"1706.03762", "1810.04805", "hep-th/9901001"})


def test_two_versions_of_one_paper_are_a_duplicate(tmp_path) -> None:
    path = _jsonl(
        tmp_path / "papers.jsonl",
        [{"paper_id": "1706.03762v1", "title": "A"}, {"paper_id": "1706.03762v5", "title": "A"}],
    )
    with pytest.raises(DataFormatError, match=r"line 2: duplicate paper_id '1706.03762' \("):
        load_papers(path)


def test_normalise_paper_id_leaves_other_ids_alone() -> None:
    from agent_gym.envs.paper_search.loader import normalise_paper_id

    assert normalise_paper_id("math.GT/0309136v2") == "math.GT/0309136"
    assert normalise_paper_id("1501.00001v12") == "1501.00001"
    for other in ("syn:2103.00042", "649def34f8be52c8b66281af98ae884c09aef38b", "paper-v2", "v2"):
        assert normalise_paper_id(other) == other


@pytest.mark.parametrize("which", ["papers", "queries"])
def test_non_utf8_files_name_file_and_line(tmp_path, which) -> None:
    papers = tmp_path / "papers.jsonl"
    queries = tmp_path / "queries.jsonl"
    papers.write_bytes(b'{"paper_id": "a", "title": "T"}\n')
    queries.write_bytes(b'{"query": "q", "answer_ids": ["a"]}\n')
    bad = papers if which == "papers" else queries
    bad.write_bytes(
        bad.read_bytes() + '{"paper_id": "b", "title": "Caf\u00e9"}\n'.encode("latin-1")
    )
    with pytest.raises(DataFormatError, match=rf"{bad.name}: line 2: not UTF-8 text \(byte 0xe9"):
        load_corpus(papers, queries)
