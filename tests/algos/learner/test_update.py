"""The update: exact micro-batch normalisation, padding rows, non-finite skips."""

from __future__ import annotations

import math

import pytest
import torch

from algos.algorithms import get_algorithm
from algos.batch import StepBatch
from algos.config import AlgoConfig, OptimConfig
from algos.critic import ValueModel
from algos.learner import Learner
from algos.models import load_model
from algos.registry import POLICY_LOSSES


def _batch(n: int = 8, seed: int = 0) -> tuple[StepBatch, torch.Tensor, torch.Tensor]:
    """n random step rows (prompts 3-8 tokens, responses 1-5) with advantages and returns."""
    g = torch.Generator().manual_seed(seed)

    def ids(lo: int, hi: int) -> torch.Tensor:
        return torch.randint(4, 260, (int(torch.randint(lo, hi, (1,), generator=g)),), generator=g)

    prompts = [ids(3, 9) for _ in range(n)]
    resps = [ids(1, 6) for _ in range(n)]
    width = max(len(r) for r in resps)
    response_ids = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width)
    for i, r in enumerate(resps):
        response_ids[i, : len(r)] = r
        mask[i, : len(r)] = 1.0
    b = StepBatch(
        prompt_ids=prompts,
        response_ids=response_ids,
        response_mask=mask,
        step_reward=torch.zeros(n),
        index=list(range(n)),
        traj_uid=list(range(n)),
        step_index=[0] * n,
        old_log_prob=(-5.5 + 0.1 * torch.randn(n, width, generator=g)) * mask,
        values=torch.zeros(n, width),
    )
    adv = torch.randn(n, 1, generator=g).expand(n, width).clone() * mask
    ret = torch.randn(n, width, generator=g) * mask
    return b, adv, ret


def _grads(
    algo: str, micro: int, data: tuple, agg: str = "token-mean", tree: int = 0
) -> dict[str, torch.Tensor]:
    batch, adv, ret = data
    model, tok = load_model("tiny-random", seed=0)
    a = get_algorithm(algo)
    critic = ValueModel(model) if a.critic else None
    ocfg = OptimConfig(
        mini_batch_size=len(batch), micro_batch_size=micro, lr=0.0, critic_lr=0.0,
        max_grad_norm=1e9, tree_tokens=tree,
    )  # fmt: skip
    learner = Learner(model, tok, a, AlgoConfig(loss_agg=agg), ocfg, critic=critic)
    learner._mini_batch_step(batch, adv, ret if critic is not None else None, train_actor=True)
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
    data = _batch()
    one = _grads(algo, 8, data, agg)
    four = _grads(algo, 2, data, agg)
    assert one.keys() == four.keys() and one
    for k in one:
        torch.testing.assert_close(one[k], four[k], rtol=1e-4, atol=1e-6, msg=k)


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean"])
def test_token_trees_give_the_mini_batch_gradient(agg):
    """Rows cut into token trees (``optim.tree_tokens``; small here, so several trees) give
    the gradient of micro-batches of rows: repeated prompts, a shared start, a repeated row."""
    batch, adv, ret = _batch(10)
    start = batch.prompt_ids[0]
    batch.prompt_ids[1:4] = [torch.cat([start, p]) for p in batch.prompt_ids[1:4]]
    batch.prompt_ids[5:7] = [batch.prompt_ids[4], batch.prompt_ids[4]]
    batch.response_ids[9], batch.response_mask[9] = batch.response_ids[8], batch.response_mask[8]
    batch.prompt_ids[9] = batch.prompt_ids[8]
    rows = _grads("grpo", 3, (batch, adv, ret), agg)
    for tree in (12, 1000):  # tiny-random runs sdpa attention, which takes the trees
        trees = _grads("grpo", 3, (batch, adv, ret), agg, tree=tree)
        assert rows.keys() == trees.keys() and rows
        for k in rows:
            torch.testing.assert_close(trees[k], rows[k], rtol=1e-4, atol=1e-6, msg=k)


def test_padding_rows_change_nothing():
    batch, adv, ret = _batch(6)
    plain = _grads("grpo", 3, (batch, adv, ret))
    # The same rows plus two padding rows (sample_mask False, zero masks, garbage targets).
    padded = batch.pad_to(8)
    assert padded.sample_mask.tolist() == [True] * 6 + [False] * 2

    def widen(t):
        return torch.cat([t, torch.full((2, t.shape[1]), 7.0)])

    grads = _grads("grpo", 3, (padded, widen(adv), widen(ret)))
    for k in plain:
        torch.testing.assert_close(plain[k], grads[k], rtol=1e-4, atol=1e-6, msg=k)


