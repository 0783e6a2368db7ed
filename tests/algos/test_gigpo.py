"""GiGPO: test vectors checked against verl-agent, a hand-computed multi-group case, edge cases, loops."""

import math

import numpy as np
import pytest
import reference_loops as ref
import torch

from algos.gigpo import build_step_groups, gigpo_advantage, gigpo_parts, step_discounted_returns

# T1 (verl-agent's core_gigpo on the same rows): one task group, trajectories A (reward on its last step) and B.
T1 = {
    "step_reward": [0, 0, 1, 0, 0, 0],
    "index": ["g"] * 6,
    "traj_uid": ["A", "A", "A", "B", "B", "B"],
    "step_index": [0, 1, 2, 0, 1, 2],
    "anchor_obs": ["s0", "s1", "s2", "s0", "s3", "s3"],
}


def run(batch, mask=None, **kw):
    n = len(batch["step_reward"])
    mask = torch.ones(n, 3) if mask is None else mask
    adv, ret = gigpo_advantage(
        batch["step_reward"],
        mask,
        batch["index"],
        batch["traj_uid"],
        batch["step_index"],
        batch["anchor_obs"],
        **kw,
    )
    assert torch.equal(adv, ret)
    return adv


def test_step_discounted_returns_t1_any_row_order():
    assert step_discounted_returns(T1["step_reward"], T1["traj_uid"], T1["step_index"], 0.5).tolist() == [
        0.25, 0.5, 1.0, 0.0, 0.0, 0.0,
    ]  # fmt: skip
    perm = [5, 2, 0, 3, 1, 4]
    shuffled = step_discounted_returns(
        [T1["step_reward"][i] for i in perm],
        [T1["traj_uid"][i] for i in perm],
        [T1["step_index"][i] for i in perm],
        0.5,
    )
    assert shuffled.tolist() == [0.0, 1.0, 0.25, 0.0, 0.5, 0.0]


def test_t1_mean_norm():
    adv = run(T1, gamma=0.5, mode="mean_norm")
    np.testing.assert_allclose(adv[:, 0], [0.625, 0.5, 0.5, -0.625, -0.5, -0.5], atol=1e-7)
    assert torch.all(adv == adv[:, :1])  # broadcast over the response tokens


def test_t1_mean_std_norm_cross_steps():
    adv = run(T1, gamma=0.5, mode="mean_std_norm")
    np.testing.assert_allclose(
        adv[:, 0], [1.619972, 0.912869, 0.912869, -1.619972, -0.912869, -0.912869], atol=1e-6
    )
    parts = gigpo_parts(**T1, gamma=0.5, mode="mean_std_norm")
    assert parts.step_adv[4] == 0.0 and parts.step_adv[5] == 0.0  # s3 is constant
    np.testing.assert_allclose(parts.step_adv[[0, 3]], [0.707103, -0.707103], atol=1e-6)
    np.testing.assert_allclose(parts.episode_adv, [0.912869] * 3 + [-0.912869] * 3, atol=1e-6)


def test_t1_per_trajectory_episode_stats():
    parts = gigpo_parts(**T1, gamma=0.5, mode="mean_std_norm", episode_stats_over_steps=False)
    np.testing.assert_allclose(parts.episode_adv, [0.707106] * 3 + [-0.707106] * 3, atol=1e-6)


# Our own multi-group case, computed by hand (gamma = 0.5, w = 1):
#   g1: P = door(0) -> hall(1); Q = door(0) -> kitchen(0)   returns P=1, Q=0
#   g2: R = door(0) -> hall(1), the only trajectory          "door"/"hall" also occur in g1
#   g3: S = start(1), U = start(1)                           equal returns
#   g4: V = door(0.5), one single-step trajectory
MULTI = {
    "step_reward": [0, 1, 0, 0, 0, 1, 1, 1, 0.5],
    "index": ["g1", "g1", "g1", "g1", "g2", "g2", "g3", "g3", "g4"],
    "traj_uid": ["P", "P", "Q", "Q", "R", "R", "S", "U", "V"],
    "step_index": [0, 1, 0, 1, 0, 1, 0, 0, 0],
    "anchor_obs": ["door", "hall", "door", "kitchen", "door", "hall", "start", "start", "door"],
}


