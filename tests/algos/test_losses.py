"""Losses: hand-computed test values (docs/algorithms.md, losses), gradient checks, registries."""

import math

import pytest
import torch

import algos
from algos.losses import (
    agg_loss,
    entropy_from_logits,
    gspo_loss,
    kl_estimate,
    ppo_clip_loss,
    reinforce_loss,
    value_loss,
    value_mask,
)

L = torch.tensor([[1.0, 2, 3], [4, 0, 0]])
M = torch.tensor([[1.0, 1, 1], [1, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "kw", "expected"),
    [
        ("token-mean", {}, 2.5),
        ("seq-mean-token-sum", {}, 5.0),
        ("seq-mean-token-mean", {}, 3.0),
        ("seq-mean-token-sum-norm", {}, 10 / 3),
        ("seq-mean-token-sum-norm", {"loss_scale_factor": 5}, 2.0),
        ("token-mean", {"batch_num_tokens": 8, "dp_size": 2}, 2.5),
        ("seq-mean-token-sum", {"global_batch_size": 4, "dp_size": 2}, 5.0),
    ],
)
def test_agg_loss_modes(mode, kw, expected):
    assert agg_loss(L, M, mode, **kw).item() == pytest.approx(expected, rel=1e-6)


def test_agg_loss_mini_batch_normaliser_makes_accumulation_exact():
    torch.manual_seed(0)
    loss_mat = torch.randn(6, 5, requires_grad=True)
    mask = (torch.rand(6, 5) < 0.6).float()
    mask[2] = 0  # a row without tokens
    for mode in (
        "token-mean",
        "seq-mean-token-sum",
        "seq-mean-token-mean",
        "seq-mean-token-sum-norm",
    ):
        full = agg_loss(loss_mat, mask, mode)
        kw = {
            "batch_num_tokens": mask.sum().item(),
            "global_batch_size": (mask.sum(1) > 0).sum().item(),
        }
        parts = sum(agg_loss(loss_mat[s], mask[s], mode, **kw) for s in (slice(0, 2), slice(2, 6)))
        assert parts.item() == pytest.approx(full.item(), rel=1e-6), mode


def test_agg_loss_zero_safe_and_nan_in_masked_positions():
    x = torch.tensor([[float("nan"), 1.0]], requires_grad=True)
    for mode in algos.AGG_MODES:
        loss = agg_loss(x, torch.tensor([[0.0, 0.0]]), mode)
        loss.backward()
        assert loss.item() == 0.0 and torch.all(x.grad == 0)
        assert agg_loss(x, torch.tensor([[0.0, 1.0]]), mode).isfinite()
    with pytest.raises(ValueError, match="token-mean"):
        agg_loss(L, M, "token-sum")


def _ppo_inputs():
    adv = torch.tensor([[1.0, -1.0, -1.0, 1.0]])
    ratio = torch.tensor([[1.5, 0.5, 4.0, 0.9]])
    return torch.zeros(1, 4), ratio.log(), adv, torch.ones(1, 4)


def test_ppo_clip_vector():
    old, logp, adv, mask = _ppo_inputs()
    loss, m = ppo_clip_loss(old, logp, adv, mask)
    assert loss.item() == pytest.approx(0.425, abs=1e-6)  # per token [-1.2, 0.8, 3.0, -0.9]
    assert m["pg_clipfrac"].item() == 0.5
    assert m["pg_clipfrac_lower"].item() == 0.25
    assert m["ppo_kl"].item() == pytest.approx(-0.248313, abs=1e-6)
    loss_high, _ = ppo_clip_loss(old, logp, adv, mask, clip_high=0.28)
    assert loss_high.item() == pytest.approx(0.405, abs=1e-6)
    with pytest.raises(ValueError, match="clip_c"):
        ppo_clip_loss(old, logp, adv, mask, clip_c=1.0)


def test_ppo_clip_gradients():
    old, logp, adv, mask = _ppo_inputs()
    logp = logp.double().requires_grad_()
    loss, _ = ppo_clip_loss(old.double(), logp, adv.double(), mask.double())
    loss.backward()
    # d/dlogp of -A*rho is -A*rho/4 where unclipped (token 3 only); clipped tokens get 0.
    expected = torch.tensor([[0.0, 0.0, 0.0, -0.9 / 4]], dtype=torch.float64)
    torch.testing.assert_close(logp.grad, expected)
    torch.manual_seed(0)
    x = torch.randn(3, 5, dtype=torch.float64) * 0.1
    a = torch.randn(3, 5, dtype=torch.float64)
    m = (torch.rand(3, 5) < 0.8).double()
    assert torch.autograd.gradcheck(
        lambda lp: ppo_clip_loss(torch.zeros_like(lp), lp, a, m, clip_low=0.5, clip_high=0.5)[0],
        (x.requires_grad_(),),
    )


def _gspo_inputs():
    log_ratio = torch.tensor(
        [[0.1, -0.1, 0.0], [0.002, 0.002, 0.0], [-0.001, -0.001, -0.001]], dtype=torch.float64
    )
    mask = torch.tensor([[1.0, 1, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.float64)
    adv = torch.tensor([[1.0], [1.0], [-1.0]], dtype=torch.float64).expand(3, 3)
    return log_ratio, mask, adv


def test_gspo_vector_and_gradient():
    log_ratio, mask, adv = _gspo_inputs()
    logp = log_ratio.clone().requires_grad_()
    loss, m = gspo_loss(torch.zeros_like(logp), logp, adv, mask)
    assert loss.item() == pytest.approx(-0.333567, abs=1e-6)
    loss.backward()
    expected = torch.zeros(3, 3, dtype=torch.float64)
    expected[0, :2] = -1 / 6
    torch.testing.assert_close(logp.grad, expected)
    assert m["pg_clipfrac"].item() == pytest.approx(5 / 7)
    assert torch.autograd.gradcheck(
        lambda lp: gspo_loss(torch.zeros_like(lp), lp, adv, mask, clip_low=0.5, clip_high=0.5)[0],
        (log_ratio.clone().requires_grad_(),),
    )


def test_reinforce_loss():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, _ = reinforce_loss(torch.zeros(1, 2), logp, torch.tensor([[2.0, 2.0]]), torch.ones(1, 2))
    assert loss.item() == 6.0  # seq-mean-token-sum of -A*logp
    loss.backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[-2.0, -2.0]]))


