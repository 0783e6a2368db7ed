"""Critic-based estimators: step-level GAE (StepPO) and token-level GAE.

* :func:`step_gae` is StepPO's estimator (Agent-R1 ``compute_gae_advantage_return``,
  docs/algorithms.md): the whole response is one action, the critic's value at the step boundary
  ``values[:, 0]`` is V(s_t), and GAE runs over the step timeline of each trajectory.
* :func:`gae` is verl's token-level GAE (§5.1): each row is its own token timeline, and tokens
  with mask 0 (observation or tool output inside a response) are skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from algos.grouping import group_mean_std, masked_whiten
from algos.rows import (
    as_float_rows,
    as_key_rows,
    as_mask,
    broadcast_rows,
    check_finite_tokens,
    out_dtype,
    scatter_rows,
    take,
    valid_rows,
)
from algos.trajectory import as_int_array, reverse_discounted_sum, trajectory_order


@torch.no_grad()
def step_gae(
    step_reward: Any,
    step_value: Any,
    response_mask: Any,
    traj_uid: Any,
    step_index: Any,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
    whiten: bool = True,
    sample_mask: Any = None,
    bootstrap_value: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """StepPO advantages: GAE over each trajectory's steps, with V(s_t) at the step boundary.

    For each trajectory, with steps sorted by ``step_index``::

        delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)        (V(s_T) = bootstrap, default 0)
        A_t     = delta_t + gamma * lam * A_{t+1}
        returns = A + V                                      (before whitening)
        A       = (A - mean) / (std + 1e-8)                  (over real step rows, ddof=1)

    Whitening is over step rows, not tokens ("to avoid counting duplicated values", Agent-R1).
    All advantages equal (or a single real row) whiten to exactly 0.

    Args:
        step_reward: (B,) reward of each step (env reward, summed over the step's tokens).
        step_value: (B,) critic value at the step boundary, i.e. ``values[:, 0]``.
        response_mask: (B, L) 1 on action tokens.
        traj_uid: (B,) trajectory keys.
        step_index: (B,) int step number within the trajectory; rows may come in any order.
        gamma: Discount per step.
        lam: GAE lambda.
        whiten: Whiten the advantages over real step rows.
        sample_mask: (B,) False for padding rows: excluded everywhere and given 0.
        bootstrap_value: (B,) optional V(s_T) read on each trajectory's last row (use the
            critic's value of the final observation for truncated trajectories, 0 for
            terminated ones). Default None = 0 for all, as upstream.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``.

    Raises:
        ValueError: On shape mismatches, non-finite inputs, or a duplicated
            ``(traj_uid, step_index)``.
    """
    mask = as_mask(response_mask)
    n = mask.shape[0]
    if torch.is_tensor(step_value) and step_value.dim() == 2:
        raise ValueError(
            f"step_value must have shape ({n},); got {tuple(step_value.shape)}: "
            "pass values[:, 0], the value at the step boundary"
        )
    reward = as_float_rows(step_reward, "step_reward", n)
    value = as_float_rows(step_value, "step_value", n)
    rows = valid_rows(sample_mask, n)
    traj_uid = as_key_rows(traj_uid, "traj_uid", n)
    step = as_int_array(step_index, "step_index", n)
    tail = None if bootstrap_value is None else as_float_rows(bootstrap_value, "bootstrap_value", n)

    tro = trajectory_order(take(traj_uid, rows), step[rows])
    r, v = reward[rows], value[rows]
    has_next = tro.next_row >= 0
    v_next = np.where(has_next, v[np.maximum(tro.next_row, 0)], 0.0)
    if tail is not None:
        v_next = np.where(has_next, v_next, tail[rows])
    delta = r + gamma * v_next - v
    adv = reverse_discounted_sum(delta, gamma * lam, tro)
    ret = adv + v
    if whiten and adv.size:
        stats = group_mean_std(adv, np.zeros(adv.size, dtype=np.int64), 1)
        adv = stats.dev / (stats.std[0] + 1e-8)
    return (
        broadcast_rows(scatter_rows(adv, rows), mask),
        broadcast_rows(scatter_rows(ret, rows), mask),
    )


@torch.no_grad()
def gae(
    token_level_rewards: Any,
    values: Any,
    response_mask: Any,
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
    whiten: bool = True,
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level GAE over each row's action tokens (verl ``compute_gae_advantage_return``).

    Backward over positions j = L-1..0, with the state updated only where ``mask_j = 1``, so
    observation/tool tokens inside a response (mask 0) are skipped and the action tokens form
    one timeline::

        delta_j = r_j + gamma * nextV - V_j
        a_j     = delta_j + gamma * lam * last
        nextV   = V_j, last = a_j                  (only where mask_j = 1)

    ``returns = a + V`` before whitening; then ``a`` is whitened over all real tokens of the
    batch (unbiased variance, ``rsqrt(var + 1e-8)``). Each row ends without bootstrap.

    Args:
        token_level_rewards: (B, L) rewards on tokens.
        values: (B, L) critic values; ``values[:, j]`` predicts response token j.
        response_mask: (B, L) 1 on action tokens.
        gamma: Discount per action token.
        lam: GAE lambda.
        whiten: Whiten the advantages over all real tokens of the batch.
        sample_mask: (B,) False for padding rows (their tokens are excluded and get 0).

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``.

    Raises:
        ValueError: A shape differs from ``response_mask``'s, or a reward or value under the
            mask is NaN/inf.
    """
    mask = as_mask(response_mask)
    rewards = torch.as_tensor(token_level_rewards)
    vals = torch.as_tensor(values)
    for name, t in (("token_level_rewards", rewards), ("values", vals)):
        if t.shape != mask.shape:
            raise ValueError(
                f"{name} must have the shape of response_mask {tuple(mask.shape)}, got {tuple(t.shape)}"
            )
    rows = torch.from_numpy(valid_rows(sample_mask, mask.shape[0])).to(mask.device)
    m = (mask != 0) & rows.unsqueeze(1)
    check_finite_tokens("token_level_rewards", rewards, m)
    check_finite_tokens("values", vals, m)
    mf = m.to(torch.float64)
    r = torch.where(m, rewards.to(torch.float64), 0.0)
    v = vals.to(torch.float64)
    next_v = torch.zeros(mask.shape[0], dtype=torch.float64, device=mask.device)
    last = torch.zeros_like(next_v)
    adv = torch.zeros_like(r)
    for j in reversed(range(mask.shape[1])):
        delta = r[:, j] + gamma * next_v - v[:, j]
        a = delta + gamma * lam * last
        adv[:, j] = a
        # torch.where rather than a multiply: values at masked positions may be garbage/NaN.
        next_v = torch.where(m[:, j], v[:, j], next_v)
        last = torch.where(m[:, j], a, last)
    ret = torch.where(m, adv + v, 0.0)
    adv = torch.where(m, adv, 0.0)
    if whiten:
        flat = masked_whiten(adv.reshape(-1).cpu().numpy(), mf.reshape(-1).cpu().numpy())
        adv = torch.from_numpy(flat).reshape(adv.shape).to(mask.device)
    dtype = out_dtype(mask)
    return adv.to(dtype), ret.to(dtype)
