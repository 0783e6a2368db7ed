"""Rollout: token-in/token-out rows, groups, and the context-length rule."""

from __future__ import annotations

import gymnasium as gym
import keypad_env
import pytest
import torch

from agent_gym.wrappers import ChatPrompt, ParseAction
from algos.algorithms import get_algorithm
from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.batch import StepBatch
from algos.config import AlgoConfig, OptimConfig
from algos.context import drop_oldest_turns, encode, fit_prompt
from algos.learner import Learner
from algos.models import load_model
from algos.rollout import rollout


def _envs(n: int, history: int = 0):
    return [
        ChatPrompt(ParseAction(gym.make(keypad_env.ENV_ID), format="plain"), history_length=history)
        for _ in range(n)
    ]


def test_rows_are_token_in_token_out():
    model, tok = load_model("tiny-random", seed=0)
    backend = HFBackend(model, tok)
    torch.manual_seed(0)
    envs = _envs(4)
    ro = rollout(
        envs,
        backend,
        seeds=[5, 5, 6, 6],
        groups=[0, 0, 1, 1],
        sampling=SamplingParams(max_new_tokens=3),
    )
    b = ro.batch
    assert isinstance(b, StepBatch) and len(b) == len(b.end_reason) == len(ro.actions)
    assert b.step_index[:4].tolist() == [0, 0, 0, 0]
    assert b.index[:4].tolist() == [0, 0, 1, 1] and b.traj_uid[:4].tolist() == [0, 1, 2, 3]
    # The prompt is the chat template applied once to the observation's messages.
    obs, _ = _envs(1)[0].reset(seed=5)
    assert b.prompt_ids[0].tolist() == encode(tok, obs)
    # The env got the decoded response; the row keeps the sampled ids themselves.
    first = b.response_ids[0][b.response_mask[0] != 0].tolist()
    assert ro.actions[0] == tok.decode(first, skip_special_tokens=True)
    # The rollout's log-probs are what the learner computes for the same ids.
    learner = Learner(
        model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(micro_batch_size=5)
    )
    torch.testing.assert_close(learner.score(b, "logp"), b.old_log_prob, atol=1e-4, rtol=1e-4)
    # Rewards and anchors are the env's: the keypad pays 1 on the winning (terminating) step.
    assert b.anchor_obs[0] == "Keys pressed: 0 of 3. Press a key."
    assert (b.step_reward == 1.0).tolist() == b.terminated.tolist()
    # Episodes end on terminated/truncated, with the flags and the reason on the last row.
    for ep in ro.episodes:
        rows = (b.traj_uid == ep.traj).nonzero()[0]
        last = rows[-1]
        assert b.end_reason[last] == ep.end_reason in ("terminated", "truncated")
        assert bool(b.terminated[last]) == (ep.end_reason == "terminated")
        assert bool(b.truncated[last]) == (ep.end_reason == "truncated")
        assert not b.terminated[rows[:-1]].any() and set(b.end_reason[rows[:-1]]) <= {""}
        assert int(b.is_action_valid[rows].sum()) == ep.valid_actions


def test_group_members_start_identically():
    model, tok = load_model("tiny-random", seed=0)
    ro = rollout(
        _envs(2),
        HFBackend(model, tok),
        seeds=[3, 3],
        groups=[0, 0],
        sampling=SamplingParams(max_new_tokens=2),
    )
    b = ro.batch
    r0, r1 = (int((b.traj_uid == t).nonzero()[0][0]) for t in (0, 1))
    assert torch.equal(b.prompt_ids[r0], b.prompt_ids[r1])
    assert b.anchor_obs[r0] == b.anchor_obs[r1]


def test_the_registry_computes_advantages_of_a_rollout():
    """The trainer's estimators run through ``algos.compute_advantages`` on the StepBatch."""
    import algos
    from algos import registry
    from algos.algorithms import advantages

    model, tok = load_model("tiny-random", seed=0)
    torch.manual_seed(1)
    ro = rollout(
        _envs(4),
        HFBackend(model, tok),
        seeds=[0, 0, 0, 0],
        groups=[0, 0, 0, 0],
        sampling=SamplingParams(max_new_tokens=2),
    )
    cfg = AlgoConfig(gigpo_mode="mean_norm")
    adv, _ = advantages(get_algorithm("gigpo"), ro.batch, cfg)
    expected, _ = algos.compute_advantages(
        "gigpo", ro.batch, gamma=cfg.gamma, step_advantage_w=1.0, mode="mean_norm"
    )
    torch.testing.assert_close(adv, expected)
    # A user-registered estimator is found by name; it gets only estimator_kwargs.
    seen = {}

    def constant(batch, *, value):
        seen["rows"] = len(batch)
        return batch.response_mask * value, batch.response_mask * value

    algos.register_estimator("test_constant", constant, constant)
    try:
        cfg = AlgoConfig(estimator="test_constant", estimator_kwargs={"value": 2.0})
        adv, _ = advantages(get_algorithm("grpo"), ro.batch, cfg)
    finally:  # the registry is global: leave it as the other tests expect it
        del algos.ESTIMATORS["test_constant"]
        del registry._FROM_BATCH["test_constant"]  # no public unregister
    assert seen["rows"] == len(ro.batch) and torch.equal(adv, ro.batch.response_mask * 2.0)
    with pytest.raises(ValueError, match="unknown advantage estimator 'nope'"):
        advantages(get_algorithm("grpo"), ro.batch, AlgoConfig(estimator="nope"))


def test_drop_oldest_turns_keeps_system_and_newest():
    m = [{"role": "system", "content": "s"}]
    for i in range(3):
        m += [{"role": "user", "content": f"o{i}"}, {"role": "assistant", "content": f"a{i}"}]
    m.append({"role": "user", "content": "now"})
    variants = [[x["content"] for x in v] for v in drop_oldest_turns(m)]
    assert variants == [
        ["s", "o1", "a1", "o2", "a2", "now"],
        ["s", "o2", "a2", "now"],
        ["s", "now"],
    ]


def test_context_rule_trims_history_then_ends_the_episode():
    _, tok = load_model("tiny-random", seed=0)
    env = _envs(1, history=3)[0]
    env.reset(seed=0)
    for _ in range(2):
        obs, *_ = env.step("x")
    full = encode(tok, obs)
    from algos.context import chat_prompt_shorter

    shorter = chat_prompt_shorter(env)
    no_history = encode(tok, shorter(0))
    assert len(no_history) < len(full)
    ids, dropped = fit_prompt(tok, obs, len(full), shorter)
    assert ids == full and dropped == 0
    ids, dropped = fit_prompt(tok, obs, len(no_history), shorter)
    assert ids == no_history and dropped == 2
    ids, _ = fit_prompt(tok, obs, len(no_history) - 1, shorter)
    assert ids is None  # -> the rollout ends the episode with "context_limit"


def test_rollout_ends_with_context_limit():
    model, tok = load_model("tiny-random", seed=0)
    ro = rollout(
        _envs(2),
        HFBackend(model, tok),
        seeds=[0, 0],
        groups=[0, 0],
        sampling=SamplingParams(max_new_tokens=2),
        max_prompt_tokens=10,
    )
    assert ro.batch is None and len(ro) == 0
    assert [e.end_reason for e in ro.episodes] == ["context_limit", "context_limit"]
