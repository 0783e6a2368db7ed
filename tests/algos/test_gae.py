"""GAE: token level (verl's recursion) and StepPO's step level (Agent-R1's)."""

import numpy as np
import pytest
import reference_loops as ref
import torch

from algos.gae import gae, step_gae


def test_token_gae_vectors_unwhitened():
    r = torch.tensor([[0.0, 1.0], [0.0, 1.0]])
    v = torch.tensor([[0.4, 0.6], [0.2, 0.5]])
    adv, ret = gae(r, v, torch.ones(2, 2), gamma=0.5, lam=0.5, whiten=False)
    torch.testing.assert_close(adv, torch.tensor([[0.0, 0.4], [0.175, 0.5]]))
    torch.testing.assert_close(ret, torch.tensor([[0.4, 1.0], [0.375, 1.0]]))


def test_token_gae_skips_interior_observation_tokens():
    r = torch.tensor([[0.0, 0.0, 1.0]])
    v = torch.tensor([[0.4, 9.0, 0.6]])
    m = torch.tensor([[1.0, 0.0, 1.0]])
    adv, ret = gae(r, v, m, gamma=0.5, lam=0.5, whiten=False)
    torch.testing.assert_close(adv, torch.tensor([[0.0, 0.0, 0.4]]))
    torch.testing.assert_close(ret, torch.tensor([[0.4, 0.0, 1.0]]))


def test_token_gae_multi_step_timeline():
    # §5.3: steps of 2 and 3 action tokens on one concatenated timeline, reward 1 at the end.
    v = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.5]], dtype=torch.float64)
    r = torch.tensor([[0.0, 0, 0, 0, 1]], dtype=torch.float64)
    adv, _ = gae(r, v, torch.ones(1, 5, dtype=torch.float64), gamma=0.9, lam=0.8, whiten=False)
    np.testing.assert_allclose(adv[0], [0.314536, 0.325744, 0.3552, 0.41, 0.5], atol=1e-6)


