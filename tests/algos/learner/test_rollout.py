"""Rollout: token-in/token-out rows, groups, and the context-length rule."""

from __future__ import annotations

import functools

import keypad_env
import pytest
import torch

from agent_gym.vector import make_vec
from agent_gym.wrappers import ChatPrompt, ParseAction
from algos.algorithms import get_algorithm
from algos.backends.base import SamplingParams
from algos.backends.hf import HFBackend
from algos.batch import StepBatch
from algos.config import AlgoConfig, OptimConfig
from algos.context import drop_oldest_turns, encode, fit_prompt
from algos.env_slots import EnvSlots
from algos.learner import Learner
from algos.models import load_model
from algos.rollout import rollout


def _envs(n: int, history: int = 0, mode: str = "sync"):
    return make_vec(
        keypad_env.ENV_ID,
        n,
        mode=mode,
        wrappers=[
            functools.partial(ParseAction, format="plain"),
            functools.partial(ChatPrompt, history_length=history),
        ],
    )


def test_rows_are_token_in_token_out():
    model, tok = load_model("tiny-random", seed=0)
    backend = HFBackend(model, tok)
    torch.manual_seed(0)
    ro = rollout(
        _envs(4),
        backend,
        seeds=[5, 5, 6, 6],
        groups=[0, 0, 1, 1],
        sampling=SamplingParams(max_new_tokens=3),
    )
    b = ro.batch
    assert isinstance(b, StepBatch) and len(b) == len(b.end_reason)
    assert b.step_index[:4].tolist() == [0, 0, 0, 0]
    assert b.index[:4].tolist() == [0, 0, 1, 1] and b.traj_uid[:4].tolist() == [0, 1, 2, 3]
    # The prompt is the chat template applied once to the observation's messages.
    one = _envs(1)
    obs, _ = one.reset(seed=[5])
    one.close()
    assert b.prompt_ids[0].tolist() == encode(tok, obs[0])
    # The env got the decoded response; the row keeps the sampled ids themselves.
    first = b.response_ids[0][b.response_mask[0] != 0].tolist()
    assert ro.episodes[0].steps[0].action == tok.decode(first, skip_special_tokens=True)
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
    adv, _ = advantages(ro.batch, cfg)
    expected, _ = algos.compute_advantages(
        "gigpo", ro.batch, gamma=cfg.gamma, step_advantage_w=1.0, mode="mean_norm"
    )
    torch.testing.assert_close(adv, expected)
    # A user-registered estimator is found by name, reads the batch fields it names and gets
    # the config options it declares, then estimator_kwargs.
    seen = {}

    def constant(step_reward, response_mask, *, sample_mask, gamma, value):
        seen["rows"], seen["gamma"] = len(step_reward), gamma
        return response_mask * value, response_mask * value

    algos.register_estimator(
        "test_constant",
        constant,
        inputs=("step_reward", "response_mask"),
        options={"gamma": "gamma"},
    )
    try:
        cfg = AlgoConfig(name="grpo", estimator="test_constant", estimator_kwargs={"value": 2.0})
        adv, _ = advantages(ro.batch, cfg)
    finally:  # the registry is global: leave it as the other tests expect it
        del algos.ESTIMATORS["test_constant"]
    assert seen == {"rows": len(ro.batch), "gamma": cfg.gamma}
    assert torch.equal(adv, ro.batch.response_mask * 2.0)
    with pytest.raises(ValueError, match="unknown advantage estimator 'nope'"):
        advantages(ro.batch, AlgoConfig(estimator="nope"))


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


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_context_rule_trims_history_then_ends_the_episode(mode):
    """The env re-renders its prompt with less history, wherever it runs."""
    _, tok = load_model("tiny-random", seed=0)
    slots = EnvSlots(_envs(1, history=3, mode=mode))
    try:
        slots.reset([0])
        for _ in range(2):
            obs = slots.step({0: "x"})[0][0]
        full = encode(tok, obs)
        held = slots.history_size(0)
        assert held == 2
        no_history = encode(tok, slots.messages(0, 0))
        assert len(no_history) < len(full)

        def rerender(k):
            return slots.messages(0, k)

        ids, dropped = fit_prompt(tok, obs, len(full), rerender, held)
        assert ids == full and dropped == 0
        ids, dropped = fit_prompt(tok, obs, len(no_history), rerender, lambda: held)
        assert ids == no_history and dropped == 2
        ids, _ = fit_prompt(tok, obs, len(no_history) - 1, rerender, held)
        assert ids is None  # -> the rollout ends the episode with "context_limit"
    finally:
        slots.close()


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
