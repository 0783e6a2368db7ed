"""GiGPO: group-in-group policy optimisation (arXiv:2505.10978, verl-agent ``gigpo/core_gigpo.py``).

Two nested relative advantages per step row (docs/algorithms.md, ``gigpo``):

* episode level (Eq. 3): the trajectory's return against its task group,
  ``A^E = (R(tau) - mean) / F_norm``, singleton keeps the raw score;
* step level (Eq. 5-7): the discounted return-to-go ``R_t`` against every step, in the same task
  group, that started from the same anchor state, ``A^S = (R_t - mean) / F_norm``, singleton 0;

combined as ``A = A^E + w * A^S`` (Eq. 8) and broadcast over the row's response tokens.
``F_norm`` is the unbiased std plus eps (``mode="mean_std_norm"``) or 1 (``"mean_norm"``).
Statistics are float64 with constant groups exactly 0, which fixes upstream's float32 bug where
a step group of identical returns such as ``10 * 0.95**k`` gets a same-signed O(0.1) advantage.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Literal, NamedTuple

import numpy as np
import torch

from algos.grouping import factorize, group_normalize
from algos.outcome import trajectory_groups
from algos.rows import (
    as_float_rows,
    as_key_rows,
    as_mask,
    broadcast_rows,
    scatter_rows,
    take,
    valid_rows,
)
from algos.trajectory import as_int_array, per_traj_sum, reverse_discounted_sum, trajectory_order

GigpoMode = Literal["mean_norm", "mean_std_norm"]
_MODES = ("mean_norm", "mean_std_norm")


@torch.no_grad()
def step_discounted_returns(
    step_reward: Any, traj_uid: Any, step_index: Any, gamma: float
) -> np.ndarray:
    """Discounted return-to-go of every step, ``R_t = sum_{k>=t} gamma^(k-t) r_k`` (Eq. 5).

    No bootstrap: a truncated trajectory is treated like a terminated one, as upstream. Rows may
    come in any order; each trajectory is sorted by ``step_index`` (upstream trusts row order).

    Args:
        step_reward: (B,) immediate reward of each step.
        traj_uid: (B,) trajectory keys.
        step_index: (B,) int step number within the trajectory.
        gamma: Discount per step.

    Returns:
        (B,) float64.

    >>> step_discounted_returns([0, 0, 1], ["a", "a", "a"], [0, 1, 2], 0.5).tolist()
    [0.25, 0.5, 1.0]
    """
    n = len(traj_uid)
    reward = as_float_rows(step_reward, "step_reward", n)
    step = as_int_array(step_index, "step_index", n)
    tro = trajectory_order(as_key_rows(traj_uid, "traj_uid", n), step)
    return reverse_discounted_sum(reward, gamma, tro)


def _similarity_clusters(texts: list[str], thresh: float) -> np.ndarray:
    """Greedy clustering of distinct texts: join the first cluster whose representative matches.

    Texts are visited in sorted order, so the clustering does not depend on row order (upstream
    visits rows in batch order, which its batch balancing shuffles).
    """
    import difflib

    order = sorted(range(len(texts)), key=texts.__getitem__)
    reps: list[str] = []
    cluster = np.full(len(texts), -1, dtype=np.int64)
    for i in order:
        for c, rep in enumerate(reps):
            if difflib.SequenceMatcher(None, texts[i], rep).ratio() >= thresh:
                cluster[i] = c
                break
        else:
            cluster[i] = len(reps)
            reps.append(texts[i])
    return cluster


def build_step_groups(
    anchor_obs: Any,
    index: Any,
    *,
    similarity_thresh: float | None = None,
    key_fn: Callable[[Any], Hashable] | None = None,
) -> np.ndarray:
    """Step-group id of every row: same task group and same anchor state (Eq. 6).

    Exact mode (default) compares anchors by :func:`algos.grouping.to_hashable` (or ``key_fn``):
    arrays by dtype, shape and bytes, so a 2x2 and a (4,) array never merge, and ``1``, ``1.0``,
    ``True`` are three states. Continuous observations need a discretising ``key_fn``.
    Similarity mode (``0 < similarity_thresh < 1``, text anchors only) merges anchors whose
    ``difflib`` ratio to a cluster's first member is at least the threshold; it is greedy and
    non-transitive like upstream, but visits the distinct texts of a task group in sorted order.
    Anchors equal across two task groups are never merged.

    Args:
        anchor_obs: (B,) pre-action observations without history (GiGPO's anchor states).
        index: (B,) task-group keys.
        similarity_thresh: None for exact matching, else the difflib ratio threshold.
        key_fn: Maps an anchor to a hashable key (exact mode only).

    Returns:
        (B,) int64 step-group ids, 0..S-1 in first-seen order.

    Raises:
        ValueError: If an anchor is None, if ``similarity_thresh`` is outside (0, 1), or if a
            non-str anchor is given in similarity mode.
    """
    anchors = as_key_rows(anchor_obs, "anchor_obs", len(anchor_obs))
    n = len(anchors)
    group, _ = factorize(as_key_rows(index, "index", n))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if similarity_thresh is None:
        anchor_id, uniques = factorize(anchors, key_fn)
        nones = [j for j, u in enumerate(uniques) if u is None]
        if nones:
            i = int(np.flatnonzero(anchor_id == nones[0])[0])
            raise ValueError(
                f"anchor_obs[{i}] is None; every real row needs its pre-action observation "
                "(mark padding rows with sample_mask=False)"
            )
        n_anchor = len(uniques)
    else:
        if not 0.0 < similarity_thresh < 1.0:
            raise ValueError(
                f"similarity_thresh={similarity_thresh} must lie strictly between 0 and 1"
            )
        bad = [i for i, a in enumerate(anchors) if not isinstance(a, str)]
        if bad:
            raise ValueError(
                f"similarity mode compares text, but anchor_obs[{bad[0]}] is "
                f"{type(anchors[bad[0]]).__name__}; use exact mode (similarity_thresh=None)"
            )
        text_id, texts = factorize(anchors)
        # Cluster the distinct texts of each task group; identical texts always share a
        # cluster (ratio 1), so deduplicating first is exact and much cheaper.
        pair_id, pairs_first = factorize(group * len(texts) + text_id)
        anchor_id = np.full(len(pairs_first), -1, dtype=np.int64)
        pair_group = np.asarray(pairs_first, dtype=np.int64) // len(texts)
        pair_text = np.asarray(pairs_first, dtype=np.int64) % len(texts)
        offset = 0
        for g in np.unique(pair_group):  # similarity is inherently pairwise: loop per group
            members = np.flatnonzero(pair_group == g)
            cl = _similarity_clusters([texts[t] for t in pair_text[members]], similarity_thresh)
            anchor_id[members] = cl + offset
            offset += int(cl.max()) + 1
        return factorize(anchor_id[pair_id])[0]
    step_group, _ = factorize(group * n_anchor + anchor_id)  # int64 keys: numeric fast path
    return step_group


class GigpoParts(NamedTuple):
    """GiGPO's pieces per row (B,), float64; padding rows hold 0 (and step_group -1).

    Attributes:
        advantage: ``episode_adv + step_advantage_w * step_adv``.
        episode_return: Undiscounted return of the row's trajectory.
        episode_adv: A^E.
        step_return: Discounted return-to-go R_t.
        step_adv: A^S.
        step_group: Step-group id (int64), -1 on padding rows.
    """

    advantage: np.ndarray
    episode_return: np.ndarray
    episode_adv: np.ndarray
    step_return: np.ndarray
    step_adv: np.ndarray
    step_group: np.ndarray


@torch.no_grad()
def gigpo_parts(
    step_reward: Any,
    index: Any,
    traj_uid: Any,
    step_index: Any,
    anchor_obs: Any,
    *,
    gamma: float = 0.95,
    step_advantage_w: float = 1.0,
    mode: GigpoMode = "mean_norm",
    episode_stats_over_steps: bool = True,
    similarity_thresh: float | None = None,
    sample_mask: Any = None,
    eps: float = 1e-6,
    key_fn: Callable[[Any], Hashable] | None = None,
) -> GigpoParts:
    """The per-row pieces of :func:`gigpo_advantage`: episode and step advantages, groups.

    Args:
        step_reward: (B,) immediate env reward of each step row (shaping included).
        index: (B,) task-group keys (same for the N rollouts of one task).
        traj_uid: (B,) trajectory keys.
        step_index: (B,) int step number within the trajectory.
        anchor_obs: (B,) anchor state of each step.
        gamma: Discount of the step returns (every upstream GiGPO script uses 0.95).
        step_advantage_w: Weight w of the step advantage.
        mode: ``"mean_norm"`` (F_norm = 1) or ``"mean_std_norm"`` (F_norm = std + eps).
        episode_stats_over_steps: Episode statistics over step rows (True, verl-agent's code) or
            once per trajectory (False, the paper's Eq. 3).
        similarity_thresh: None for exact anchor matching, else a difflib ratio in (0, 1).
        sample_mask: (B,) False for padding rows: excluded from all statistics, given 0.
        eps: Added to the std in ``mean_std_norm``.
        key_fn: Maps an anchor to a hashable key (for example a discretiser); exact mode only.

    Returns:
        :class:`GigpoParts`, every array (B,) with 0 (group -1) on padding rows.
    """
    if mode not in _MODES:
        raise ValueError(f"mode={mode!r} is not one of {_MODES}")
    n = len(as_key_rows(index, "index", len(index)))
    reward = as_float_rows(step_reward, "step_reward", n)
    rows = valid_rows(sample_mask, n)
    step = as_int_array(step_index, "step_index", n)
    traj_uid = take(as_key_rows(traj_uid, "traj_uid", n), rows)
    index_v = take(index, rows)
    anchors = take(as_key_rows(anchor_obs, "anchor_obs", n), rows)
    use_std = mode == "mean_std_norm"

    group, traj, n_traj, traj_group = trajectory_groups(index_v, traj_uid)
    tro = trajectory_order(traj, step[rows])  # int ids: factorised once, numeric fast path
    r = reward[rows]
    episode = per_traj_sum(r, traj, n_traj, tro.order)  # summed in step order: row-order free
    if episode_stats_over_steps:
        # verl-agent's default (compute_mean_std_cross_steps=True): every step row counts, so
        # a one-row group is a singleton but a one-trajectory group of >= 2 steps is not.
        ep_adv = group_normalize(episode[traj], group, use_std=use_std, eps=eps, singleton="raw")
    else:
        ep_adv = group_normalize(episode, traj_group, use_std=use_std, eps=eps, singleton="raw")[
            traj
        ]
    step_ret = reverse_discounted_sum(r, gamma, tro)
    sgroup = build_step_groups(anchors, group, similarity_thresh=similarity_thresh, key_fn=key_fn)
    step_adv = group_normalize(step_ret, sgroup, use_std=use_std, eps=eps, singleton="self")

    full_group = np.full(n, -1, dtype=np.int64)
    full_group[rows] = sgroup
    return GigpoParts(
        advantage=scatter_rows(ep_adv + step_advantage_w * step_adv, rows),
        episode_return=scatter_rows(episode[traj], rows),
        episode_adv=scatter_rows(ep_adv, rows),
        step_return=scatter_rows(step_ret, rows),
        step_adv=scatter_rows(step_adv, rows),
        step_group=full_group,
    )


@torch.no_grad()
def gigpo_advantage(
    step_reward: Any,
    response_mask: Any,
    index: Any,
    traj_uid: Any,
    step_index: Any,
    anchor_obs: Any,
    **options: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GiGPO advantages ``A = A^E + w * A^S``, broadcast over each row's response tokens.

    Args:
        step_reward: (B,) immediate env reward of each step row (shaping included).
        response_mask: (B, L) 1 on action tokens.
        index: (B,) task-group keys (same for the N rollouts of one task).
        traj_uid: (B,) trajectory keys.
        step_index: (B,) int step number within the trajectory; rows may come in any order.
        anchor_obs: (B,) anchor state of each step: the observation before the action, without
            history or prompt template.
        **options: The keywords of :func:`gigpo_parts` (``gamma``, ``step_advantage_w``,
            ``mode``, ``episode_stats_over_steps``, ``similarity_thresh``, ``sample_mask``,
            ``eps``, ``key_fn``); an unknown keyword is a ``TypeError``.

    Returns:
        ``(advantages, returns)``, both (B, L), multiplied by ``response_mask``; equal.

    Raises:
        ValueError: On an unknown mode, bad shapes, a None anchor on a real row, a trajectory
            in two task groups or a duplicated ``(traj_uid, step_index)``.
    """
    mask = as_mask(response_mask)
    if len(index) != mask.shape[0]:
        raise ValueError(
            f"index has {len(index)} rows but response_mask has {mask.shape[0]}; one per step row"
        )
    parts = gigpo_parts(step_reward, index, traj_uid, step_index, anchor_obs, **options)
    adv = broadcast_rows(parts.advantage, mask)
    return adv, adv.clone()
