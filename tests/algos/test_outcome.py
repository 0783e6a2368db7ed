"""Outcome estimators: hand-computed test vectors, multi-turn units, padding, loops."""

import numpy as np
import pytest
import reference_loops as ref
import torch

from algos.outcome import (
    drgrpo,
    grpo,
    reinforce_pp,
    reinforce_pp_baseline,
    reinforce_pp_token,
    rloo,
)

# §4: group g = [1, 0, 1, 1] and singleton group h = [0.5]; one step per trajectory;
# response lengths [2, 1, 1, 2, 1].
REWARD = [1.0, 0.0, 1.0, 1.0, 0.5]
INDEX = ["g", "g", "g", "g", "h"]
TRAJ = ["t0", "t1", "t2", "t3", "t4"]
MASK = torch.tensor([[1, 1], [1, 0], [1, 0], [1, 1], [1, 0]], dtype=torch.float32)


def tokens(adv):
    return adv[MASK.bool()].tolist()


def test_grpo_vector():
    adv, ret = grpo(REWARD, MASK, INDEX, TRAJ)
    np.testing.assert_allclose(
        adv[:, 0], [0.499999, -1.499997, 0.499999, 0.499999, 0.499999], atol=1e-6
    )
    assert torch.equal(adv, ret)
    assert adv[1, 1] == 0 and adv[0, 1] == adv[0, 0]  # broadcast times the mask


def test_drgrpo_vector():
    adv, _ = drgrpo(REWARD, MASK, INDEX, TRAJ)
    np.testing.assert_allclose(adv[:, 0], [0.25, -0.75, 0.25, 0.25, 0.5])
    torch.testing.assert_close(adv, grpo(REWARD, MASK, INDEX, TRAJ, norm_by_std=False)[0])


def test_rloo_vector_and_singleton_rules():
    adv, _ = rloo(REWARD, MASK, INDEX, TRAJ)
    np.testing.assert_allclose(adv[:, 0], [1 / 3, -1.0, 1 / 3, 1 / 3, 0.5], atol=1e-6)
    adv0, _ = rloo(REWARD, MASK, INDEX, TRAJ, singleton="zero")
    assert adv0[4, 0] == 0.0


def test_reinforce_pp_baseline_vector():
    adv, _ = reinforce_pp_baseline(REWARD, MASK, INDEX, TRAJ)
    np.testing.assert_allclose(
        tokens(adv), [0.26482, 0.26482, -2.206837, 0.26482, 0.26482, 0.26482, 0.882735], atol=1e-5
    )


def test_reinforce_pp_token_vector():
    rewards = torch.tensor([[0.0, 0, 1], [0, 2, 0]])
    mask = torch.tensor([[1.0, 1, 1], [1, 1, 0]])
    adv, ret = reinforce_pp_token(rewards, mask, gamma=0.5)
    torch.testing.assert_close(ret, torch.tensor([[0.25, 0.5, 1.0], [1.0, 2.0, 0.0]]))
    np.testing.assert_allclose(
        adv[mask.bool()].tolist(), [-1.043498, -0.67082, 0.074536, 0.074536, 1.565248], atol=1e-5
    )


def test_step_reinforce_pp_equals_token_version_for_single_step_outcomes():
    # One step per trajectory, reward on the last action token, gamma = 1: the two agree.
    tok_rewards = torch.zeros_like(MASK)
    last = MASK.sum(1).long() - 1
    tok_rewards[torch.arange(5), last] = torch.tensor(REWARD)
    adv_tok, ret_tok = reinforce_pp_token(tok_rewards, MASK)
    adv, ret = reinforce_pp(REWARD, MASK, TRAJ, [0] * 5)
    torch.testing.assert_close(adv, adv_tok)
    torch.testing.assert_close(ret, ret_tok)


def test_reinforce_pp_discounts_over_steps():
    adv, ret = reinforce_pp([1.0, 0.0, 0.0], torch.ones(3, 1), ["a"] * 3, [2, 0, 1], gamma=0.5)
    assert ret[:, 0].tolist() == [1.0, 0.25, 0.5]


# §4 multi-turn: X = 1 over 2 steps, Y = 0, Z = 0.5 over 3 steps, one task group.
MT = {
    "step_reward": [0.0, 1.0, 0.0, 0.0, 0.0, 0.5],
    "index": ["q"] * 6,
    "traj_uid": ["X", "X", "Y", "Z", "Z", "Z"],
}


