"""Critic-free outcome estimators: GRPO, Dr.GRPO, RLOO, REINFORCE++ and REINFORCE++-baseline.

Multi-turn layout (docs/algorithms.md, outcome estimators): a row is one step; a trajectory's score is the sum of its
step rewards, and every row of the trajectory carries it. Group statistics are taken either over
step rows (``group_stats_unit="step_row"``, verl-agent's default, so longer trajectories weigh
more) or over trajectories (``"trajectory"``, Agent-R1 and the textbook definition). The
resulting per-row scalar is broadcast over the row's response tokens; ``returns = advantages``
except for REINFORCE++, whose returns are the discounted returns.

verl-agent subtracts its invalid-action penalty after discounting; here a penalty is part of
``step_reward`` (the reward-shaping wrapper adds it), so it counts in the trajectory score.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch

from algos.grouping import factorize, first_rows, group_mean_std, group_normalize, masked_whiten
from algos.rows import (
    as_float_rows,
    as_key_rows,
    as_mask,
    broadcast_rows,
    check_finite_tokens,
    out_dtype,
    scatter_rows,
    take,
    token_counts,
    valid_rows,
)
from algos.trajectory import as_int_array, per_traj_sum, reverse_discounted_sum, trajectory_order

StatsUnit = Literal["step_row", "trajectory"]
_UNITS = ("step_row", "trajectory")


def trajectory_groups(index: Any, traj_uid: Any) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    """Factorise task groups and trajectories, checking each trajectory lies in one group.

    Args:
        index: (N,) task-group keys.
        traj_uid: (N,) trajectory keys.

    Returns:
        ``(group, traj, n_traj, traj_group)``: (N,) group ids, (N,) trajectory ids, the number
        of trajectories and (n_traj,) the group of each trajectory.

    Raises:
        ValueError: If one ``traj_uid`` appears under two ``index`` values.
    """
    traj, traj_keys = factorize(traj_uid)
    heads = first_rows(traj)
    idx = (
        index
        if isinstance(index, np.ndarray)
        else np.fromiter(index, dtype=object, count=len(traj))
    )
    # Task groups are factorised once per trajectory, not once per row: the per-row check
    # below is a C-level == against the trajectory's first row.
    traj_group, _ = factorize(idx[heads])
    group = traj_group[traj]
    try:
        same = np.asarray(idx == idx[heads][traj], dtype=bool)
        if same.shape != traj.shape:
            raise TypeError
    except (TypeError, ValueError):  # keys whose == is not a plain bool (arrays as keys)
        row_group, _ = factorize(idx)
        same = row_group == row_group[heads][traj]
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise ValueError(
            f"traj_uid={traj_keys[traj[i]]!r} appears in more than one task group (index "
            f"{idx[heads][traj[i]]!r} and {idx[i]!r}); every step of a trajectory must carry "
            "the same index"
        )
    return group, traj, len(traj_keys), traj_group


def _group_relative(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    sample_mask: Any,
    group_stats_unit: str,
    score_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """Shared body: trajectory scores, group-relative per-row scalar, padding handled.

    Returns ``(mask, per_row_scalar (B,), valid rows (B,))``.
    """
    if group_stats_unit not in _UNITS:
        raise ValueError(f"group_stats_unit={group_stats_unit!r} is not one of {_UNITS}")
    mask = as_mask(response_mask)
    n = mask.shape[0]
    reward = as_float_rows(step_reward, "step_reward", n)
    rows = valid_rows(sample_mask, n)
    index = as_key_rows(index, "index", n)
    traj_uid = as_key_rows(traj_uid, "traj_uid", n)
    if not rows.any():
        return mask, np.zeros(n), rows
    group, traj, n_traj, traj_group = trajectory_groups(take(index, rows), take(traj_uid, rows))
    score = per_traj_sum(reward[rows], traj, n_traj)  # (n_traj,) trajectory returns
    if group_stats_unit == "step_row":
        per_row = score_fn(score[traj], group)
    else:
        per_row = score_fn(score, traj_group)[traj]
    return mask, scatter_rows(per_row, rows), rows


@torch.no_grad()
def grpo(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    *,
    norm_by_std: bool = True,
    group_stats_unit: StatsUnit = "step_row",
    eps: float = 1e-6,
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO: ``(s - mean_g) / (std_g + eps)``, or Dr.GRPO's ``s - mean_g`` without std.

    ``s`` is the trajectory's summed step reward; the group is the task group ``index``; std is
    unbiased. A one-member group keeps its raw score (mean 0, std 1, as verl); a constant group
    gives exactly 0.

    Args:
        step_reward: (B,) reward of each step row.
        response_mask: (B, L) 1 on action tokens.
        index: (B,) task-group keys (same for all rollouts of one task).
        traj_uid: (B,) trajectory keys.
        norm_by_std: Divide by the group std (False = Dr.GRPO).
        group_stats_unit: ``"step_row"`` (each row counts once, verl-agent) or ``"trajectory"``
            (each trajectory counts once, Agent-R1).
        eps: Added to the std.
        sample_mask: (B,) False for padding rows: excluded from statistics and given 0.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``; equal.

    >>> adv, _ = grpo([1.0, 0.0], torch.ones(2, 1), ["g", "g"], ["a", "b"])
    >>> [round(v, 4) for v in adv[:, 0].tolist()]
    [0.7071, -0.7071]
    """
    mask, per_row, _ = _group_relative(
        step_reward,
        response_mask,
        index,
        traj_uid,
        sample_mask,
        group_stats_unit,
        lambda x, g: group_normalize(x, g, use_std=norm_by_std, eps=eps, singleton="raw"),
    )
    adv = broadcast_rows(per_row, mask)
    return adv, adv.clone()


