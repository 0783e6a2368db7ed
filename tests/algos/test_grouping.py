"""Grouping primitives: factorize, group statistics, whitening (docs/algorithms.md, conventions)."""

import numpy as np
import pytest
import torch

from algos.grouping import factorize, group_mean_std, group_normalize, masked_whiten, to_hashable


def test_factorize_first_seen_order_and_uniques():
    inv, uniq = factorize(["b", "a", "b", "c", "a"])
    assert inv.tolist() == [0, 1, 0, 2, 1]
    assert uniq == ["b", "a", "c"]


def test_factorize_numeric_fast_path_keeps_first_seen_order():
    inv, uniq = factorize(np.array([30, 10, 30, 20]))
    assert inv.tolist() == [0, 1, 0, 2]
    assert uniq == [30, 10, 20]
    inv_t, _ = factorize(torch.tensor([30, 10, 30, 20]))
    assert inv_t.tolist() == inv.tolist()


def test_factorize_mixed_types_never_raise_and_stay_distinct():
    keys = ["1", 1, 1.0, True, None, (1, 2), [1, 2], b"1", np.int64(1), np.str_("1")]
    inv, _ = factorize(keys)
    # "1", 1, 1.0, True, None, tuple, list, bytes are eight keys; np.int64(1) is the int 1 and
    # np.str_("1") is the str "1".
    assert inv.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 1, 0]


def test_arrays_are_keyed_by_dtype_and_shape():
    a22 = np.arange(4).reshape(2, 2)
    a4 = np.arange(4)
    inv, _ = factorize([a22, a4, a22.copy(), a4.astype(np.int32), torch.arange(4)])
    assert inv.tolist() == [0, 1, 0, 2, 1]  # the tensor equals the same-dtype (4,) array


def test_dict_and_set_keys_are_order_independent():
    assert to_hashable({"a": 1, "b": 2}) == to_hashable({"b": 2, "a": 1})
    assert to_hashable({1, 2}) == to_hashable({2, 1})
    assert to_hashable(float("nan")) == to_hashable(float("nan"))


def test_unhashable_object_names_its_type():
    class Blob:
        __hash__ = None

    with pytest.raises(TypeError, match="Blob.*key_fn"):
        factorize([Blob()])


def test_factorize_empty():
    inv, uniq = factorize([])
    assert inv.shape == (0,) and uniq == []


def test_group_normalize_spec_vectors():
    x = [1.0, 0.0, 1.0, 1.0, 0.5]
    g = [0, 0, 0, 0, 1]
    grpo = group_normalize(x, g, use_std=True)
    np.testing.assert_allclose(
        grpo, [0.499999, -1.499997, 0.499999, 0.499999, 0.4999995], atol=1e-6
    )
    assert grpo[4] == 0.5 / (1 + 1e-6)  # singleton "raw": mean 0, std 1, eps still added
    np.testing.assert_allclose(group_normalize(x, g, use_std=False), [0.25, -0.75, 0.25, 0.25, 0.5])


def test_singleton_rules():
    for rule, expected in (("raw", 7.0), ("self", 0.0), ("zero", 0.0)):
        assert (
            group_normalize([7.0, 1.0, 2.0], [0, 1, 1], use_std=False, singleton=rule)[0]
            == expected
        )
    with pytest.raises(ValueError, match="singleton"):
        group_normalize([1.0], [0], use_std=True, singleton="mean")


def test_constant_group_is_exactly_zero_where_float32_is_not():
    # The float32 constant-group hazard (docs/algorithms.md): six identical step returns 10 * 0.95**2 (ALFWorld's x10 scale).
    value = 10 * 0.95**2
    t = torch.full((6,), value, dtype=torch.float32)
    upstream = (t - t.mean()) / (t.std() + 1e-6)  # float32, as the upstream loops compute it
    assert t.std().item() > 0
    assert torch.all(upstream < -0.4)  # every member gets the same-signed O(0.5) advantage
    ours = group_normalize(np.full(6, value), np.zeros(6, dtype=int), use_std=True)
    assert np.all(ours == 0.0)
    assert np.all(group_normalize(t.double().numpy(), np.zeros(6, dtype=int), use_std=True) == 0.0)


def test_group_mean_std_is_unbiased_two_pass():
    stats = group_mean_std([1.0, 2.0, 3.0, 5.0], [0, 0, 0, 1])
    assert stats.count.tolist() == [3, 1]
    np.testing.assert_allclose(stats.mean, [2.0, 5.0])
    np.testing.assert_allclose(stats.std, [1.0, 0.0])
    with pytest.raises(ValueError, match="not finite"):
        group_mean_std([1.0, np.nan], [0, 0])


def test_group_stats_are_bit_identical_under_row_permutation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=500) * 1e3
    g = rng.integers(0, 7, size=500)
    base = group_normalize(x, g, use_std=True)
    perm = rng.permutation(500)
    assert np.array_equal(group_normalize(x[perm], g[perm], use_std=True), base[perm])


def test_masked_whiten():
    out = masked_whiten(np.array([1.0, 2.0, 3.0, 99.0]), np.array([1, 1, 1, 0]))
    np.testing.assert_allclose(out[:3], [-1.0, 0.0, 1.0], atol=1e-7)
    assert out[3] == 0.0
    assert np.all(masked_whiten(np.array([4.0, 4.0]), np.array([3, 1])) == 0.0)  # constant
    assert np.all(masked_whiten(np.array([4.0]), np.array([1])) == 0.0)  # one token
    # weight = token count: whitening row scalars equals whitening the broadcast tokens
    rows = masked_whiten(np.array([1.0, 3.0]), np.array([2, 1]))
    toks = masked_whiten(np.array([1.0, 1.0, 3.0]), np.ones(3))
    np.testing.assert_allclose(rows, [toks[0], toks[2]])
