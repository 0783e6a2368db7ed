"""StepBatch contract and the by-name estimator adapter."""

import numpy as np
import pytest
import reference_loops as ref
import torch

import algos
from algos import StepBatch, compute_advantages


def make_batch(seed=0, with_values=True):
    b = ref.random_batch(np.random.default_rng(seed), n_pad=0)
    n, length = b["response_mask"].shape
    real = b["sample_mask"]
    return StepBatch(
        prompt_ids=[torch.arange(3 + i % 4) for i in range(n)],
        response_ids=torch.randint(1, 50, (n, length)),
        response_mask=b["response_mask"],
        step_reward=b["step_reward"],
        index=b["index"],
        traj_uid=b["traj_uid"],
        step_index=b["step_index"],
        anchor_obs=b["anchor_obs"],
        sample_mask=real,
        values=torch.randn(n, length) if with_values else None,
        old_log_prob=-torch.rand(n, length),
    )


def test_defaults_and_conversion():
    b = StepBatch(
        response_ids=[[1, 2]], response_mask=[[1, 0]], step_reward=[1.0], index=[("task", 3)],
        traj_uid=["t"], step_index=[0],
    )  # fmt: skip
    assert len(b) == 1 and b.response_length == 2
    assert b.index.dtype == object and b.index.shape == (1,) and b.index[0] == ("task", 3)
    assert b.sample_mask.tolist() == [True] and b.is_action_valid.tolist() == [True]
    assert b.terminated.tolist() == [False] and b.truncated.tolist() == [False]
    assert b.response_mask.dtype == torch.float32 and b.step_reward.dtype == torch.float64


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("step_reward", [[1.0], [2.0]], r"step_reward: expected shape \(2,\), got \(2, 1\)"),
        ("response_mask", [[1, 1, 1]] * 2, r"response_mask: expected shape \(2, 2\), got \(2, 3\)"),
        ("traj_uid", ["a"], r"traj_uid: expected shape \(2,\)"),
        ("old_log_prob", torch.zeros(2, 3), r"old_log_prob: expected shape \(2, 2\)"),
        ("response_ids", torch.zeros(2, 2), "integer token ids"),
        ("prompt_ids", [torch.arange(2)], "expected 2 prompts"),
    ],
)
def test_validation_names_field_and_shape(field, value, message):
    kw = {
        "response_ids": torch.ones(2, 2, dtype=torch.long), "response_mask": torch.ones(2, 2),
        "step_reward": [0.0, 1.0], "index": ["g", "g"], "traj_uid": ["a", "a"], "step_index": [0, 1],
    }  # fmt: skip
    kw[field] = value
    with pytest.raises(ValueError, match=message):
        StepBatch(**kw)


def test_select_pad_concat():
    b = make_batch()
    sub = b.select([3, 1])
    assert len(sub) == 2 and sub.traj_uid.tolist() == [b.traj_uid[3], b.traj_uid[1]]
    assert torch.equal(sub.prompt_ids[0], b.prompt_ids[3])
    assert len(b.select(b.sample_mask)) == len(b)
    padded = b.pad_to(len(b) + 3)
    assert len(padded) == len(b) + 3
    assert padded.sample_mask[-3:].tolist() == [False] * 3
    assert torch.all(padded.response_mask[-3:] == 0) and torch.all(padded.values[-3:] == 0)
    assert list(padded.traj_uid[-3:]) == [None] * 3 and list(padded.anchor_obs[-3:]) == [None] * 3
    assert torch.equal(padded.response_ids[-1], b.response_ids[0])
    with pytest.raises(ValueError, match="already has"):
        b.pad_to(1)
    short = b.select([0]).select(slice(None))
    short = StepBatch(**{**short.__dict__, "response_ids": short.response_ids[:, :2],
                         "response_mask": short.response_mask[:, :2], "values": short.values[:, :2],
                         "old_log_prob": short.old_log_prob[:, :2]})  # fmt: skip
    cat = StepBatch.concat([short, b])
    assert len(cat) == len(b) + 1 and cat.response_length == b.response_length
    assert torch.all(cat.response_mask[0, 2:] == 0)


