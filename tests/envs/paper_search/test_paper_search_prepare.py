"""Caching (prepare), the prompt templates, the doctests and the ``agent-gym play`` command."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from agent_gym.envs.paper_search import cache
from agent_gym.envs.paper_search.env import PaperSearchEnv

FIX = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.filterwarnings("ignore:Paper Search. 1 query answers")
SMALL = {"n_papers": 300, "n_queries": 30, "corpus_seed": 5}


def test_prepare_builds_once_then_reuses_the_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    first = PaperSearchEnv.prepare(progress=False, **SMALL)
    assert "300 papers, 24/3/3 train/dev/test queries, built" in first
    folder = cache.generated_folder(300, 30, 5)
    assert folder.is_relative_to(tmp_path)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["complete", "index", "papers.jsonl", "queries.jsonl"]  # no temp files
    stamp = (folder / "papers.jsonl").stat().st_mtime_ns
    second = PaperSearchEnv.prepare(progress=False, **SMALL)
    assert "already cached" in second and (folder / "papers.jsonl").stat().st_mtime_ns == stamp
    # A cached corpus gives the same episodes as a freshly built one.
    monkeypatch.setattr(cache, "_LOADED", {})
    env = PaperSearchEnv(**SMALL)
    obs, info = env.reset(seed=2)
    built, _, _ = cache.build_generated(300, 30, 5)
    assert info["task"] in {q.text for q in built.queries["train"]}
    assert env.corpus.papers == built.papers


def test_prepare_real_data_indexes_with_progress(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    line = PaperSearchEnv.prepare(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl")
    assert "5 papers, 1/0/1 train/dev/test queries" in line and "1 dangling" in line
    assert "indexing papers.jsonl" in capsys.readouterr().err  # the tqdm bar
    assert list(tmp_path.glob("paper_search/jsonl-*/complete"))


@pytest.mark.parametrize("fmt", ["tag", "tool_call", "plain"])
def test_prompt_templates_render_for_every_action_format(fmt: str) -> None:
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl")
    obs, info = env.reset(options={"task_id": "q1"})
    jenv = jinja2.Environment(undefined=jinja2.StrictUndefined)
    variables = {
        "task": info["task"],
        "observation": obs,
        "history": [],
        "step": 0,
        "max_steps": 5,
        "admissible_actions": info["admissible_actions"],
        "action_format": fmt,
    }
    system = jenv.from_string(env.prompt_templates.system).render(**variables)
    user = jenv.from_string(env.prompt_templates.user).render(**variables)
    for section in (
        "### User Query",
        "### History Actions",
        "### Paper List",
        "### Instructions",
        "### Output Format",
    ):
        assert section in user
    assert "{{" not in user + system and "{%" not in user + system
    marker = {"tag": "<action>", "tool_call": "<tool_call>", "plain": "search[keywords]"}[fmt]
    assert marker in user and "(step 1 of 5)" in user
    assert ("<tool_call>" in system) == (fmt == "tool_call")
    assert [t.schema()["function"]["name"] for t in env.tools] == ["search", "expand", "finish"]
    assert env.tools[1].command.format(paper_id="syn:2101.00001") == "expand[syn:2101.00001]"


@pytest.mark.parametrize(
    "module",
    ["accounting", "actions", "corpus", "loader", "pool", "reward", "search", "selector", "text"],
)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(f"agent_gym.envs.paper_search.{module}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0


def test_cli_play_runs_a_search() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agent_gym.cli", "play", "AgentR1/PaperSearch-v0", "--seed", "1"],
        input="search[graph neural network]\nfinish[]\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "generated:paper-corpus" in out.stdout and "### Paper List" in out.stdout
    assert "[Search] graph neural network" in out.stdout
    assert "Episode over (terminated)" in out.stdout