def test_kl_estimators():
    logp = torch.tensor([math.log(0.5), math.log(0.25)], dtype=torch.float64)
    ref = torch.tensor([math.log(0.25), math.log(0.5)], dtype=torch.float64)
    table = {
        "k1": [0.693147, -0.693147], "kl": [0.693147, -0.693147], "abs": [0.693147, 0.693147],
        "k2": [0.240227, 0.240227], "mse": [0.240227, 0.240227],
        "k3": [0.193147, 0.306853], "low_var_kl": [0.193147, 0.306853],
    }  # fmt: skip
    for kind, expected in table.items():
        torch.testing.assert_close(
            kl_estimate(logp, ref, kind),
            torch.tensor(expected, dtype=torch.float64),
            atol=1e-6,
            rtol=0,
        )
        torch.testing.assert_close(kl_estimate(logp, ref, kind + "+"), kl_estimate(logp, ref, kind))
    x = logp.clone().requires_grad_()
    kl_estimate(x, ref, "k3+").sum().backward()
    torch.testing.assert_close(x.grad, logp - ref)  # straight-through: k2's gradient
    with pytest.raises(NotImplementedError):
        kl_estimate(logp, ref, "full")
    with pytest.raises(ValueError, match="low_var_kl"):
        kl_estimate(logp, ref, "k4")


def test_entropy_from_logits():
    assert entropy_from_logits(torch.zeros(2, 3, 8)).allclose(torch.full((2, 3), math.log(8)))
    logits = torch.randn(4, 10) * 30
    expected = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(entropy_from_logits(logits), expected, atol=1e-4, rtol=1e-4)


def test_value_loss_clip_and_half():
    v, r, old = torch.tensor([[1.5]]), torch.tensor([[1.0]]), torch.tensor([[1.0]])
    loss, m = value_loss(v, r, old, torch.ones(1, 1), clip_eps=0.2)
    assert loss.item() == pytest.approx(0.125)
    assert value_loss(v, r, old, torch.ones(1, 1), clip_eps=0.2, half=False)[
        0
    ].item() == pytest.approx(0.25)
    assert m["vf_clipfrac"].item() == 0.0


def test_value_mask_position_zero_only_for_real_rows():
    rm = torch.tensor([[1.0, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1]])
    vm = value_mask(rm, torch.tensor([True, True, True, False]))
    assert vm.tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]]
    assert value_mask(rm).tolist()[3] == [1, 0, 0]


def test_policy_loss_registry():
    assert algos.POLICY_LOSSES["ppo_clip"].fn is ppo_clip_loss
    assert {"ppo_clip", "gspo", "reinforce"} == set(algos.POLICY_LOSSES)
    with pytest.raises(ValueError, match=r"unknown policy loss 'sapo'.*gspo"):
        algos.get_policy_loss("sapo")
    old, logp, adv, mask = _ppo_inputs()
    for name in ("ppo_clip", "gspo", "reinforce"):
        entry = algos.POLICY_LOSSES[name]
        options = {k: 0.2 for k in entry.options if k != "clip_c"}
        agg = "seq-mean-token-mean" if entry.agg_modes else "token-mean"
        loss, metrics = entry(old, logp, adv, mask, agg=agg, **options)
        assert loss.isfinite() and "ppo_kl" in metrics


def test_losses_reject_unknown_keywords_and_bad_shapes():
    """A misspelled option is an error, never silently ignored; shapes are named."""
    old, logp, adv, mask = _ppo_inputs()
    with pytest.raises(TypeError, match="clip_hi"):
        gspo_loss(old, logp, adv, mask, clip_hi=10.0)
    with pytest.raises(TypeError, match="clip_c"):
        algos.losses.reinforce_loss(old, logp, adv, mask, clip_c=3.0)
    with pytest.raises(ValueError, match="gspo_loss aggregates with 'seq-mean-token-mean'"):
        gspo_loss(old, logp, adv, mask, agg="token-mean")
    # (B,) per-row advantages would broadcast along tokens when B equals L: refused.
    square = torch.ones(3, 3)
    with pytest.raises(ValueError, match=r"advantages has shape \(3,\), response_mask \(3, 3\)"):
        ppo_clip_loss(square, square, torch.ones(3), square)
    with pytest.raises(ValueError, match=r"logp has shape \(3, 2\)"):
        ppo_clip_loss(square, torch.ones(3, 2), square, square)
    with pytest.raises(ValueError, match="returns has shape"):
        algos.losses.value_loss(square, torch.ones(3), square, square)