def test_multi_group_mean_norm_by_hand():
    # g1 row scores [1,1,0,0], mean .5 -> A^E = +-.5. Step returns P: [.5, 1], Q: [0, 0].
    # Step group g1/door = {P0: .5, Q0: 0}, mean .25 -> +-.25; hall, kitchen are singletons -> 0.
    # g2: one trajectory with two rows -> constant row scores -> A^E = 0 (not its raw score);
    #     its door is NOT merged with g1's door, so R0 is a singleton -> 0.
    # g3: equal returns -> 0; step group start = {1, 1} constant -> 0.
    # g4: one row -> singleton keeps its raw score .5; step singleton -> 0.
    adv = run(MULTI, gamma=0.5, mode="mean_norm")
    np.testing.assert_allclose(adv[:, 0], [0.75, 0.5, -0.75, -0.5, 0, 0, 0, 0, 0.5], atol=1e-7)


def test_multi_group_mean_std_norm_by_hand():
    eps = 1e-6
    ep = 0.5 / (math.sqrt(1 / 3) + eps)  # std([1,1,0,0]) = sqrt(1/3)
    st = 0.25 / (math.sqrt(0.125) + eps)  # std([.5, 0]) = sqrt(.125)
    expected = [ep + st, ep, -ep - st, -ep, 0, 0, 0, 0, 0.5 / (1 + eps)]
    adv = run(MULTI, gamma=0.5, mode="mean_std_norm")
    np.testing.assert_allclose(adv[:, 0].double(), expected, rtol=1e-6)
    groups = gigpo_parts(**MULTI, gamma=0.5).step_group
    assert groups[0] == groups[2] and groups[0] != groups[4] and groups[0] != groups[8]


def test_constant_step_group_regression_exact_zero():
    # Two trajectories that reach the same state at the same distance from the x10 reward:
    # their step returns are both 10 * 0.95**2, which float32 statistics turn into +-0.47.
    batch = {
        "step_reward": [0, 0, 10, 0, 0, 10, 0],
        "index": ["g"] * 7,
        "traj_uid": ["a", "a", "a", "b", "b", "b", "c"],
        "step_index": [0, 1, 2, 0, 1, 2, 0],
        "anchor_obs": ["x", "y", "z", "x", "y", "z", "x"],
    }
    parts = gigpo_parts(**batch, gamma=0.95, mode="mean_std_norm")
    assert parts.step_adv[1] == 0.0 and parts.step_adv[4] == 0.0
    assert parts.step_adv[2] == 0.0 and parts.step_adv[5] == 0.0


def test_padding_rows_are_excluded_and_zero():
    base = run(T1, gamma=0.5, mode="mean_std_norm")
    padded = {
        k: list(v) + [None if k in ("index", "traj_uid", "anchor_obs") else 0] * 2
        for k, v in T1.items()
    }
    sample_mask = [True] * 6 + [False, False]
    adv = run(
        padded, mask=torch.ones(8, 3), gamma=0.5, mode="mean_std_norm", sample_mask=sample_mask
    )
    assert torch.equal(adv[:6], base)
    assert torch.all(adv[6:] == 0)
    # upstream-style padding by duplicating real rows shifts the real rows' statistics
    dup = {k: list(v) + [v[0], v[3]] for k, v in T1.items()}
    dup["traj_uid"][6:] = ["A2", "B2"]  # distinct trajectories, else the rows are duplicates
    moved = run(dup, mask=torch.ones(8, 3), gamma=0.5, mode="mean_std_norm")
    assert not torch.allclose(moved[:6], base)


def test_permutation_invariance_is_exact():
    rng = np.random.default_rng(1)
    b = ref.random_batch(rng)
    args = (
        b["step_reward"],
        b["response_mask"],
        b["index"],
        b["traj_uid"],
        b["step_index"],
        b["anchor_obs"],
    )
    base, _ = gigpo_advantage(*args, mode="mean_std_norm", sample_mask=b["sample_mask"])
    perm = rng.permutation(len(b["step_reward"]))
    shuffled = [
        a[perm] if isinstance(a, (np.ndarray, torch.Tensor)) else [a[i] for i in perm] for a in args
    ]
    adv, _ = gigpo_advantage(*shuffled, mode="mean_std_norm", sample_mask=b["sample_mask"][perm])
    assert torch.equal(adv, base[perm])


