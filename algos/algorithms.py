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

Estimators and losses are looked up by name in ``algos.ESTIMATORS`` and
``algos.POLICY_LOSSES``; ``algo.estimator`` and ``algo.policy_loss`` replace the algorithm's
choice, so a function added with ``algos.register_estimator`` or
``algos.register_policy_loss`` trains without touching this file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from algos.batch import StepBatch
from algos.gigpo import step_discounted_returns
from algos.registry import compute_advantages


@dataclass(frozen=True)
class Algorithm:
    """One named algorithm.

    Attributes:
        name: Registry name.
        estimator: Advantage estimator name (``algos.ESTIMATORS``).
        loss: Policy loss name (``algos.POLICY_LOSSES``).
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


def estimator_options(name: str, cfg: Any) -> dict[str, Any]:
    """Keyword options of estimator ``name`` from the ``[algo]`` config section.

    Built-in estimators get their options from the typed fields (``gamma``, ``lam``,
    ``gigpo_mode``, ...); an estimator registered by the user gets none of them.
    ``cfg.estimator_kwargs`` is applied last, for any estimator.
    """
    unit = {"group_stats_unit": cfg.group_stats_unit}
    builtin: dict[str, dict[str, Any]] = {
        "step_gae": {"gamma": cfg.gamma, "lam": cfg.lam},
        # the rows' rewards are already discounted returns-to-go (see advantages())
        "gae": {"gamma": 1.0, "lam": cfg.lam},
        "grpo": unit,
        "drgrpo": unit,
        "rloo": unit,
        "reinforce_pp_baseline": unit,
        "reinforce_pp": {"gamma": cfg.gamma},
        "gigpo": {
            "gamma": cfg.gamma,
            "step_advantage_w": cfg.step_advantage_w,
            "mode": cfg.gigpo_mode,
        },
    }
    return {**builtin.get(name, {}), **dict(getattr(cfg, "estimator_kwargs", {}) or {})}


def advantages(algo: Algorithm, batch: StepBatch, cfg: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (B, L) of ``algo`` on a batch, through ``algos.compute_advantages``.

    The estimator is ``cfg.estimator`` when set, else the algorithm's; it is looked up in
    ``algos.ESTIMATORS``, so an estimator added with ``algos.register_estimator`` trains with
    ``--set algo.estimator=NAME``. For ``gae`` each row's reward is first replaced by its
    discounted return-to-go (token GAE runs inside one row and never bootstraps across steps).

    Args:
        algo: The algorithm.
        batch: The step rows (``values`` filled in for critic estimators).
        cfg: The ``[algo]`` config section.

    Raises:
        ValueError: Unknown estimator (the message lists the registered ones), or a batch
            missing a field the estimator needs.
    """
    name = getattr(cfg, "estimator", "") or algo.estimator
    if name == "gae":
        real = batch.sample_mask.numpy()  # padding rows share keys: keep them out
        rtg = np.zeros(len(batch))
        rtg[real] = step_discounted_returns(
            batch.step_reward[real], batch.traj_uid[real], batch.step_index[real], cfg.gamma
        )
        batch = dataclasses.replace(batch, step_reward=torch.from_numpy(rtg))
    return compute_advantages(name, batch, **estimator_options(name, cfg))