@torch.no_grad()
def drgrpo(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    *,
    group_stats_unit: StatsUnit = "step_row",
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dr.GRPO: :func:`grpo` with ``norm_by_std=False`` (``s - mean_g``; singleton keeps ``s``)."""
    return grpo(
        step_reward,
        response_mask,
        index,
        traj_uid,
        norm_by_std=False,
        group_stats_unit=group_stats_unit,
        sample_mask=sample_mask,
    )


def _rloo_scores(x: np.ndarray, g: np.ndarray, singleton: str) -> np.ndarray:
    stats = group_mean_std(x, g)
    n = stats.count[g].astype(np.float64)
    # n/(n-1) * (s - mean) == s - mean of the others; constant groups are exactly 0 via dev.
    out = stats.dev * n / np.maximum(n - 1.0, 1.0)
    single = n == 1
    out[single] = x[single] if singleton == "raw" else 0.0
    return out


@torch.no_grad()
def rloo(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    *,
    group_stats_unit: StatsUnit = "step_row",
    singleton: Literal["raw", "zero"] = "raw",
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RLOO: ``s - mean of the other members = n/(n-1) * (s - mean_g)``.

    Args:
        step_reward: (B,) reward of each step row.
        response_mask: (B, L) 1 on action tokens.
        index: (B,) task-group keys.
        traj_uid: (B,) trajectory keys.
        group_stats_unit: ``"step_row"`` or ``"trajectory"`` (see :func:`grpo`).
        singleton: A one-member group keeps its raw score (``"raw"``, verl ``rloo``) or gets 0
            (``"zero"``, verl ``rloo_vectorized``).
        sample_mask: (B,) False for padding rows.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``; equal.
    """
    if singleton not in ("raw", "zero"):
        raise ValueError(f"singleton={singleton!r} is not one of ('raw', 'zero')")
    mask, per_row, _ = _group_relative(
        step_reward,
        response_mask,
        index,
        traj_uid,
        sample_mask,
        group_stats_unit,
        lambda x, g: _rloo_scores(x, g, singleton),
    )
    adv = broadcast_rows(per_row, mask)
    return adv, adv.clone()


@torch.no_grad()
def reinforce_pp_baseline(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    *,
    group_stats_unit: StatsUnit = "step_row",
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE++-baseline: ``s - mean_g`` (singleton keeps ``s``), then whitened over tokens.

    The whitening is verl's ``masked_whiten`` over every real response token of the batch
    (token-weighted: a row counts once per action token).

    Args:
        step_reward: (B,) reward of each step row.
        response_mask: (B, L) 1 on action tokens.
        index: (B,) task-group keys.
        traj_uid: (B,) trajectory keys.
        group_stats_unit: ``"step_row"`` or ``"trajectory"`` (see :func:`grpo`).
        sample_mask: (B,) False for padding rows.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``; equal.
    """
    mask, per_row, rows = _group_relative(
        step_reward,
        response_mask,
        index,
        traj_uid,
        sample_mask,
        group_stats_unit,
        lambda x, g: group_normalize(x, g, use_std=False, singleton="raw"),
    )
    white = masked_whiten(per_row, token_counts(mask) * rows)
    adv = broadcast_rows(white, mask)
    return adv, adv.clone()


@torch.no_grad()
def reinforce_pp(
    step_reward: Any,
    response_mask: Any,
    traj_uid: Any,
    step_index: Any,
    *,
    gamma: float = 1.0,
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """REINFORCE++ on step rows: discounted return-to-go per step, whitened over tokens.

    ``R_t = sum_{k>=t} gamma^(k-t) r_k`` along each trajectory (sorted by ``step_index``), broadcast
    over the row's tokens and whitened over every real token of the batch. With one step per
    trajectory, its reward on the last action token and ``gamma=1`` this equals verl's
    token-level REINFORCE++ (:func:`reinforce_pp_token`).

    Args:
        step_reward: (B,) reward of each step row.
        response_mask: (B, L) 1 on action tokens.
        traj_uid: (B,) trajectory keys.
        step_index: (B,) int step number within the trajectory.
        gamma: Discount per step.
        sample_mask: (B,) False for padding rows.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``; ``returns`` are
        the un-whitened ``R_t``.
    """
    mask = as_mask(response_mask)
    n = mask.shape[0]
    reward = as_float_rows(step_reward, "step_reward", n)
    rows = valid_rows(sample_mask, n)
    step = as_int_array(step_index, "step_index", n)
    tro = trajectory_order(take(as_key_rows(traj_uid, "traj_uid", n), rows), step[rows])
    ret = scatter_rows(reverse_discounted_sum(reward[rows], gamma, tro), rows)
    adv = masked_whiten(ret, token_counts(mask) * rows)
    return broadcast_rows(adv, mask), broadcast_rows(ret, mask)


@torch.no_grad()
def reinforce_pp_token(
    token_level_rewards: Any,
    response_mask: Any,
    *,
    gamma: float = 1.0,
    sample_mask: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level REINFORCE++ as verl computes it (``compute_reinforce_plus_plus_outcome_advantage``).

    Backward over tokens: ``G_j = r_j + gamma * G_{j+1}``, and the running sum is reset after a
    masked token (``run = G_j * mask_j``) so rewards do not leak across padding. Advantages are
    ``G`` whitened over all real tokens; ``returns = G``.

    Args:
        token_level_rewards: (B, L) rewards on tokens.
        response_mask: (B, L) 1 on action tokens.
        gamma: Discount per token.
        sample_mask: (B,) False for padding rows.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``.
    """
    mask = as_mask(response_mask)
    rewards = torch.as_tensor(token_level_rewards)
    if rewards.shape != mask.shape:
        raise ValueError(
            f"token_level_rewards must have the shape of response_mask {tuple(mask.shape)}, "
            f"got {tuple(rewards.shape)}"
        )
    rows = torch.from_numpy(valid_rows(sample_mask, mask.shape[0])).to(mask.device)
    m = (mask != 0) & rows.unsqueeze(1)
    check_finite_tokens("token_level_rewards", rewards, m)
    r = rewards.to(torch.float64)
    ret = torch.zeros_like(r)
    run = torch.zeros(r.shape[0], dtype=torch.float64, device=r.device)
    for j in reversed(range(r.shape[1])):
        run = r[:, j] + gamma * run
        ret[:, j] = run
        run = torch.where(m[:, j], run, 0.0)
    ret = torch.where(m, ret, 0.0)
    flat = masked_whiten(ret.reshape(-1).cpu().numpy(), m.reshape(-1).cpu().numpy())
    adv = torch.from_numpy(flat).reshape(ret.shape).to(mask.device)
    dtype = out_dtype(mask)
    return adv.to(dtype), ret.to(dtype)