def test_token_gae_whitening_matches_reference():
    r = [[0.0, 1.0], [0.0, 1.0]]
    v = [[0.4, 0.6], [0.2, 0.5]]
    adv, _ = gae(torch.tensor(r), torch.tensor(v), torch.ones(2, 2), gamma=0.5, lam=0.5)
    exp, _ = ref.token_gae(r, v, [[1, 1], [1, 1]], 0.5, 0.5)
    np.testing.assert_allclose(adv, exp, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_token_gae_matches_loop(seed):
    rng = np.random.default_rng(seed)
    m = (rng.random((7, 9)) < 0.7).astype(float)
    r = rng.normal(size=(7, 9))
    v = rng.normal(size=(7, 9))
    v[m == 0] = np.nan  # garbage at masked positions must not leak
    adv, ret = gae(torch.tensor(r), torch.tensor(v), torch.tensor(m), gamma=0.9, lam=0.7)
    exp_adv, exp_ret = ref.token_gae(r.tolist(), v.tolist(), m.tolist(), 0.9, 0.7)
    np.testing.assert_allclose(adv, exp_adv, atol=1e-10)
    np.testing.assert_allclose(ret, exp_ret, atol=1e-10)


def test_step_gae_vector_and_row_order():
    # §5.2: X = [(r=0, V=.4), (r=1, V=.6)], Y = [(r=0, V=.2)], gamma = lambda = .5.
    args = ([0.0, 1.0, 0.0], [0.4, 0.6, 0.2], torch.ones(3, 2), ["X", "X", "Y"], [0, 1, 0])
    adv, ret = step_gae(*args, gamma=0.5, lam=0.5, whiten=False)
    np.testing.assert_allclose(adv[:, 0], [0.0, 0.4, -0.2], atol=1e-7)
    np.testing.assert_allclose(ret[:, 0], [0.4, 1.0, 0.0], atol=1e-7)
    adv, _ = step_gae(*args, gamma=0.5, lam=0.5)
    np.testing.assert_allclose(adv[:, 0], [-0.218218, 1.091089, -0.872872], atol=1e-6)
    perm = [2, 1, 0]
    shuffled = [[a[i] for i in perm] if isinstance(a, list) else a for a in args]
    adv_s, _ = step_gae(*shuffled, gamma=0.5, lam=0.5)
    assert torch.equal(adv_s, adv[perm])


def test_step_gae_bootstrap_and_padding():
    # A truncated trajectory bootstraps from V(s_T) = 2 on its last row.
    _, ret = step_gae(
        [0.0], [0.5], torch.ones(1, 1), ["a"], [0], gamma=0.5, whiten=False, bootstrap_value=[2.0]
    )
    assert ret[0, 0].item() == 1.0
    base, _ = step_gae(
        [0.0, 1.0, 0.0], [0.4, 0.6, 0.2], torch.ones(3, 2), ["X", "X", "Y"], [0, 1, 0]
    )
    adv, _ = step_gae(
        [0.0, 1.0, 7.0, 0.0], [0.4, 0.6, 3.0, 0.2], torch.ones(4, 2), ["X", "X", None, "Y"], [0, 1, 0, 0],
        sample_mask=[True, True, False, True],
    )  # fmt: skip
    assert torch.equal(adv[[0, 1, 3]], base) and torch.all(adv[2] == 0)


def test_step_gae_single_row_and_2d_value():
    adv, _ = step_gae([1.0], [0.0], torch.ones(1, 2), ["a"], [0])
    assert torch.all(adv == 0)
    with pytest.raises(ValueError, match=r"values\[:, 0\]"):
        step_gae([1.0], torch.zeros(1, 2), torch.ones(1, 2), ["a"], [0])


@pytest.mark.parametrize("seed", range(3))
def test_step_gae_matches_loop(seed):
    b = ref.random_batch(np.random.default_rng(seed))
    value = np.random.default_rng(seed + 10).normal(size=len(b["step_reward"]))
    adv, ret = step_gae(
        b["step_reward"], value, b["response_mask"], b["traj_uid"], b["step_index"],
        gamma=0.9, lam=0.8, sample_mask=b["sample_mask"],
    )  # fmt: skip
    exp_adv, exp_ret = ref.step_gae(
        b["step_reward"], value, b["traj_uid"], b["step_index"], 0.9, 0.8, True, b["sample_mask"]
    )
    m = b["response_mask"]
    torch.testing.assert_close(
        adv, torch.from_numpy(exp_adv).float()[:, None] * m, atol=1e-5, rtol=1e-5
    )
    torch.testing.assert_close(
        ret, torch.from_numpy(exp_ret).float()[:, None] * m, atol=1e-5, rtol=1e-5
    )


def test_token_estimators_name_a_non_finite_input():
    """A NaN reward or value under the mask would turn the whole batch's whitening NaN."""
    from algos.outcome import reinforce_pp_token

    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    rewards = torch.zeros(2, 3)
    values = torch.zeros(2, 3)
    values[0, 2] = float("nan")  # off the mask: ignored, as before
    gae(rewards, values, mask)
    values[1, 1] = float("inf")
    with pytest.raises(ValueError, match=r"values\[1, 1\] = inf is not finite"):
        gae(rewards, values, mask)
    rewards[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"token_level_rewards\[0, 1\] = nan is not finite"):
        gae(rewards, torch.zeros(2, 3), mask)
    with pytest.raises(ValueError, match=r"token_level_rewards\[0, 1\] = nan is not finite"):
        reinforce_pp_token(rewards, mask)


def test_step_gae_links_across_a_missing_step_index():
    """Steps 0 and 2 with no row for step 1: step 0's successor is step 2 (documented).

    Agent-R1 places rows by step index in a dense timeline, so a gap is a zero step there
    (r = 0, V = 0); here the rows are linked in step order, as if the gap were not there.
    """
    mask = torch.ones(2, 1)
    reward, value = [0.0, 1.0], [0.5, 0.25]
    gap = step_gae(reward, value, mask, ["t", "t"], [0, 2], gamma=0.9, lam=1.0, whiten=False)
    dense = step_gae(reward, value, mask, ["t", "t"], [0, 1], gamma=0.9, lam=1.0, whiten=False)
    torch.testing.assert_close(gap[0], dense[0])
    # By hand: A_1 = 1 - 0.25 = 0.75; A_0 = 0 + 0.9 * 0.25 - 0.5 + 0.9 * 0.75 = 0.4.
    torch.testing.assert_close(gap[0][:, 0], torch.tensor([0.4, 0.75]))
