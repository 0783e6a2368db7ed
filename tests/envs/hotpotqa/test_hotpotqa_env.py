"""HotpotQAEnv behaviour on the generated set: observation, actions, rewards, info."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agent_gym
from agent_gym.core import INFO_KEYS
from agent_gym.envs.hotpotqa.env import HotpotQAEnv
from agent_gym.envs.hotpotqa.records import Passage
from agent_gym.envs.hotpotqa.state import EpisodeState, render_state

gym.register_envs(agent_gym)


@pytest.fixture()
def env():
    e = HotpotQAEnv(force_first_search=False)
    yield e
    e.close()


def _reset_on(env: HotpotQAEnv, template: str) -> tuple[str, dict]:
    source = env._load()
    qid = next(q.id for q in source.questions("train") if q.template == template)
    return env.reset(seed=0, options={"task_id": qid})


def test_reset_observation_and_info(env) -> None:
    obs, info = _reset_on(env, "bridge_border_currency")
    assert obs.startswith("### Question\n" + info["task"])
    assert "### Searches so far\n(none yet)" in obs and "### Retrieved passages\n(none yet)" in obs
    assert info["anchor_obs"] == obs
    assert info["admissible_actions"] == ["search[<query>]", "answer[<answer>]"]
    assert info["data_source"] == "generated:countryinfo"
    assert (info["won"], info["score"], info["em"], info["f1"]) == (False, 0.0, 0.0, 0.0)
    assert set(INFO_KEYS) - {"is_action_valid"} <= set(info)


def test_force_first_search_searches_the_question() -> None:
    env = HotpotQAEnv()
    obs, info = env.reset(seed=1)
    assert f"[Search] {info['task']}" in obs and "[1] " in obs
    env.close()


def test_parallel_search_dedup_and_reward(env) -> None:
    obs, info = _reset_on(env, "bridge_border_currency")
    question = env._question
    first, second = question.supporting_titles
    obs, reward, term, trunc, info = env.step(f"search[{first}]\nsearch[{second}]")
    assert (reward, term, trunc, info["is_action_valid"]) == (0.0, False, False, True)
    assert f"[Search] {first}\n[Search] {second}" in obs
    assert f"[1] {first} (query: {first})" in obs
    assert obs == info["anchor_obs"]
    # The same search again finds nothing new: the state gains the search, not passages.
    n_passages = obs.count("(query: ")
    obs, *_ = env.step(f"search[{first}]")
    assert obs.count("(query: ") == n_passages and "found no new passages" in obs
    obs, reward, term, trunc, info = env.step(f"answer[The {question.answer}!]")
    assert (reward, term, trunc, info["won"], info["score"]) == (1.0, True, False, True, 1.0)
    assert info["gold_answer"] == question.answer and info["admissible_actions"] == []
    assert "Exact match: 1" in obs


def test_wrong_answer_scores_zero_and_f1_reward() -> None:
    env = HotpotQAEnv(reward="f1", force_first_search=False)
    source = env._load()
    qid = next(q.id for q in source.questions("train") if q.answer == "Washington D.C.")
    env.reset(options={"task_id": qid})
    _, reward, term, _, info = env.step("answer[Washington State]")
    # Tokens washington, state vs washington, dc: P = R = 1/2, F1 = 1/2; EM 0.
    assert (reward, term, info["em"], info["f1"], info["score"], info["won"]) == (
        0.5,
        True,
        0.0,
        0.5,
        0.5,
        False,
    )
    env.close()


def test_yes_no_rule_through_the_env(env) -> None:
    obs, info = _reset_on(env, "comparison_same_subregion")
    wrong = "no" if env._question.answer == "yes" else "yes"
    _, reward, _, _, info = env.step(f"answer[{wrong}]")
    assert (reward, info["f1"]) == (0.0, 0.0)


@pytest.mark.parametrize(
    "action",
    ["", "look", "search[]", "answer[]", "search[a]\nanswer[b]", "search[x]\n" * 5, "click[x]"],
)
def test_invalid_action_leaves_state_unchanged(env, action: str) -> None:
    obs0, info0 = env.reset(seed=2)
    obs, reward, term, trunc, info = env.step(action)
    assert (reward, term, trunc, info["is_action_valid"]) == (0.0, False, False, False)
    assert info["anchor_obs"] == info0["anchor_obs"]
    assert obs.startswith(obs0) and "Invalid action" in obs and "search[<query>]" in obs


def test_step_after_answer_is_invalid(env) -> None:
    env.reset(seed=3)
    env.step("answer[x]")
    obs, reward, term, _, info = env.step("search[y]")
    assert (reward, term, info["is_action_valid"]) == (0.0, True, False)
    assert "already answered" in obs


def test_step_limit_gives_zero_return() -> None:
    env = gym.make("AgentR1/HotpotQA-v0")
    env.reset(seed=0)
    rewards = []
    for _ in range(5):
        _, r, term, trunc, _ = env.step("search[France]")
        rewards.append(r)
    assert (term, trunc, sum(rewards)) == (False, True, 0.0)
    env.close()


def test_any_string_is_safe_to_echo(env) -> None:
    env.reset(seed=0)
    weird = "search[\ud800 \x00\x1b[31m Kenya " + "y" * 200 + "]"
    obs, _, _, _, info = env.step(weird)
    assert info["is_action_valid"] is True
    obs.encode("utf-8")  # lone surrogates and control characters were replaced
    obs, *_ = env.step("search[" + "z" * 301 + "]")
    assert "longer than 300" in obs


def test_budget_drops_oldest_first() -> None:
    state = EpisodeState("Q?")
    state.add("q1", [Passage("A", "a" * 100), Passage("B", "b" * 100)])
    state.add("q2", [Passage("B", "b" * 100), Passage("C", "c" * 100)])  # B deduplicated
    text = render_state(state, passage_chars=50, budget=2 * 90)
    assert "[Search] q1\n[Search] q2" in text
    assert "(1 older passage(s) omitted to fit the budget)" in text
    assert "[1] A" not in text and "[2] B (query: q1)" in text and "[3] C (query: q2)" in text
    assert "b" * 49 + "…" in text and "b" * 51 not in text  # each passage trimmed


def test_expert_action_and_prepare_idempotent() -> None:
    first = HotpotQAEnv.prepare(progress=False)
    assert first == HotpotQAEnv.prepare(progress=False)
    assert "generated:countryinfo" in first and "train 1,920" in first
    env = HotpotQAEnv(force_first_search=False)
    assert env.expert_action() is None  # before reset
    env.reset(seed=0)
    titles = env._question.supporting_titles
    assert env.expert_action() == "\n".join(f"search[{t}]" for t in titles)


def test_constructor_validates_and_is_lazy(tmp_path) -> None:
    env = HotpotQAEnv()
    assert env._source is None  # nothing loaded until reset
    for kwargs, match in [
        ({"split": "validation"}, "split"),
        ({"reward": "acc"}, "reward"),
        ({"top_k": 0}, "top_k"),
    ]:
        with pytest.raises(ValueError, match=match):
            HotpotQAEnv(**kwargs)
    with pytest.raises(FileNotFoundError, match="no such file"):
        HotpotQAEnv(data=str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="task_id"):
        env.reset(options={"task_id": "nope"})


def test_prompt_templates_render_for_each_format() -> None:
    import jinja2

    env = HotpotQAEnv()
    obs, info = env.reset(seed=0)
    for fmt, marker in [("tag", "<action>"), ("tool_call", "<tool_call>"), ("plain", "search[")]:
        ctx = dict(
            observation=obs,
            task=info["task"],
            history=[],
            admissible_actions=[],
            step=0,
            max_steps=5,
            action_format=fmt,
        )
        system = jinja2.Template(HotpotQAEnv.prompt_templates.system).render(**ctx)
        user = jinja2.Template(HotpotQAEnv.prompt_templates.user).render(**ctx)
        assert "research agent" in system and user.startswith("### Question")
        assert marker in user and user.endswith("Step 1 of 5.")
    assert [t.name for t in HotpotQAEnv.tools] == ["search", "answer"]
    assert HotpotQAEnv.tools[0].command.format(query="Kenya") == "search[Kenya]"


def test_long_and_unencodable_answers_are_scored_but_echoed_bounded(env) -> None:
    _, info = _reset_on(env, "bridge_border_currency")
    answer = env._question.answer
    obs, reward, term, _, info = env.step(f"answer[{answer} \ud800{' x' * 50_000}]")
    assert term and reward == 0.0 and 0 < info["f1"] < 0.01  # scored on the whole text
    assert len(info["prediction"]) == 1000 and info["prediction"].startswith(f"{answer} ?")
    assert info["prediction"].encode("utf-8") and obs.encode("utf-8")
    assert len(obs) < 3000


def test_search_history_shows_the_latest_40(env) -> None:
    env.reset(seed=0)
    for i in range(12):  # the unwrapped env has no step limit
        obs, *_ = env.step("\n".join(f"search[q{i} {j} " + "y" * 280 + "]" for j in range(4)))
    assert "(8 earlier searches not shown)\n[Search] q2 0 yyy" in obs
    assert obs.count("[Search] ") == 40
