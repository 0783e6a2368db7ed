"""Loaders for the official HotpotQA files, on small fixtures in the official formats."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agent_gym.envs.hotpotqa.cache import is_built
from agent_gym.envs.hotpotqa.env import HotpotQAEnv
from agent_gym.envs.hotpotqa.official import DataFormatError, load_corpus, load_questions
from agent_gym.envs.hotpotqa.sources import corpus_index_dir

FIXTURES = Path(__file__).parent / "fixtures"
DISTRACTOR = FIXTURES / "hotpot_dev_distractor_mini.json"
FULLWIKI = FIXTURES / "hotpot_dev_fullwiki_mini.json"
CORPUS = FIXTURES / "abstracts_mini.jsonl"


def test_load_distractor_file() -> None:
    questions = load_questions(DISTRACTOR)
    assert [q.id for q in questions] == ["fx0001", "fx0002", "fx0003"]
    q = questions[0]
    assert (q.answer, q.type, q.level) == ("Manzanares", "bridge", "medium")
    assert q.supporting_titles == ("Spain", "Madrid")
    assert len(q.context) == 5 and q.context[0].title == "Spain"
    # Sentences keep their leading spaces, so joining with "" gives the paragraph.
    assert q.context[0].text == (
        "Spain is a country in south-western Europe. It borders Portugal, France and "
        "Andorra. Its capital is Madrid."
    )


def test_load_corpus_both_text_forms() -> None:
    passages = load_corpus(CORPUS)
    assert len(passages) == 8  # the blank line is skipped
    assert passages[0].text.endswith("Its capital is Madrid.")
    assert (
        passages[3].text
        == "Porto is the second city of Portugal, where the Douro reaches the Atlantic."
    )


def test_distractor_episode_searches_own_paragraphs() -> None:
    env = HotpotQAEnv(data=str(DISTRACTOR), split="test", force_first_search=False)
    obs, info = env.reset(options={"task_id": "fx0001"})
    assert info["data_source"] == "official:hotpot_dev_distractor_mini.json"
    obs, *_ = env.step("search[Portugal]")
    # Only this question's 5 paragraphs are searchable: Spain, Lisbon and Porto name Portugal.
    assert set(re.findall(r"^\[\d+\] (.+) \(query: ", obs, re.M)) == {"Spain", "Lisbon", "Porto"}
    while (action := env.expert_action()) is not None:
        _, reward, term, _, info = env.step(action)
    assert (reward, term, info["won"]) == (1.0, True, True)
    env.reset(options={"task_id": "fx0002"})
    _, reward, *_ = env.step("answer[no]")
    assert reward == 0.0
    env.close()


def test_fullwiki_builds_and_caches_the_corpus_index(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path / "home"))
    corpus = tmp_path / "abstracts.jsonl"
    shutil.copy(CORPUS, corpus)
    summary = HotpotQAEnv.prepare(progress=False, data=str(FULLWIKI), corpus=str(corpus))
    assert "8 shared passages" in summary and "all 2" in summary
    assert is_built(corpus_index_dir(corpus))
    env = HotpotQAEnv(data=str(FULLWIKI), corpus=str(corpus), force_first_search=False)
    _, info = env.reset(options={"task_id": "fw0002"})  # a record without "context"
    assert info["data_source"] == "official:hotpot_dev_fullwiki_mini.json+corpus:abstracts.jsonl"
    obs, *_ = env.step("search[Douro Atlantic]")
    assert "[1] Douro" in obs and "[2] Porto" in obs
    assert env.expert_action() == "answer[Portugal]"
    env.close()


def _write(tmp_path: Path, data: object, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


GOOD = json.loads(DISTRACTOR.read_text(encoding="utf-8"))[0]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[{", "not valid JSON (line 1"),
        ({"data": []}, "expected a JSON list"),
        ([], "holds no questions"),
        (["x"], "record 0: expected a JSON object"),
        (
            [{k: v for k, v in GOOD.items() if k != "answer"}],
            "record 0 (_id 'fx0001'): missing field 'answer' (test files",
        ),
        ([{**GOOD, "question": 3}], "field 'question' must be a string, got int"),
        ([{k: v for k, v in GOOD.items() if k != "context"}], "missing field 'context'"),
        ([{**GOOD, "context": [["Spain"]]}], "field 'context'[0] must be [title, [sentence, ...]]"),
        ([{**GOOD, "supporting_facts": [[1, 0]]}], "field 'supporting_facts'[0]"),
        (
            [{**GOOD, "supporting_facts": "Spain"}],
            "field 'supporting_facts' must be a list of [title, sentence_index] pairs, got str",
        ),
        (
            [{**GOOD, "supporting_facts": [["Spain", "1"]]}],
            "field 'supporting_facts'[0][1] must be a sentence index (an integer >= 0), got \"1\"",
        ),
        ([{**GOOD, "supporting_facts": [["Spain", 1.0]]}], "'supporting_facts'[0][1] must be"),
        ([{**GOOD, "supporting_facts": [["Spain", True]]}], "'supporting_facts'[0][1] must be"),
        ([{**GOOD, "supporting_facts": [["Spain", -1]]}], "'supporting_facts'[0][1] must be"),
        (
            [{**GOOD, "supporting_facts": [["Spain", 1], ["Madrid (city)", 0]]}],
            "field 'supporting_facts' names 'Madrid (city)', which is not a title in 'context'",
        ),
        ([GOOD, GOOD], "record 1: duplicate _id 'fx0001'"),
    ],
)
def test_malformed_question_files_name_file_record_field(tmp_path, data, message) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(DataFormatError) as err:
        load_questions(path)
    assert str(path) in str(err.value) and message in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"title": "A", "text": "a"}\nnot json\n', "line 2: not valid JSON"),
        ('{"title": "A"}\n', "line 1: missing key 'text'"),
        ('["A", "a"]\n', "line 1: expected a JSON object"),
        ('{"title": "A", "text": 5}\n', "line 1: 'title' must be a string and 'text'"),
        ("\n\n", "holds no passages"),
    ],
)
def test_malformed_corpus_names_file_and_line(tmp_path, text, message) -> None:
    path = _write(tmp_path, text, "corpus.jsonl")
    with pytest.raises(DataFormatError) as err:
        load_corpus(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_corpus_needs_official_data() -> None:
    env = HotpotQAEnv(corpus=str(CORPUS))
    with pytest.raises(ValueError, match="only used with an official"):
        env.reset(seed=0)


def test_supporting_titles_may_be_absent_from_a_fullwiki_context() -> None:
    # Fullwiki records carry retrieved paragraphs (fw0001: only Lisbon) and search the corpus.
    (q, _) = load_questions(FULLWIKI, need_context=False)
    assert q.supporting_titles == ("Spain", "Madrid") and [p.title for p in q.context] == ["Lisbon"]
    with pytest.raises(DataFormatError, match="names 'Spain', which is not a title in 'context'"):
        load_questions(FULLWIKI)


def test_non_utf8_files_name_file_and_line(tmp_path) -> None:
    data = _write(tmp_path, "")
    data.write_bytes(
        DISTRACTOR.read_bytes().replace(b"Manzanares", "Manzanar\u00e9s".encode("latin-1"))
    )
    with pytest.raises(DataFormatError, match=r"bad.json: not UTF-8 text \(byte 0xe9 at offset"):
        load_questions(data)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(
        CORPUS.read_bytes() + '{"title": "S\u00e3o Paulo", "text": "x"}\n'.encode("latin-1")
    )
    with pytest.raises(DataFormatError, match=r"corpus.jsonl: line 10: not UTF-8 text"):
        load_corpus(corpus)
    with pytest.raises(DataFormatError, match="absent.jsonl: no such file"):
        load_corpus(tmp_path / "absent.jsonl")
