"""Straightforward per-group Python-loop versions of every estimator, for equivalence tests.

These follow the formulas of docs/algorithms.md the way upstream writes them (a dict of lists per
group, a loop per group), in float64 and with that page's constant-group rule, so the
vectorised ``algos`` functions must agree with them to round-off.
``benchmarks/bench_advantages.py`` times them against the vectorised versions. Inputs are
plain per-row sequences; rows with ``sample_mask`` False are skipped and get 0. Outputs are
per-row float64 arrays (B,), or (B, L) for the token-level estimators.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np


def _valid(n, sample_mask):
    return [True] * n if sample_mask is None else [bool(v) for v in sample_mask]


def group_norm(members, use_std, eps=1e-6, singleton="raw"):
    """members: list of (row, x) of one group -> dict row -> normalised value."""
    xs = [x for _, x in members]
    n = len(xs)
    if n == 1:
        row, x = members[0]
        if singleton == "raw":
            return {row: x / (1.0 + eps) if use_std else x}
        return {row: 0.0}
    if max(xs) == min(xs):
        return {row: 0.0 for row, _ in members}
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return {row: (x - mean) / (std + eps) if use_std else x - mean for row, x in members}


def trajectories(traj_uid, step_index, valid):
    """traj -> list of rows sorted by step."""
    trajs = defaultdict(list)
    for i, (t, s) in enumerate(zip(traj_uid, step_index)):
        if valid[i]:
            trajs[t].append((int(s), i))
    return {t: [i for _, i in sorted(rows)] for t, rows in trajs.items()}


def step_returns(step_reward, traj_uid, step_index, gamma, sample_mask=None):
    n = len(step_reward)
    out = np.zeros(n)
    for rows in trajectories(traj_uid, step_index, _valid(n, sample_mask)).values():
        run = 0.0
        for i in reversed(rows):
            run = float(step_reward[i]) + gamma * run
            out[i] = run
    return out


def episode_returns(step_reward, traj_uid, valid):
    totals = defaultdict(float)
    for i, t in enumerate(traj_uid):
        if valid[i]:
            totals[t] += float(step_reward[i])
    return totals


def _outcome(step_reward, index, traj_uid, unit, valid, score):
    """Group members per task group, per row or per trajectory; ``score(members)`` -> dict."""
    n = len(step_reward)
    totals = episode_returns(step_reward, traj_uid, valid)
    out = np.zeros(n)
    groups = defaultdict(list)
    if unit == "step_row":
        for i in range(n):
            if valid[i]:
                groups[index[i]].append((i, totals[traj_uid[i]]))
        for members in groups.values():
            for row, v in score(members).items():
                out[row] = v
        return out
    traj_group = {}
    for i in range(n):
        if valid[i]:
            traj_group[traj_uid[i]] = index[i]
    for t, g in traj_group.items():
        groups[g].append((t, totals[t]))
    per_traj = {}
    for members in groups.values():
        per_traj.update(score(members))
    for i in range(n):
        if valid[i]:
            out[i] = per_traj[traj_uid[i]]
    return out


def grpo(
    step_reward, index, traj_uid, norm_by_std=True, unit="step_row", eps=1e-6, sample_mask=None
):
    valid = _valid(len(step_reward), sample_mask)
    return _outcome(
        step_reward, index, traj_uid, unit, valid, lambda m: group_norm(m, norm_by_std, eps, "raw")
    )


def rloo(step_reward, index, traj_uid, unit="step_row", singleton="raw", sample_mask=None):
    def score(members):
        n = len(members)
        if n == 1:
            row, x = members[0]
            return {row: x if singleton == "raw" else 0.0}
        xs = [x for _, x in members]
        if max(xs) == min(xs):
            return {row: 0.0 for row, _ in members}
        total = sum(xs)
        return {row: x - (total - x) / (n - 1) for row, x in members}

    valid = _valid(len(step_reward), sample_mask)
    return _outcome(step_reward, index, traj_uid, unit, valid, score)


def whiten(values, weights, eps=1e-8):
    """Token-weighted whitening of per-entry values (verl masked_whiten), constant -> 0."""
    pairs = [(v, w) for v, w in zip(values, weights) if w > 0]
    n = sum(w for _, w in pairs)
    out = np.zeros(len(values))
    if n < 2 or max(v for v, _ in pairs) == min(v for v, _ in pairs):
        return out
    mean = sum(v * w for v, w in pairs) / n
    var = sum(w * (v - mean) ** 2 for v, w in pairs) / n * n / (n - 1)
    for i, (v, w) in enumerate(zip(values, weights)):
        if w > 0:
            out[i] = (v - mean) / math.sqrt(var + eps)
    return out


def reinforce_pp_baseline(step_reward, index, traj_uid, tokens, unit="step_row", sample_mask=None):
    valid = _valid(len(step_reward), sample_mask)
    centred = _outcome(
        step_reward, index, traj_uid, unit, valid, lambda m: group_norm(m, False, singleton="raw")
    )
    return whiten(centred, [t if v else 0 for t, v in zip(tokens, valid)])


def reinforce_pp(step_reward, traj_uid, step_index, tokens, gamma=1.0, sample_mask=None):
    valid = _valid(len(step_reward), sample_mask)
    ret = step_returns(step_reward, traj_uid, step_index, gamma, sample_mask)
    return whiten(ret, [t if v else 0 for t, v in zip(tokens, valid)]), ret


def gigpo(
    step_reward,
    index,
    traj_uid,
    step_index,
    anchor_obs,
    gamma=0.95,
    w=1.0,
    mode="mean_norm",
    over_steps=True,
    eps=1e-6,
    sample_mask=None,
):
    """Returns (advantage, episode_adv, step_adv), per row. Anchors must be hashable here."""
    n = len(step_reward)
    valid = _valid(n, sample_mask)
    use_std = mode == "mean_std_norm"
    episode = grpo(
        step_reward,
        index,
        traj_uid,
        use_std,
        "step_row" if over_steps else "trajectory",
        eps,
        sample_mask,
    )
    ret = step_returns(step_reward, traj_uid, step_index, gamma, sample_mask)
    step_groups = defaultdict(list)
    for i in range(n):
        if valid[i]:
            step_groups[(index[i], anchor_obs[i])].append((i, ret[i]))
    step = np.zeros(n)
    for members in step_groups.values():
        for row, v in group_norm(members, use_std, eps, "self").items():
            step[row] = v
    return episode + w * step, episode, step


def step_gae(
    step_reward,
    step_value,
    traj_uid,
    step_index,
    gamma=1.0,
    lam=1.0,
    whiten_=True,
    sample_mask=None,
):
    n = len(step_reward)
    valid = _valid(n, sample_mask)
    adv = np.zeros(n)
    ret = np.zeros(n)
    for rows in trajectories(traj_uid, step_index, valid).values():
        last, next_v = 0.0, 0.0
        for i in reversed(rows):
            delta = float(step_reward[i]) + gamma * next_v - float(step_value[i])
            last = delta + gamma * lam * last
            adv[i] = last
            ret[i] = last + float(step_value[i])
            next_v = float(step_value[i])
    if whiten_:
        real = [adv[i] for i in range(n) if valid[i]]
        if len(real) >= 2 and max(real) != min(real):
            mean = sum(real) / len(real)
            std = math.sqrt(sum((a - mean) ** 2 for a in real) / (len(real) - 1))
            adv = np.array([(adv[i] - mean) / (std + 1e-8) if valid[i] else 0.0 for i in range(n)])
        else:
            adv = np.zeros(n)
    return adv, ret


def token_gae(rewards, values, mask, gamma=1.0, lam=1.0, whiten_=True):
    """Per-row loop over tokens; rows are lists of floats. Returns (adv, ret) as (B, L) arrays."""
    b, length = len(mask), len(mask[0])
    adv = np.zeros((b, length))
    ret = np.zeros((b, length))
    for i in range(b):
        last, next_v = 0.0, 0.0
        for j in reversed(range(length)):
            if not mask[i][j]:
                continue
            delta = rewards[i][j] + gamma * next_v - values[i][j]
            last = delta + gamma * lam * last
            adv[i, j] = last
            ret[i, j] = last + values[i][j]
            next_v = values[i][j]
    if whiten_:
        flat = whiten(adv.reshape(-1), np.asarray(mask, dtype=float).reshape(-1))
        adv = flat.reshape(b, length)
    return adv, ret


def random_batch(rng, n_groups=4, n_traj=4, max_steps=5, length=6, n_pad=3, anchors_per_group=3):
    """A shuffled random batch of step rows with padding rows, as plain Python/numpy fields.

    Rewards mix binary, x10-scaled discounted and arbitrary values, with repeats so constant
    groups occur; anchor texts repeat within and across task groups.
    """
    import torch

    rows = []
    for g in range(n_groups):
        for k in range(n_traj):
            length_t = int(rng.integers(1, max_steps + 1))
            for s in range(length_t):
                reward = rng.choice(
                    [0.0, 1.0, 10 * 0.95**s, float(rng.normal())], p=[0.4, 0.2, 0.2, 0.2]
                )
                anchor = f"room {int(rng.integers(anchors_per_group))}"
                rows.append(
                    (reward, f"task{g}", f"t{g}-{k}", s, anchor, int(rng.integers(1, length + 1)))
                )
    order = rng.permutation(len(rows))
    rows = [rows[i] for i in order]
    for _ in range(n_pad):
        pos = int(rng.integers(len(rows) + 1))
        rows.insert(pos, (0.0, None, None, 0, None, 0))
    b = len(rows)
    mask = torch.zeros(b, length)
    for i, r in enumerate(rows):
        mask[i, : r[5]] = 1
    return {
        "step_reward": np.array([r[0] for r in rows]),
        "index": [r[1] for r in rows],
        "traj_uid": [r[2] for r in rows],
        "step_index": np.array([r[3] for r in rows]),
        "anchor_obs": [r[4] for r in rows],
        "tokens": [r[5] for r in rows],
        "response_mask": mask,
        "sample_mask": np.array([r[1] is not None for r in rows]),
    }


def gigpo_torch_loop(
    step_reward, index, traj_uid, step_index, anchor_obs, gamma=0.95, mode="mean_norm", eps=1e-6
):
    """GiGPO written the way verl-agent's ``core_gigpo.py`` is: per-row tensors, per-group torch ops.

    Same formula as :func:`gigpo` (float64, constant groups 0, episode stats over step rows);
    only the implementation style differs, so the benchmark can show the cost of that style.
    """
    import torch

    n = len(step_reward)
    use_std = mode == "mean_std_norm"

    def norm(groups, singleton_raw):
        out = {}
        for rows in groups.values():
            vals = torch.stack([scores[i] for i in rows])
            if len(rows) == 1:
                mean, std = (
                    (torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64))
                    if singleton_raw
                    else (vals[0], torch.tensor(1.0, dtype=torch.float64))
                )
            else:
                mean, std = torch.mean(vals), torch.std(vals)
            for i in rows:
                if len(rows) > 1 and bool(torch.all(vals == vals[0])):
                    out[i] = torch.tensor(0.0, dtype=torch.float64)
                else:
                    out[i] = (scores[i] - mean) / (std + eps) if use_std else scores[i] - mean
        return out

    trajs = trajectories(traj_uid, step_index, [True] * n)
    totals = {
        t: sum(torch.tensor(float(step_reward[i]), dtype=torch.float64) for i in rows)
        for t, rows in trajs.items()
    }
    scores = {i: totals[traj_uid[i]] for i in range(n)}
    by_index = defaultdict(list)
    for i in range(n):
        by_index[index[i]].append(i)
    episode = norm(by_index, True)
    returns = {}
    for rows in trajs.values():
        run = torch.tensor(0.0, dtype=torch.float64)
        for i in reversed(rows):
            run = torch.tensor(float(step_reward[i]), dtype=torch.float64) + gamma * run
            returns[i] = run
    scores = returns
    step_groups = {}
    for g, rows in by_index.items():
        clusters = defaultdict(list)
        for i in rows:
            clusters[anchor_obs[i]].append(i)
        for key, members in clusters.items():
            step_groups[(g, key)] = members
    step = norm(step_groups, False)
    return np.array([float(episode[i] + step[i]) for i in range(n)])
