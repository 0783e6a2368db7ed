"""PPO-family learners for LLM agents: advantage estimators, policy losses, the step batch.

The core (this package's import) needs only torch and numpy::

    import algos

    adv, ret = algos.compute_advantages("gigpo", batch, gamma=0.95, mode="mean_norm")
    loss, metrics = algos.POLICY_LOSSES["ppo_clip"](old_logp, logp, adv, batch.response_mask)

See docs/algorithms.md for every formula, option and edge case. Token-level GAE is
``algos.gae.gae``: it is not re-exported here, so that ``algos.gae`` stays the module.
"""

from algos.batch import StepBatch
from algos.gae import step_gae
from algos.gigpo import (
    build_step_groups,
    gigpo_advantage,
    gigpo_parts,
    step_discounted_returns,
)
from algos.grouping import factorize, group_mean_std, group_normalize, masked_whiten, to_hashable
from algos.losses import (
    AGG_MODES,
    KL_KINDS,
    agg_loss,
    entropy_from_logits,
    gspo_loss,
    kl_estimate,
    ppo_clip_loss,
    reinforce_loss,
    value_loss,
    value_mask,
)
from algos.outcome import (
    drgrpo,
    grpo,
    reinforce_pp,
    reinforce_pp_baseline,
    reinforce_pp_token,
    rloo,
)
from algos.registry import (
    ESTIMATORS,
    POLICY_LOSSES,
    compute_advantages,
    get_policy_loss,
    register_estimator,
    register_policy_loss,
)

__all__ = [
    "AGG_MODES",
    "ESTIMATORS",
    "KL_KINDS",
    "POLICY_LOSSES",
    "StepBatch",
    "agg_loss",
    "build_step_groups",
    "compute_advantages",
    "drgrpo",
    "entropy_from_logits",
    "factorize",
    "get_policy_loss",
    "gigpo_advantage",
    "gigpo_parts",
    "group_mean_std",
    "group_normalize",
    "grpo",
    "gspo_loss",
    "kl_estimate",
    "masked_whiten",
    "ppo_clip_loss",
    "register_estimator",
    "register_policy_loss",
    "reinforce_loss",
    "reinforce_pp",
    "reinforce_pp_baseline",
    "reinforce_pp_token",
    "rloo",
    "step_discounted_returns",
    "step_gae",
    "to_hashable",
    "value_loss",
    "value_mask",
]