@pytest.mark.parametrize("mode", ["mean_norm", "mean_std_norm"])
@pytest.mark.parametrize("over_steps", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_matches_loop_reference(mode, over_steps, seed):
    b = ref.random_batch(np.random.default_rng(seed))
    expected, _, _ = ref.gigpo(
        b["step_reward"], b["index"], b["traj_uid"], b["step_index"], b["anchor_obs"],
        gamma=0.95, w=0.7, mode=mode, over_steps=over_steps, sample_mask=b["sample_mask"],
    )  # fmt: skip
    adv = run(
        b, mask=b["response_mask"], gamma=0.95, step_advantage_w=0.7, mode=mode,
        episode_stats_over_steps=over_steps, sample_mask=b["sample_mask"],
    )  # fmt: skip
    expected_tokens = torch.from_numpy(expected).float()[:, None] * b["response_mask"]
    torch.testing.assert_close(adv, expected_tokens, atol=1e-5, rtol=1e-5)


def test_anchor_collisions_are_avoided():
    arrays = [np.arange(4).reshape(2, 2), np.arange(4), np.arange(4).reshape(2, 2)]
    assert build_step_groups(arrays, ["g"] * 3).tolist() == [0, 1, 0]
    assert build_step_groups([1, 1.0, True, "1"], ["g"] * 4).tolist() == [0, 1, 2, 3]
    assert build_step_groups(["s", "s"], ["g1", "g2"]).tolist() == [0, 1]  # never across tasks


def test_key_fn_discretises_continuous_anchors():
    obs = [np.array([0.101, 0.2]), np.array([0.099, 0.2]), np.array([0.5, 0.2])]
    groups = build_step_groups(obs, ["g"] * 3, key_fn=lambda o: tuple(np.round(o, 1)))
    assert groups.tolist() == [0, 0, 1]


def test_similarity_mode():
    a, b = "abcdefghij", "abcdefghiX"  # one character of ten differs: ratio 0.9
    assert build_step_groups([a, b], ["g", "g"], similarity_thresh=0.9).tolist() == [0, 0]
    assert build_step_groups([a, b], ["g", "g"], similarity_thresh=0.95).tolist() == [0, 1]
    assert build_step_groups([a, b], ["g1", "g2"], similarity_thresh=0.5).tolist() == [0, 1]
    # order-independent: the distinct texts are visited in sorted order
    assert build_step_groups([b, a, b], ["g"] * 3, similarity_thresh=0.9).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="strictly between"):
        build_step_groups([a], ["g"], similarity_thresh=1.0)
    with pytest.raises(ValueError, match="compares text"):
        build_step_groups([a, 3], ["g", "g"], similarity_thresh=0.9)


def test_none_anchor_on_a_real_row_raises_but_not_on_padding():
    bad = dict(T1, anchor_obs=["s0", None, "s2", "s0", "s3", "s3"])
    with pytest.raises(ValueError, match=r"anchor_obs\[1\] is None"):
        run(bad)
    sample_mask = [True, False, True, True, True, True]
    run(dict(bad, traj_uid=["A", None, "A", "B", "B", "B"]), sample_mask=sample_mask)


def test_invalid_inputs_raise():
    with pytest.raises(ValueError, match="mode="):
        run(T1, mode="mean")
    with pytest.raises(ValueError, match="step_index=1"):
        run(dict(T1, step_index=[0, 1, 1, 0, 1, 2]))
    with pytest.raises(ValueError, match="more than one task group"):
        run(dict(T1, index=["g"] * 5 + ["h"]))
    with pytest.raises(ValueError, match="step_reward"):
        run(dict(T1, step_reward=[0, 0, float("nan"), 0, 0, 0]))


def test_empty_batch():
    adv, ret = gigpo_advantage([], torch.zeros(0, 5), [], [], [], [])
    assert adv.shape == (0, 5) and ret.shape == (0, 5)


def test_upstream_style_loop_computes_the_same_formula():
    b = ref.random_batch(np.random.default_rng(5), n_pad=0)
    keys = ("step_reward", "index", "traj_uid", "step_index", "anchor_obs")
    for mode in ("mean_norm", "mean_std_norm"):
        expected, _, _ = ref.gigpo(*(b[k] for k in keys), mode=mode)
        np.testing.assert_allclose(
            ref.gigpo_torch_loop(*(b[k] for k in keys), mode=mode), expected, atol=1e-12
        )
