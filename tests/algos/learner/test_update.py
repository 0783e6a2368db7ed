"""The update: exact micro-batch normalisation, padding rows, non-finite skips."""

from __future__ import annotations

import math

import pytest
import torch

from algos.algorithms import get_algorithm
from algos.config import AlgoConfig, OptimConfig
from algos.critic import ValueModel
from algos.learner import Learner, TrainBatch
from algos.models import load_model


def _batch(n: int = 8, seed: int = 0) -> TrainBatch:
    g = torch.Generator().manual_seed(seed)
    prompts = [
        torch.randint(4, 260, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        for _ in range(n)
    ]
    resps = [
        torch.randint(4, 260, (int(torch.randint(1, 6, (1,), generator=g)),), generator=g).tolist()
        for _ in range(n)
    ]
    b = TrainBatch.from_ids(prompts, resps)
    shape = b.response_mask.shape
    b.old_logp = (-5.5 + 0.1 * torch.randn(shape, generator=g)) * b.response_mask
    b.advantages = torch.randn(n, 1, generator=g).expand(shape).clone() * b.response_mask
    b.returns = torch.randn(shape, generator=g) * b.response_mask
    b.old_values = torch.zeros(shape)
    return b


def _grads(
    algo: str, micro: int, batch: TrainBatch, agg: str = "token-mean"
) -> dict[str, torch.Tensor]:
    model, tok = load_model("tiny-random", seed=0)
    a = get_algorithm(algo)
    critic = ValueModel(model) if a.critic else None
    ocfg = OptimConfig(
        mini_batch_size=len(batch), micro_batch_size=micro, lr=0.0, critic_lr=0.0, max_grad_norm=1e9
    )
    learner = Learner(model, tok, a, AlgoConfig(loss_agg=agg), ocfg, critic=critic)
    learner._mini_batch_step(batch, train_actor=True)
    out = {f"actor.{k}": p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
    if critic is not None:
        out.update(
            {
                f"critic.{k}": p.grad.clone()
                for k, p in critic.named_parameters()
                if p.grad is not None
            }
        )
    return out


@pytest.mark.parametrize(
    ("algo", "agg"),
    [
        ("grpo", "token-mean"),
        ("grpo", "seq-mean-token-mean"),
        ("drgrpo", "seq-mean-token-sum-norm"),
        ("steppo", "seq-mean-token-mean"),
        ("ppo", "token-mean"),
    ],
)
def test_micro_batching_gives_the_mini_batch_gradient(algo, agg):
    batch = _batch()
    one = _grads(algo, 8, batch, agg)
    four = _grads(algo, 2, batch, agg)
    assert one.keys() == four.keys() and one
    for k in one:
        torch.testing.assert_close(one[k], four[k], rtol=1e-4, atol=1e-6, msg=k)


def test_padding_rows_change_nothing():
    batch = _batch(6)
    plain = _grads("grpo", 3, batch)
    # Same rows plus two padding rows (sample_mask False, zero masks, garbage advantages).
    pad = _batch(8, seed=1)
    rows = TrainBatch.from_ids(
        batch.prompt_ids + pad.prompt_ids[:2],
        batch.response_ids + pad.response_ids[:2],
        sample_mask=[True] * 6 + [False] * 2,
    )
    width = rows.response_mask.shape[1]

    def widen(t):
        out = torch.full((8, width), 7.0)
        out[:6, : t.shape[1]] = t
        return out

    rows.old_logp, rows.advantages = widen(batch.old_logp), widen(batch.advantages)
    rows.returns, rows.old_values = widen(batch.returns), widen(batch.old_values)
    padded = _grads("grpo", 3, rows)
    for k in plain:
        torch.testing.assert_close(plain[k], padded[k], rtol=1e-4, atol=1e-6, msg=k)


def test_non_finite_loss_skips_the_step():
    model, tok = load_model("tiny-random", seed=0)
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    learner = Learner(model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(lr=1e-2))
    batch = _batch()
    batch.advantages[0, 0] = math.nan
    metrics = learner.update(batch, seed=0)
    assert metrics["skipped_steps"] >= 1
    for k, p in model.named_parameters():
        assert torch.equal(p, before[k]), k


def test_update_moves_logp_in_the_advantage_direction():
    model, tok = load_model("tiny-random", seed=0)
    learner = Learner(
        model,
        tok,
        get_algorithm("grpo"),
        AlgoConfig(),
        OptimConfig(lr=1e-2, mini_batch_size=8, micro_batch_size=4, ppo_epochs=4),
    )
    batch = _batch()
    batch.old_logp = learner.score(batch, "logp")
    learner.update(batch, seed=0)
    after = learner.score(batch, "logp")
    delta = ((after - batch.old_logp) * batch.response_mask).sum(-1)
    sign = batch.advantages[:, 0].sign()
    assert (delta * sign > 0).float().mean() >= 0.75