def test_concat_left_pads_prompt_tensors():
    kw = {
        "response_mask": torch.ones(1, 1),
        "step_reward": [0.0],
        "index": ["g"],
        "traj_uid": ["a"],
        "step_index": [0],
    }
    a = StepBatch(response_ids=[[5]], prompt_ids=torch.tensor([[1, 2, 3]]), **kw)
    b = StepBatch(response_ids=[[6]], prompt_ids=torch.tensor([[4]]), **kw)
    cat = StepBatch.concat([a, b])
    assert cat.prompt_ids.tolist() == [[1, 2, 3], [0, 0, 4]]
    assert cat.prompt_mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_token_level_rewards_on_last_action_token():
    b = StepBatch(
        response_ids=torch.ones(2, 3, dtype=torch.long), response_mask=[[1, 1, 0], [1, 0, 1]],
        step_reward=[2.0, 3.0], index=["g", "g"], traj_uid=["a", "b"], step_index=[0, 0],
    )  # fmt: skip
    assert b.token_level_rewards().tolist() == [[0, 2, 0], [0, 0, 3]]


def test_estimator_names_and_unknown_name():
    assert set(algos.ESTIMATORS) == {
        "step_gae", "gae", "grpo", "drgrpo", "rloo", "reinforce_pp", "reinforce_pp_baseline", "gigpo",
    }  # fmt: skip
    with pytest.raises(ValueError, match=r"unknown advantage estimator 'remax'.*gigpo"):
        compute_advantages("remax", make_batch())
    with pytest.raises(ValueError, match=r"needs StepBatch.values"):
        compute_advantages("step_gae", make_batch(with_values=False))


def test_adapter_matches_direct_calls():
    b = make_batch()
    adv, _ = compute_advantages("gigpo", b, gamma=0.9, mode="mean_std_norm")
    direct, _ = algos.gigpo_advantage(
        b.step_reward, b.response_mask, b.index, b.traj_uid, b.step_index, b.anchor_obs,
        gamma=0.9, mode="mean_std_norm",
    )  # fmt: skip
    assert torch.equal(adv, direct)
    adv, _ = compute_advantages("drgrpo", b)
    assert torch.equal(
        adv, algos.grpo(b.step_reward, b.response_mask, b.index, b.traj_uid, norm_by_std=False)[0]
    )
    adv, _ = compute_advantages("step_gae", b, gamma=0.9, lam=0.95)
    direct, _ = algos.step_gae(
        b.step_reward,
        b.values[:, 0],
        b.response_mask,
        b.traj_uid,
        b.step_index,
        gamma=0.9,
        lam=0.95,
    )
    assert torch.equal(adv, direct)


@pytest.mark.parametrize("name", sorted(algos.ESTIMATORS))
def test_padding_leaves_real_rows_unchanged_for_every_estimator(name):
    b = make_batch(seed=3)
    base_adv, base_ret = compute_advantages(name, b)
    padded = b.pad_to(len(b) + 5)
    adv, ret = compute_advantages(name, padded)
    torch.testing.assert_close(adv[: len(b)], base_adv, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(ret[: len(b)], base_ret, atol=1e-6, rtol=1e-6)
    assert torch.all(adv[len(b) :] == 0) and torch.all(ret[len(b) :] == 0)
    assert torch.all(adv[padded.response_mask == 0] == 0)


@pytest.mark.parametrize("name", sorted(algos.ESTIMATORS))
def test_row_permutation_permutes_output_for_every_estimator(name):
    b = make_batch(seed=4)
    perm = np.random.default_rng(0).permutation(len(b))
    adv, ret = compute_advantages(name, b)
    adv_p, ret_p = compute_advantages(name, b.select(perm))
    torch.testing.assert_close(adv_p, adv[perm], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(ret_p, ret[perm], atol=1e-6, rtol=1e-6)


def test_gae_episode_row_reward():
    b = make_batch()
    adv_s, _ = compute_advantages("gae", b)
    adv_e, _ = compute_advantages("gae", b, row_reward="episode")
    assert not torch.equal(adv_s, adv_e)
    with pytest.raises(ValueError, match="row_reward"):
        compute_advantages("gae", b, row_reward="final")


def test_end_reason_travels_with_rows():
    b = StepBatch(
        response_ids=[[1], [2], [3]], response_mask=[[1], [1], [1]], step_reward=[0.0, 0.0, 1.0],
        index=[0, 0, 0], traj_uid=[0, 0, 1], step_index=[0, 1, 0],
        end_reason=["", "context_limit", "terminated"],
    )  # fmt: skip
    assert b.select([2, 0]).end_reason.tolist() == ["terminated", ""]
    padded = b.pad_to(5)
    assert padded.end_reason.tolist()[:3] == ["", "context_limit", "terminated"]
    assert padded.end_reason.tolist()[3:] == [None, None]
    with pytest.raises(ValueError, match="end_reason"):
        StepBatch(
            response_ids=[[1]], response_mask=[[1]], step_reward=[0.0], index=[0], traj_uid=[0],
            step_index=[0], end_reason=["a", "b"],
        )  # fmt: skip
