"""Trajectory timelines over step rows: ordering by (traj_uid, step_index) and backward sums.

Step rows arrive in any order (upstream's batch balancing reorders them), so every estimator that
needs "the next step of this trajectory" goes through :func:`trajectory_order`, which sorts by
``(traj_uid, step_index)`` instead of trusting row order as verl-agent's
``compute_step_discounted_returns`` does (docs/algorithms.md, ``gigpo``). Backward recursions
(``y_t = x_t + c * y_{t+1}``) then run level by level from each trajectory's last step: a Python
loop over step depth (at most the longest trajectory), each iteration a vector operation over all
trajectories, never a loop over trajectories.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from algos.grouping import factorize


class TrajectoryOrder(NamedTuple):
    """Where each step row sits in its trajectory.

    Attributes:
        traj: (N,) int64 trajectory id per row (first-seen order of ``traj_uid``).
        n_traj: Number of trajectories.
        next_row: (N,) int64 row of the same trajectory's next step, -1 on its last step.
        depth: (N,) int64 steps remaining after this row (0 on the last step).
        traj_uids: The first-seen ``traj_uid`` of each trajectory id.
        order: (N,) rows sorted by (trajectory id, step_index).
    """

    traj: np.ndarray
    n_traj: int
    next_row: np.ndarray
    depth: np.ndarray
    traj_uids: list[Any]
    order: np.ndarray


def as_int_array(values: Any, name: str, n: int) -> np.ndarray:
    """Return ``values`` as a (n,) int64 numpy array, or raise naming the field."""
    if hasattr(values, "detach") and hasattr(values, "numpy"):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), one entry per row; got {arr.shape}")
    if arr.dtype.kind not in "iub":
        if arr.dtype.kind == "f" and np.all(arr == np.round(arr)):
            return arr.astype(np.int64)
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def trajectory_order(traj_uid: Any, step_index: Any) -> TrajectoryOrder:
    """Sort step rows into trajectories and link each row to its next step.

    Steps are ranked by ``step_index`` inside each trajectory; gaps in ``step_index`` are allowed
    and ignored (the next step is the next larger index), matching upstream, which uses the
    rollout order of the rows that survived.

    Args:
        traj_uid: (N,) trajectory keys (any hashable values).
        step_index: (N,) int step numbers within the trajectory.

    Returns:
        A :class:`TrajectoryOrder`.

    Raises:
        ValueError: If two rows share a ``(traj_uid, step_index)`` pair (duplicated rows, as
            upstream's ``adjust_batch`` makes: pad with ``sample_mask=False`` instead).
    """
    traj, uniq = factorize(traj_uid)
    n = len(traj)
    step = as_int_array(step_index, "step_index", n)
    span = int(step.max()) - int(step.min()) + 1 if n else 1
    if n and len(uniq) * span < 2**62:
        # one int64 key (unique per row unless duplicated) sorts faster than a lexsort
        order = np.argsort(traj * span + (step - step.min()), kind="stable")
    else:
        order = np.lexsort((step, traj))
    t_s, st_s = traj[order], step[order]
    same_next = t_s[1:] == t_s[:-1]
    dup = same_next & (st_s[1:] == st_s[:-1])
    if dup.any():
        r = int(order[1:][dup][0])
        raise ValueError(
            f"rows {int(order[:-1][dup][0])} and {r} both have traj_uid={uniq[traj[r]]!r} and "
            f"step_index={int(step[r])}; each (traj_uid, step_index) must appear once "
            "(pad with sample_mask=False rows instead of duplicating rows)"
        )
    next_row = np.full(n, -1, dtype=np.int64)
    next_row[order[:-1][same_next]] = order[1:][same_next]
    # depth = steps remaining: position from the end of the sorted trajectory segment.
    counts = np.bincount(t_s, minlength=len(uniq))
    ends = np.cumsum(counts)
    depth = np.empty(n, dtype=np.int64)
    depth[order] = ends[t_s] - 1 - np.arange(n)
    return TrajectoryOrder(traj, len(uniq), next_row, depth, uniq, order)


def reverse_discounted_sum(
    x: np.ndarray, coef: float, tro: TrajectoryOrder, tail: np.ndarray | None = None
) -> np.ndarray:
    """Backward recursion ``y_t = x_t + coef * y_{t+1}`` along each trajectory.

    Args:
        x: (N,) float per-row values.
        coef: Discount applied per step (gamma for returns, gamma*lambda for GAE).
        tro: The rows' :class:`TrajectoryOrder`.
        tail: Optional (N,) value of ``y_{T}`` after each row; only read on last steps.
            Defaults to 0 (no bootstrap).

    Returns:
        (N,) float64.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.zeros_like(x)
    if x.size == 0:
        return y
    # depth is small: as int16 the stable sort is numpy's O(n) radix sort
    depth = tro.depth.astype(np.int16) if tro.depth.max() < 2**15 else tro.depth
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(tro.depth[by_depth], np.arange(int(tro.depth.max()) + 2))
    last = by_depth[bounds[0] : bounds[1]]
    y[last] = x[last] + (coef * tail[last] if tail is not None else 0.0)
    for k in range(1, len(bounds) - 1):
        rows = by_depth[bounds[k] : bounds[k + 1]]
        y[rows] = x[rows] + coef * y[tro.next_row[rows]]
    return y


def per_traj_sum(
    x: np.ndarray, traj: np.ndarray, n_traj: int, order: np.ndarray | None = None
) -> np.ndarray:
    """Sum of ``x`` over each trajectory: (n_traj,) float64, independent of row order.

    Args:
        x: (N,) per-row values.
        traj: (N,) int64 trajectory ids in ``[0, n_traj)``.
        n_traj: Number of trajectories.
        order: Optional canonical row order (e.g. :attr:`TrajectoryOrder.order`); by default
            rows are summed in (trajectory, value) order.
    """
    x = np.asarray(x, dtype=np.float64)
    if order is None:
        order = np.lexsort((x, traj))  # canonical summation order
    return np.bincount(traj[order], weights=x[order], minlength=n_traj)