def test_non_finite_loss_skips_the_step():
    model, tok = load_model("tiny-random", seed=0)
    before = {k: p.detach().clone() for k, p in model.named_parameters()}
    learner = Learner(model, tok, get_algorithm("grpo"), AlgoConfig(), OptimConfig(lr=1e-2))
    batch, adv, _ = _batch()
    adv[0, 0] = math.nan
    metrics = learner.update(batch, adv, seed=0)
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
    batch, adv, _ = _batch()
    batch.old_log_prob = learner.score(batch, "logp")
    learner.update(batch, adv, seed=0)
    after = learner.score(batch, "logp")
    delta = ((after - batch.old_log_prob) * batch.response_mask).sum(-1)
    sign = adv[:, 0].sign()
    assert (delta * sign > 0).float().mean() >= 0.75


def test_a_registered_policy_loss_is_used():
    """``algo.policy_loss`` names any loss in ``algos.POLICY_LOSSES``."""
    model, tok = load_model("tiny-random", seed=0)
    cfg = AlgoConfig(policy_loss="reinforce")
    learner = Learner(model, tok, get_algorithm("grpo"), cfg, OptimConfig())
    assert learner.policy_loss is POLICY_LOSSES["reinforce"]
    with pytest.raises(ValueError, match="unknown policy loss 'nope'"):
        Learner(model, tok, get_algorithm("grpo"), AlgoConfig(policy_loss="nope"), OptimConfig())


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean"])
def test_skipping_zero_advantage_rows_is_exact(agg):
    """Rows whose advantages are all 0 are not forwarded; the gradient is the same.

    (Up to float32 rounding: the remaining rows are grouped into other micro-batches.)
    """
    batch, adv, _ = _batch(n=8, seed=3)
    adv[[0, 2, 3, 6]] = 0.0  # e.g. groups whose members all got the same reward

    def grads(skip: bool) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
        model, tok = load_model("tiny-random", seed=0)
        ocfg = OptimConfig(mini_batch_size=8, micro_batch_size=2, lr=0.0, max_grad_norm=1e9)
        learner = Learner(model, tok, get_algorithm("grpo"), AlgoConfig(loss_agg=agg), ocfg)
        learner.skip_zero_advantage = skip
        metrics = learner._mini_batch_step(batch, adv, None, train_actor=True)
        return {k: p.grad.clone() for k, p in model.named_parameters()}, metrics

    (skipped, m_skip), (full, m_full) = grads(True), grads(False)
    assert m_skip["rows_skipped"] == 4.0 and "rows_skipped" not in m_full
    for k in full:
        # Float32 rounding is relative to the tensor's scale: an entry near 0 in a gradient
        # whose largest entry is ~1 may differ by ~1e-8 (seen in the embedding's gradient).
        scale = float(full[k].abs().max())
        torch.testing.assert_close(skipped[k], full[k], rtol=1e-5, atol=1e-6 * scale, msg=k)
    assert m_skip["pg_loss"] == pytest.approx(m_full["pg_loss"], abs=1e-7)


def test_an_all_zero_mini_batch_still_steps_adamw():
    """No row has a gradient: zero gradients (not None) keep AdamW's step identical."""
    batch, adv, _ = _batch(n=4, seed=1)
    adv.zero_()
    params = []
    for skip in (True, False):
        model, tok = load_model("tiny-random", seed=0)
        ocfg = OptimConfig(mini_batch_size=4, micro_batch_size=2, lr=1e-2, weight_decay=0.5)
        learner = Learner(model, tok, get_algorithm("grpo"), AlgoConfig(), ocfg)
        learner.skip_zero_advantage = skip
        before = {k: p.detach().clone() for k, p in model.named_parameters()}
        learner.update(batch, adv, seed=0)
        params.append({k: p.detach().clone() for k, p in model.named_parameters()})
    for k in params[1]:
        assert torch.equal(params[0][k], params[1][k]), k
    assert not torch.equal(params[0]["model.norm.weight"], before["model.norm.weight"])


def test_the_output_layer_gets_a_contiguous_copy_only_when_training():
    """A strided input with a gradient is copied (the fast path on CPU; same logits, same
    gradient); sampling's input, which has none, is left as it is."""
    model, _ = load_model("tiny-random", seed=0)
    head = model.get_output_embeddings()
    seen = []
    head.register_forward_pre_hook(lambda module, args: seen.append(args[0].is_contiguous()))
    ids = torch.randint(4, 260, (3, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(input_ids=ids, logits_to_keep=4)
    assert seen == [False]  # hidden[:, -4:, :], untouched
    seen.clear()
    kept = model(input_ids=ids, logits_to_keep=4).logits
    assert seen == [True]
    kept.logsumexp(-1).sum().backward()
    got = {k: p.grad.clone() for k, p in model.named_parameters()}
    model.zero_grad()
    full = model(input_ids=ids).logits  # every position: a contiguous input, no copy
    torch.testing.assert_close(kept, full[:, -4:], rtol=1e-5, atol=1e-6)
    full[:, -4:].logsumexp(-1).sum().backward()
    for k, p in model.named_parameters():
        torch.testing.assert_close(got[k], p.grad, rtol=1e-4, atol=1e-7, msg=k)
