"""Named algorithms: each is an advantage estimator, a policy loss and whether it needs a critic.

| name | estimator | policy loss | critic |
|---|---|---|---|
| ``steppo`` | ``step_gae`` (GAE over steps, V at each step boundary) | ``gspo`` (sequence ratio) | yes |
| ``ppo`` | ``gae`` (token GAE inside each step row) | ``ppo_clip`` | yes |
| ``grpo`` | ``grpo`` | ``ppo_clip`` | no |
| ``drgrpo`` | ``drgrpo`` (group mean baseline, no std) | ``ppo_clip`` | no |
| ``rloo`` | ``rloo`` | ``ppo_clip`` | no |
| ``reinforce_pp`` | ``reinforce_pp`` (discounted return-to-go, whitened) | ``ppo_clip`` | no |
| ``gigpo`` | ``gigpo`` (episode + anchor-state step groups) | ``ppo_clip`` | no |
| ``gspo`` | ``grpo`` | ``gspo`` | no |

StepPO is Agent-R1's ``run_steppo.sh``: ``run_ppo.sh`` (step-level GAE) with the GSPO loss. For
``ppo`` each step row's reward, placed on its last action token, is the row's discounted
return-to-go, since token GAE runs inside one row and never bootstraps across steps
(``row_reward`` in :func:`algos.registry.gae_from_batch`).

An algorithm's ``defaults`` are ``[algo]`` values it needs unless the recipe or ``--set`` says
otherwise (GSPO's clip range is 3e-4/4e-4, not PPO's 0.2); see :mod:`algos.config` for when they
apply. ``algo.estimator`` and ``algo.policy_loss`` replace the algorithm's choice, so a
function added with ``algos.register_estimator`` or ``algos.register_policy_loss`` trains
without touching this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from algos.batch import StepBatch
from algos.registry import ESTIMATORS, POLICY_LOSSES, Estimator, PolicyLoss

#: GSPO's clip range and aggregation (arXiv:2507.18071; verl-agent's gspo_trainer scripts).
_GSPO = {"clip_low": 3e-4, "clip_high": 4e-4, "loss_agg": "seq-mean-token-mean"}


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
        defaults: ``[algo]`` field -> value this algorithm needs by default.
    """

    name: str
    estimator: str
    loss: str
    critic: bool = False
    value_level: str = "step"
    summary: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm(
            "steppo",
            "step_gae",
            "gspo",
            critic=True,
            summary="step-level GAE critic + sequence-level ratio (Agent-R1)",
            defaults=_GSPO,
        ),
        Algorithm(
            "ppo",
            "gae",
            "ppo_clip",
            critic=True,
            value_level="token",
            summary="token-level GAE critic + PPO clip",
        ),  # fmt: skip
        Algorithm("grpo", "grpo", "ppo_clip", summary="group-normalised outcome (mean/std)"),
        Algorithm("drgrpo", "drgrpo", "ppo_clip", summary="Dr.GRPO: group mean baseline, no std"),
        Algorithm("rloo", "rloo", "ppo_clip", summary="leave-one-out group baseline"),
        Algorithm(
            "reinforce_pp",
            "reinforce_pp",
            "ppo_clip",
            summary="REINFORCE++: whitened discounted returns",
        ),  # fmt: skip
        Algorithm(
            "gigpo", "gigpo", "ppo_clip", summary="GiGPO: episode groups + anchor-state step groups"
        ),
        Algorithm(
            "gspo", "grpo", "gspo", summary="GRPO advantages + GSPO sequence ratio", defaults=_GSPO
        ),
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


def resolve_estimator(algo_cfg: Any) -> Estimator:
    """The estimator an ``[algo]`` section trains with: ``algo.estimator`` or the algorithm's."""
    return ESTIMATORS[algo_cfg.estimator or get_algorithm(algo_cfg.name).estimator]


def resolve_loss(algo_cfg: Any) -> PolicyLoss:
    """The policy loss an ``[algo]`` section trains with: ``algo.policy_loss`` or the algorithm's."""
    return POLICY_LOSSES[algo_cfg.policy_loss or get_algorithm(algo_cfg.name).loss]


def advantages(batch: StepBatch, algo_cfg: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (B, L) of a batch under an ``[algo]`` config section.

    The estimator's options are read from the section (its registry entry says which fields),
    then ``algo.estimator_kwargs`` is applied on top.

    Raises:
        ValueError: Unknown estimator (the message lists the registered ones), or a batch
            missing a field the estimator needs.
    """
    entry = resolve_estimator(algo_cfg)
    options = {**entry.config_options(algo_cfg), **dict(algo_cfg.estimator_kwargs)}
    return entry.from_batch(batch, **options)
