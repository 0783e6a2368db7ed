"""Named algorithms: each is an advantage estimator, a policy loss and whether it needs a critic.

| name | estimator | policy loss | critic |
|---|---|---|---|
| ``steppo`` | ``step_gae`` (GAE over steps, V at each step boundary) | ``gspo`` (sequence ratio) | yes |
| ``ppo`` | ``gae`` (token GAE inside each step row) | ``ppo_clip`` | yes |
| ``grpo`` | ``grpo`` | ``ppo_clip`` | no |
| ``drgrpo`` | ``grpo`` without std (Dr.GRPO) | ``ppo_clip`` | no |
| ``rloo`` | ``rloo`` | ``ppo_clip`` | no |
| ``reinforce_pp`` | ``reinforce_pp`` (discounted return-to-go, whitened) | ``ppo_clip`` | no |
| ``gigpo`` | ``gigpo`` (episode + anchor-state step groups) | ``ppo_clip`` | no |
| ``gspo`` | ``grpo`` | ``gspo`` | no |

StepPO is Agent-R1's ``run_steppo.sh``: ``run_ppo.sh`` (step-level GAE) with the GSPO loss
(notes/agent-r1-recipes.md section 6). For ``ppo`` each step row's reward, placed on its last
action token, is the row's discounted return-to-go, since token GAE runs inside one row and
never bootstraps across steps (verl-agent's PPO baseline puts the episode return there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class Algorithm:
    """One named algorithm.

    Attributes:
        name: Registry name.
        estimator: Advantage estimator name (``algos.ESTIMATORS``).
        loss: Policy loss name (``ppo_clip`` or ``gspo``).
        critic: Whether a value model is trained.
        value_level: ``"step"`` (critic trained at position 0 of each row) or ``"token"``.
        summary: One line for ``algos list``.
    """

    name: str
    estimator: str
    loss: str
    critic: bool = False
    value_level: str = "step"
    summary: str = ""


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(
            "steppo",
            "step_gae",
            "gspo",
            True,
            "step",
            "step-level GAE critic + sequence-level ratio (Agent-R1)",
        ),
        Algorithm("ppo", "gae", "ppo_clip", True, "token", "token-level GAE critic + PPO clip"),
        Algorithm("grpo", "grpo", "ppo_clip", summary="group-normalised outcome (mean/std)"),
        Algorithm("drgrpo", "drgrpo", "ppo_clip", summary="Dr.GRPO: group mean baseline, no std"),
        Algorithm("rloo", "rloo", "ppo_clip", summary="leave-one-out group baseline"),
        Algorithm(
            "reinforce_pp",
            "reinforce_pp",
            "ppo_clip",
            summary="REINFORCE++: whitened discounted returns",
        ),
        Algorithm(
            "gigpo", "gigpo", "ppo_clip", summary="GiGPO: episode groups + anchor-state step groups"
        ),
        Algorithm("gspo", "grpo", "gspo", summary="GRPO advantages + GSPO sequence ratio"),
    )
}


def get_algorithm(name: str) -> Algorithm:
    """Return the algorithm called ``name``.

    Raises:
        ValueError: Unknown name (the message lists the valid ones).
    """
    if name not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; valid: {', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def compute_advantages(
    algo: Algorithm,
    *,
    step_reward: np.ndarray,
    response_mask: torch.Tensor,
    index: np.ndarray,
    traj_uid: np.ndarray,
    step_index: np.ndarray,
    anchor_obs: np.ndarray,
    sample_mask: np.ndarray,
    values: torch.Tensor | None,
    cfg: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (B, L) of ``algo`` on one batch of step rows.

    Args:
        algo: The algorithm.
        step_reward: (B,) shaped env reward per row.
        response_mask: (B, L) 1 on response tokens.
        index: (B,) task-group ids.
        traj_uid: (B,) trajectory ids.
        step_index: (B,) step number in the trajectory.
        anchor_obs: (B,) object array of anchor texts (GiGPO).
        sample_mask: (B,) False for padding rows.
        values: (B, L) critic values (``values[:, 0]`` = V(prompt)); critic algorithms only.
        cfg: The ``[algo]`` config section.
    """
    from algos import gae, gigpo, outcome

    est = algo.estimator
    group = {"group_stats_unit": cfg.group_stats_unit, "sample_mask": sample_mask}
    if est == "step_gae":
        return gae.step_gae(
            step_reward,
            values[:, 0],
            response_mask,
            traj_uid,
            step_index,
            gamma=cfg.gamma,
            lam=cfg.lam,
            sample_mask=sample_mask,
        )
    if est == "gae":
        ret = gigpo.step_discounted_returns(step_reward, traj_uid, step_index, cfg.gamma)
        tok_r = torch.zeros_like(values, dtype=torch.float32)
        last = response_mask.sum(-1).long().clamp(min=1) - 1
        tok_r[torch.arange(len(last)), last] = torch.as_tensor(np.asarray(ret), dtype=torch.float32)
        return gae.gae(
            tok_r * response_mask,
            values,
            response_mask,
            gamma=1.0,
            lam=cfg.lam,
            sample_mask=sample_mask,
        )
    if est == "grpo":
        return outcome.grpo(step_reward, response_mask, index, traj_uid, **group)
    if est == "drgrpo":
        return outcome.grpo(step_reward, response_mask, index, traj_uid, norm_by_std=False, **group)
    if est == "rloo":
        return outcome.rloo(step_reward, response_mask, index, traj_uid, **group)
    if est == "reinforce_pp":
        return outcome.reinforce_pp(
            step_reward,
            response_mask,
            traj_uid,
            step_index,
            gamma=cfg.gamma,
            sample_mask=sample_mask,
        )
    if est == "gigpo":
        return gigpo.gigpo_advantage(
            step_reward,
            response_mask,
            index,
            traj_uid,
            step_index,
            anchor_obs,
            gamma=cfg.gamma,
            step_advantage_w=cfg.step_advantage_w,
            mode=cfg.gigpo_mode,
            sample_mask=sample_mask,
        )
    raise ValueError(f"algorithm {algo.name!r} names unknown estimator {est!r}")
