"""The env on a 5-paper fixture corpus, with rewards computed by hand.

Fixture (fixtures/papers.jsonl): P1 "Attention Is All You Need" (cited by P2, P3, P4),
P2 BERT, P3 Graph Attention Networks, P4 Sparse Transformers, P5 a CNN paper. Query q1,
"efficient transformer attention for long sequences", has gold {P2, P4}. The rule selector
gives gold papers 1.0 and others 0.3 x the share of the query's 5 terms (efficient,
transformer, attention, long, sequence) in title and abstract: P1 has transformer and
attention, so 0.3 * 2/5 = 0.12; P3 has attention only, 0.06.

The reward cases here use ``accounting="paperscout"`` (costs 0.1/0.05, sequential calls);
test_paper_search_accounting.py sets the same actions against the default, Agent-R1's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_gym.core import INFO_KEYS
from agent_gym.envs.paper_search.env import PaperSearchEnv

FIX = Path(__file__).parent / "fixtures"
P1, P2, P3, P4, P5 = (f"2001.0000{i}" for i in range(1, 6))

# Query q3 of the fixture has no answer in the corpus; the loader tests check that warning.
pytestmark = pytest.mark.filterwarnings("ignore:Paper Search. 1 query answers")


def make(**kw) -> PaperSearchEnv:
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl", **kw)
    env.reset(options={"task_id": "q1"})
    return env


def test_search_rewards_top3_new_scores_minus_cost() -> None:
    env = make(accounting="paperscout")
    obs, reward, term, trunc, info = env.step("search[sparse transformers]")
    # Results: P1, P2, P4 (P3 and P5 contain neither term). New scores 1.0, 1.0, 0.12.
    assert reward == pytest.approx(1.0 + 1.0 + 0.12 - 0.1)
    assert info["calls"] == [
        {
            "call": "search[sparse transformers]",
            "reward": 2.02,
            "new_papers": 3,
            "note": "3 results, 3 new papers added",
        }
    ]
    assert (info["recall"], info["precision"], info["won"], info["score"]) == (1.0, 1.0, True, 1.0)
    assert not term and not trunc and info["is_action_valid"]
    assert "[Search] sparse transformers" in info["anchor_obs"]
    assert f"[{P4}] (1.00) [NEW] Sparse Transformers for Long Sequences" in obs
    assert f"[{P1}] (0.12) [NEW]" in obs
    assert set(info) >= set(INFO_KEYS) | {"precision", "recall", "f1"}


def test_discrete_reward_counts_top3_at_least_0_4() -> None:
    env = make(discrete_reward=True, accounting="paperscout")
    _, reward, *_ = env.step("search[sparse transformers]")
    assert reward == pytest.approx(2 - 0.1)
    _, reward, *_ = make(discrete_reward=True).step("search[sparse transformers]")
    assert reward == 2.0  # Agent-R1: no search cost


def test_penalties_and_expand() -> None:
    env = make(accounting="paperscout")
    _, r, *_, info = env.step(f"expand[{P1}]")  # not in the pool yet
    assert r == -0.5 and info["pool_size"] == 0 and info["is_action_valid"]
    env.step("search[sparse transformers]")
    _, r, *_, info = env.step("search[  Sparse   TRANSFORMERS ]")  # same query, normalised
    assert r == -0.5 and info["anchor_obs"].count("[Search]") == 1
    # P1 is cited by P2, P3 and P4 (newest first); P2 and P4 are in the pool, P3 is new (0.06).
    _, r, *_, info = env.step(f"expand[{P1}]")
    assert r == pytest.approx(0.06 - 0.05)
    assert info["calls"][0]["note"] == "3 linked papers, 1 new papers added"
    _, r, *_ = env.step(f"expand[{P1}]")
    assert r == -0.5
    # P4 cites P1, P2 (its third reference is not in the corpus): nothing new.
    _, r, term, _, info = env.step(f"expand[{P4}]\nsearch[graph]\nfinish[]")
    assert r == pytest.approx(-0.05 + (0.0 - 0.1) + 0.0)  # graph search: P3 only, known
    assert term and info["admissible_actions"] == []
    assert "[EXP]" in info["anchor_obs"]


def test_invalid_action_leaves_state_and_ends_episode() -> None:
    env = make()
    env.step("search[sparse transformers]")
    before = env._state_text()
    obs, r, term, trunc, info = env.step("click[buy now]")
    assert (r, term, trunc, info["is_action_valid"]) == (0.0, True, False, False)
    assert info["anchor_obs"] == before and "not a tool call" in obs
    # Stepping an ended episode changes nothing either.
    _, r, term, _, info = env.step("search[graph]")
    assert (r, term, info["is_action_valid"], info["anchor_obs"]) == (0.0, True, False, before)


def test_invalid_action_can_be_a_no_op_instead() -> None:
    env = make(end_on_invalid=False)
    _, _, term, _, info = env.step("")
    assert not term and not info["is_action_valid"] and info["pool_size"] == 0


@pytest.mark.parametrize("end_on_invalid", [True, False])
def test_reward_is_a_float_on_a_step_without_calls(end_on_invalid: bool) -> None:
    # No call ran, so the rewards summed to the int 0; the reward is always a float.
    env = make(end_on_invalid=end_on_invalid)
    for action in ["", "hello"]:
        _, r, *_ = env.step(action)
        assert type(r) is float and r == 0.0, repr(r)


def test_mixed_lines_run_the_valid_calls() -> None:
    env = make(accounting="paperscout")
    _, r, term, _, info = env.step("hello\nsearch[sparse transformers]\n" + "search[x]\n" * 6)
    assert info["is_action_valid"] and not term
    assert len(info["calls"]) == 5 and info["skipped_lines"] == 1 + 2
    assert [c["reward"] for c in info["calls"][2:]] == [-0.5] * 3  # search[x] repeated


def test_reset_by_seed_and_task_id() -> None:
    env = PaperSearchEnv(data=FIX / "papers.jsonl", queries=FIX / "queries.jsonl", split="test")
    _, info = env.reset(seed=0)
    assert info["task_id"] == "q2" and info["num_gold"] == 1  # q3 has no answer in the corpus
    assert info["data_source"] == "jsonl:papers.jsonl"
    with pytest.raises(ValueError, match="task_id='q1' is not in split 'test'"):
        env.reset(options={"task_id": "q1"})


def test_constructor_is_lazy_and_validates() -> None:
    with pytest.raises(ValueError, match="split='valid'"):
        PaperSearchEnv(split="valid")
    with pytest.raises(FileNotFoundError, match="no such papers file"):
        PaperSearchEnv(data="/nonexistent/papers.jsonl")
    with pytest.raises(ValueError, match="selector="):
        PaperSearchEnv(selector="gpt")
    env = PaperSearchEnv(split="dev")
    assert env._corpus is None  # nothing loaded before reset


def test_generated_episode_determinism_and_view_limit() -> None:
    def run() -> list:
        env = PaperSearchEnv(split="dev")
        obs, info = env.reset(seed=11)
        trace = [obs]
        for _ in range(3):
            obs, r, *_, info = env.step(env.expert_action() or "finish[]")
            trace.append((obs, r, info["score"]))
        return trace

    assert run() == run()
    env = PaperSearchEnv(split="dev")
    env.reset(seed=3)
    for t in range(5):
        acts = [a for a in env._admissible() if a.startswith("expand")]
        env.step(f"search[{env.query.text}]" if t == 0 else "\n".join(acts[:5]) or "finish[]")
    listed = [
        line
        for line in env._state_text().split("### Paper List\n")[1].splitlines()
        if line.startswith("[")
    ]
    assert 0 < len(listed) <= 20
