"""Rollout: token-in/token-out rows, groups, and the context-length rule."""

from __future__ import annotations

import gymnasium as gym
import keypad_env
import torch

from agent_gym.wrappers import ChatPrompt, ParseAction
from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.context import drop_oldest_turns, encode, fit_prompt
from algos.learner import TrainBatch
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
    assert ro.rows and all(r.step == 0 for r in ro.rows[:4])
    first = ro.rows[0]
    # The prompt is the chat template applied once to the observation's messages.
    obs, _ = _envs(1)[0].reset(seed=5)
    assert first.prompt_ids == encode(tok, obs)
    # The env got the decoded response; the row keeps the sampled ids themselves.
    assert first.action == tok.decode(first.response_ids, skip_special_tokens=True)
    assert [r.group for r in ro.rows[:4]] == [0, 0, 1, 1]
    # The rollout's log-probs are what the learner computes for the same ids.
    batch = TrainBatch.from_ids([r.prompt_ids for r in ro.rows], [r.response_ids for r in ro.rows])
    from algos.algorithms import get_algorithm
    from algos.config import AlgoConfig, OptimConfig
    from algos.learner import Learner

    learner = Learner(
        model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(micro_batch_size=5)
    )
    recomputed = learner.score(batch, "logp")
    for i, r in enumerate(ro.rows):
        torch.testing.assert_close(
            recomputed[i, : len(r.logprobs)], torch.tensor(r.logprobs), atol=1e-4, rtol=1e-4
        )
    # Episodes end on terminated/truncated, with the flag on the last row.
    for ep in ro.episodes:
        last = [r for r in ro.rows if r.traj == ep.traj][-1]
        assert last.end_reason == ep.end_reason in ("terminated", "truncated")


def test_group_members_start_identically():
    model, tok = load_model("tiny-random", seed=0)
    ro = rollout(
        _envs(2),
        HFBackend(model, tok),
        seeds=[3, 3],
        groups=[0, 0],
        sampling=SamplingParams(max_new_tokens=2),
    )
    r0 = [r for r in ro.rows if r.traj == 0][0]
    r1 = [r for r in ro.rows if r.traj == 1][0]
    assert r0.prompt_ids == r1.prompt_ids and r0.anchor_obs == r1.anchor_obs


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
    assert not ro.rows
    assert [e.end_reason for e in ro.episodes] == ["context_limit", "context_limit"]
