"""Name -> function registries for advantage estimators and policy losses, and the batch adapter.

``ESTIMATORS[name]`` is the pure estimator function (its own signature, see each module);
:func:`compute_advantages` calls any of them by name from a :class:`~algos.batch.StepBatch`.
``POLICY_LOSSES[name]`` share one signature:
``fn(old_logp, logp, advantages, response_mask, **options) -> (loss, metrics)``.
An unknown name raises ``ValueError`` listing the valid ones: an estimator never silently
returns zeros (Agent-R1 left advantages at 0 for any estimator it did not implement).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from algos import gae as _gae
from algos import gigpo as _gigpo
from algos import losses as _losses
from algos import outcome as _outcome
from algos.batch import StepBatch


class Registry(dict):
    """A ``dict`` of name -> callable whose lookup of an unknown name raises ``ValueError``."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def __missing__(self, name: str) -> Any:
        raise ValueError(f"unknown {self.kind} {name!r}; valid names: {sorted(self)}")

    def register(self, name: str, fn: Callable | None = None) -> Callable:
        """Register ``fn`` under ``name`` (usable as a decorator); re-registering raises."""

        def add(f: Callable) -> Callable:
            if name in self:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self[name] = f
            return f

        return add if fn is None else add(fn)


ESTIMATORS: Registry = Registry("advantage estimator")
"""name -> estimator: step_gae, gae, grpo, drgrpo, rloo, reinforce_pp, reinforce_pp_baseline, gigpo."""
POLICY_LOSSES: Registry = Registry("policy loss")
"""name -> policy loss: ppo_clip (alias vanilla), gspo, reinforce."""
_FROM_BATCH: dict[str, Callable[..., tuple[torch.Tensor, torch.Tensor]]] = {}


def register_estimator(
    name: str, fn: Callable, from_batch: Callable[..., tuple[torch.Tensor, torch.Tensor]]
) -> None:
    """Register an estimator and the adapter that calls it from a ``StepBatch``.

    Args:
        name: Registry name.
        fn: The pure estimator.
        from_batch: ``from_batch(batch, **kwargs) -> (advantages, returns)``.
    """
    ESTIMATORS.register(name, fn)
    _FROM_BATCH[name] = from_batch


def register_policy_loss(name: str, fn: Callable | None = None) -> Callable:
    """Register a policy loss ``fn(old_logp, logp, advantages, response_mask, **kw)``."""
    return POLICY_LOSSES.register(name, fn)


def get_policy_loss(name: str) -> Callable:
    """The policy loss registered as ``name``; ``ValueError`` listing the valid names if none."""
    return POLICY_LOSSES[name]


def compute_advantages(
    name: str, batch: StepBatch, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run estimator ``name`` on a ``StepBatch``: ``(advantages (B, L), returns (B, L))``.

    ``kwargs`` are the estimator's own options (``gamma``, ``lam``, ``mode``, ...); the batch
    supplies rewards, masks, keys and ``sample_mask``. Estimator-specific needs:

    * ``step_gae`` reads V(s_t) from ``batch.values[:, 0]``;
    * ``gae`` reads ``batch.values`` and puts each row's reward on its last action token;
      ``row_reward="episode"`` puts the trajectory's return there instead (verl-agent's PPO
      baseline), default ``"step"``;
    * ``gigpo`` needs ``batch.anchor_obs``.

    Raises:
        ValueError: On an unknown name, or a batch missing a field the estimator needs.
    """
    ESTIMATORS[name]  # noqa: B018 - raises the "unknown estimator" ValueError
    return _FROM_BATCH[name](batch, **kwargs)


def _need(batch: StepBatch, field: str, name: str) -> Any:
    value = getattr(batch, field)
    if value is None:
        raise ValueError(f"estimator {name!r} needs StepBatch.{field}, which is None")
    return value


def _step_gae_from_batch(batch: StepBatch, **kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
    values = _need(batch, "values", "step_gae")
    return _gae.step_gae(
        batch.step_reward, values[:, 0], batch.response_mask, batch.traj_uid, batch.step_index,
        sample_mask=batch.sample_mask, **kw,
    )  # fmt: skip


def _gae_from_batch(
    batch: StepBatch, *, row_reward: str = "step", **kw: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    values = _need(batch, "values", "gae")
    if row_reward == "step":
        rewards = batch.token_level_rewards()
    elif row_reward == "episode":
        from algos.grouping import factorize

        traj, _ = factorize(batch.traj_uid)
        traj_t = torch.from_numpy(traj)
        real = batch.sample_mask.to(torch.float64)
        totals = torch.zeros(int(traj.max(initial=-1)) + 1, dtype=torch.float64)
        totals.index_add_(0, traj_t, batch.step_reward * real)
        rewards = batch.token_level_rewards(totals[traj_t])
    else:
        raise ValueError(f"row_reward={row_reward!r} is not one of ('step', 'episode')")
    return _gae.gae(rewards, values, batch.response_mask, sample_mask=batch.sample_mask, **kw)


def _outcome_from_batch(fn: Callable) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def run(batch: StepBatch, **kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return fn(
            batch.step_reward, batch.response_mask, batch.index, batch.traj_uid,
            sample_mask=batch.sample_mask, **kw,
        )  # fmt: skip

    return run


def _reinforce_pp_from_batch(batch: StepBatch, **kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
    return _outcome.reinforce_pp(
        batch.step_reward, batch.response_mask, batch.traj_uid, batch.step_index,
        sample_mask=batch.sample_mask, **kw,
    )  # fmt: skip


def _gigpo_from_batch(batch: StepBatch, **kw: Any) -> tuple[torch.Tensor, torch.Tensor]:
    anchors = _need(batch, "anchor_obs", "gigpo")
    return _gigpo.gigpo_advantage(
        batch.step_reward, batch.response_mask, batch.index, batch.traj_uid, batch.step_index,
        anchors, sample_mask=batch.sample_mask, **kw,
    )  # fmt: skip


register_estimator("step_gae", _gae.step_gae, _step_gae_from_batch)
register_estimator("gae", _gae.gae, _gae_from_batch)
register_estimator("grpo", _outcome.grpo, _outcome_from_batch(_outcome.grpo))
register_estimator("drgrpo", _outcome.drgrpo, _outcome_from_batch(_outcome.drgrpo))
register_estimator("rloo", _outcome.rloo, _outcome_from_batch(_outcome.rloo))
register_estimator("reinforce_pp", _outcome.reinforce_pp, _reinforce_pp_from_batch)
register_estimator(
    "reinforce_pp_baseline",
    _outcome.reinforce_pp_baseline,
    _outcome_from_batch(_outcome.reinforce_pp_baseline),
)
register_estimator("gigpo", _gigpo.gigpo_advantage, _gigpo_from_batch)

register_policy_loss("ppo_clip", _losses.ppo_clip_loss)
register_policy_loss("vanilla", _losses.ppo_clip_loss)
register_policy_loss("gspo", _losses.gspo_loss)
register_policy_loss("reinforce", _losses.reinforce_loss)