def test_grpo_multi_turn_units():
    mask = torch.ones(6, 1)
    va, _ = grpo(MT["step_reward"], mask, MT["index"], MT["traj_uid"])
    np.testing.assert_allclose(
        va[:, 0], [1.107016, 1.107016, -1.549822, -0.221403, -0.221403, -0.221403], atol=1e-6
    )
    ar, _ = grpo(
        MT["step_reward"], mask, MT["index"], MT["traj_uid"], group_stats_unit="trajectory"
    )
    np.testing.assert_allclose(ar[:, 0], [0.999998, 0.999998, -0.999998, 0, 0, 0], atol=1e-6)
    with pytest.raises(ValueError, match="group_stats_unit"):
        grpo(MT["step_reward"], mask, MT["index"], MT["traj_uid"], group_stats_unit="episode")


def test_constant_non_binary_group_is_exactly_zero():
    r = [10 * 0.95**2] * 6
    for fn in (grpo, drgrpo, rloo):
        adv, _ = fn(r, torch.ones(6, 2), ["g"] * 6, [f"t{i}" for i in range(6)])
        assert torch.all(adv == 0), fn.__name__


def test_padding_rows_excluded():
    base, _ = grpo(REWARD, MASK, INDEX, TRAJ)
    mask = torch.cat([MASK, torch.ones(2, 2)])
    adv, _ = grpo(
        REWARD + [5.0, 5.0], mask, INDEX + [None, None], TRAJ + [None, None],
        sample_mask=[True] * 5 + [False] * 2,
    )  # fmt: skip
    assert torch.equal(adv[:5], base) and torch.all(adv[5:] == 0)
    all_pad, _ = grpo([1.0], torch.ones(1, 2), [None], [None], sample_mask=[False])
    assert torch.all(all_pad == 0)


def test_empty_batch():
    for fn in (grpo, rloo, reinforce_pp_baseline):
        adv, ret = fn([], torch.zeros(0, 4), [], [])
        assert adv.shape == ret.shape == (0, 4)
    adv, _ = reinforce_pp([], torch.zeros(0, 4), [], [])
    assert adv.shape == (0, 4)


def _shuffle(b, perm):
    return {
        k: (v[perm] if isinstance(v, (np.ndarray, torch.Tensor)) else [v[i] for i in perm])
        for k, v in b.items()
    }


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("unit", ["step_row", "trajectory"])
def test_matches_loop_reference(seed, unit):
    b = ref.random_batch(np.random.default_rng(seed))
    args = (b["step_reward"], b["response_mask"], b["index"], b["traj_uid"])
    sm = b["sample_mask"]
    m = b["response_mask"].double()

    def close(adv, per_row):
        torch.testing.assert_close(
            adv.double(), torch.from_numpy(per_row)[:, None] * m, atol=2e-6, rtol=1e-5
        )

    for norm in (True, False):
        adv, _ = grpo(*args, norm_by_std=norm, group_stats_unit=unit, sample_mask=sm)
        close(
            adv, ref.grpo(b["step_reward"], b["index"], b["traj_uid"], norm, unit, sample_mask=sm)
        )
    for single in ("raw", "zero"):
        adv, _ = rloo(*args, group_stats_unit=unit, singleton=single, sample_mask=sm)
        close(
            adv, ref.rloo(b["step_reward"], b["index"], b["traj_uid"], unit, single, sample_mask=sm)
        )
    adv, _ = reinforce_pp_baseline(*args, group_stats_unit=unit, sample_mask=sm)
    close(
        adv,
        ref.reinforce_pp_baseline(
            b["step_reward"], b["index"], b["traj_uid"], b["tokens"], unit, sm
        ),
    )
    adv, ret = reinforce_pp(
        b["step_reward"],
        b["response_mask"],
        b["traj_uid"],
        b["step_index"],
        gamma=0.9,
        sample_mask=sm,
    )
    exp_adv, exp_ret = ref.reinforce_pp(
        b["step_reward"], b["traj_uid"], b["step_index"], b["tokens"], 0.9, sm
    )
    close(adv, exp_adv)
    close(ret, exp_ret)


def test_permutation_invariance():
    rng = np.random.default_rng(7)
    b = ref.random_batch(rng)
    perm = rng.permutation(len(b["step_reward"]))
    s = _shuffle(b, perm)
    for fn in (grpo, rloo, reinforce_pp_baseline):
        base, _ = fn(
            b["step_reward"],
            b["response_mask"],
            b["index"],
            b["traj_uid"],
            sample_mask=b["sample_mask"],
        )
        adv, _ = fn(
            s["step_reward"],
            s["response_mask"],
            s["index"],
            s["traj_uid"],
            sample_mask=s["sample_mask"],
        )
        assert torch.equal(adv, base[perm]), fn.__name__
