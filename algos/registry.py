"""Name -> entry registries for advantage estimators and policy losses.

Each estimator and each loss is registered once, with everything the trainer needs to call it:

* an :class:`Estimator` holds the pure function, the :class:`~algos.batch.StepBatch` fields it
  reads (in the order of its positional arguments), and which ``[algo]`` config fields become
  its keyword options;
* a :class:`PolicyLoss` holds the pure function and the ``[algo]`` config fields it takes
  (every loss also takes the aggregation keywords of :func:`algos.losses.agg_loss`).

``ESTIMATORS[name]`` and ``POLICY_LOSSES[name]`` return the entry, which is callable like the
function it holds. An unknown name raises ``ValueError`` listing the valid ones: an estimator
never silently returns zeros (Agent-R1 left advantages at 0 for any estimator it did not
implement). A function registered by the user trains with ``--set algo.estimator=NAME`` or
``--set algo.policy_loss=NAME`` and no change to this package::

    algos.register_estimator("my_est", my_fn, inputs=("step_reward", "response_mask", "index"),
                             options={"gamma": "gamma"})
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from algos import gae as _gae
from algos import gigpo as _gigpo
from algos import losses as _losses
from algos import outcome as _outcome
from algos.batch import StepBatch
from algos.gigpo import step_discounted_returns

#: Keywords every policy loss takes (the aggregation and its mini-batch normalisers).
AGG_KEYWORDS = ("agg", "batch_num_tokens", "global_batch_size", "loss_scale_factor", "dp_size")


class Registry(dict):
    """A ``dict`` of name -> entry whose lookup of an unknown name raises ``ValueError``."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def __missing__(self, name: str) -> Any:
        raise ValueError(f"unknown {self.kind} {name!r}; valid names: {', '.join(sorted(self))}")

    def add(self, name: str, entry: Any) -> Any:
        """Register ``entry`` under ``name``; re-registering a name raises."""
        if name in self:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self[name] = entry
        return entry


@dataclass(frozen=True)
class Estimator:
    """One advantage estimator and how the trainer calls it.

    Attributes:
        name: Registry name.
        fn: The pure estimator ``fn(*inputs, sample_mask=..., **options) -> (adv, ret)``.
        inputs: ``StepBatch`` attributes passed positionally, in order (``step_value`` is
            ``values[:, 0]``, ``token_level_rewards`` the rewards on each row's last token).
        options: Estimator keyword -> ``[algo]`` config field it is read from.
        fixed: Keywords always passed by the trainer (overridable in a direct call).
        reader: Replaces the generic ``inputs`` reading for estimators that transform the
            batch first: ``reader(batch, **options) -> (adv, ret)``.
    """

    name: str
    fn: Callable[..., tuple[torch.Tensor, torch.Tensor]]
    inputs: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    reader: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """Call the pure estimator."""
        return self.fn(*args, **kwargs)

    def from_batch(self, batch: StepBatch, **options: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(advantages (B, L), returns (B, L))`` of ``batch``; ``options`` are keywords."""
        if self.reader is not None:
            return self.reader(batch, **options)
        args = [_batch_input(batch, name, self.name) for name in self.inputs]
        return self.fn(*args, sample_mask=batch.sample_mask, **options)

    def config_options(self, algo_cfg: Any) -> dict[str, Any]:
        """The keywords the trainer passes: ``fixed``, then ``options`` read from the config."""
        out = dict(self.fixed)
        out.update({kw: getattr(algo_cfg, f) for kw, f in self.options.items()})
        return out


@dataclass(frozen=True)
class PolicyLoss:
    """One policy loss ``fn(old_logp, logp, advantages, response_mask, **kw) -> (loss, metrics)``.

    Attributes:
        name: Registry name.
        fn: The pure loss; it takes the :data:`AGG_KEYWORDS` and its own ``options``.
        options: Loss keyword -> ``[algo]`` config field it is read from.
        agg_modes: The aggregation modes the loss accepts (None = all of them).
        agg_keywords: Which of :data:`AGG_KEYWORDS` the function takes (read from its
            signature when registered): the learner passes only those.
    """

    name: str
    fn: Callable[..., tuple[torch.Tensor, dict[str, torch.Tensor]]]
    options: Mapping[str, str] = field(default_factory=dict)
    agg_modes: tuple[str, ...] | None = None
    agg_keywords: frozenset[str] = frozenset(AGG_KEYWORDS)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Call the pure loss."""
        return self.fn(*args, **kwargs)

    def config_options(self, algo_cfg: Any) -> dict[str, Any]:
        """The loss's own keywords read from the ``[algo]`` config section."""
        return {kw: getattr(algo_cfg, f) for kw, f in self.options.items()}


ESTIMATORS: Registry = Registry("advantage estimator")
"""name -> :class:`Estimator`: step_gae, gae, grpo, drgrpo, rloo, reinforce_pp,
reinforce_pp_baseline, gigpo."""
POLICY_LOSSES: Registry = Registry("policy loss")
"""name -> :class:`PolicyLoss`: ppo_clip, gspo, reinforce."""


def register_estimator(
    name: str,
    fn: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    *,
    inputs: tuple[str, ...] = (),
    options: Mapping[str, str] | None = None,
    fixed: Mapping[str, Any] | None = None,
    reader: Callable[..., tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> Estimator:
    """Register an advantage estimator; see :class:`Estimator` for the arguments.

    Give either ``inputs`` (the ``StepBatch`` fields ``fn`` takes positionally; ``sample_mask``
    is always passed as a keyword) or ``reader(batch, **options)``.

    Raises:
        ValueError: ``name`` is taken, or neither/both of ``inputs`` and ``reader`` are given.
    """
    if bool(inputs) == (reader is not None):
        raise ValueError(f"estimator {name!r}: give either inputs=(...) or reader=fn, not both")
    entry = Estimator(name, fn, tuple(inputs), dict(options or {}), dict(fixed or {}), reader)
    return ESTIMATORS.add(name, entry)


def register_policy_loss(
    name: str,
    fn: Callable[..., tuple[torch.Tensor, dict[str, torch.Tensor]]],
    *,
    options: Mapping[str, str] | None = None,
    agg_modes: tuple[str, ...] | None = None,
) -> PolicyLoss:
    """Register a policy loss; see :class:`PolicyLoss` for the arguments."""
    params = inspect.signature(fn).parameters
    takes = frozenset(k for k in AGG_KEYWORDS if k in params)
    return POLICY_LOSSES.add(name, PolicyLoss(name, fn, dict(options or {}), agg_modes, takes))


def get_policy_loss(name: str) -> PolicyLoss:
    """The policy loss registered as ``name``; ``ValueError`` listing the valid names if none."""
    return POLICY_LOSSES[name]


def compute_advantages(
    name: str, batch: StepBatch, **options: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run estimator ``name`` on a ``StepBatch``: ``(advantages (B, L), returns (B, L))``.

    ``options`` are the estimator's own keywords (``gamma``, ``lam``, ``mode``, ...); the batch
    supplies rewards, masks, keys and ``sample_mask``.

    Raises:
        ValueError: On an unknown name, or a batch missing a field the estimator needs.
    """
    return ESTIMATORS[name].from_batch(batch, **options)


def _batch_input(batch: StepBatch, name: str, estimator: str) -> Any:
    if name == "step_value":
        return _need(batch, "values", estimator)[:, 0]
    if name == "token_level_rewards":
        return batch.token_level_rewards()
    if not hasattr(batch, name):
        raise ValueError(f"estimator {estimator!r} reads StepBatch.{name}, which does not exist")
    return _need(batch, name, estimator)


def _need(batch: StepBatch, name: str, estimator: str) -> Any:
    value = getattr(batch, name)
    if value is None:
        raise ValueError(f"estimator {estimator!r} needs StepBatch.{name}, which is None")
    return value


ROW_REWARDS = ("step", "episode", "return_to_go")


def gae_from_batch(
    batch: StepBatch,
    *,
    row_reward: str = "step",
    return_gamma: float = 1.0,
    **options: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level GAE on step rows: each row's reward is placed on its last action token.

    Token GAE runs inside one row and never bootstraps across steps, so what the last token
    carries decides what a step is credited with:

    * ``"step"``: the row's own step reward;
    * ``"episode"``: the trajectory's total reward (verl-agent's PPO baseline);
    * ``"return_to_go"``: the discounted return from this step on, with ``return_gamma``
      (the ``ppo`` algorithm's choice).

    Raises:
        ValueError: Unknown ``row_reward``, or the batch has no ``values``.
    """
    values = _need(batch, "values", "gae")
    if row_reward not in ROW_REWARDS:
        raise ValueError(f"row_reward={row_reward!r} is not one of {ROW_REWARDS}")
    real = batch.sample_mask.numpy()  # padding rows share keys: keep them out
    per_row = batch.step_reward.numpy().copy()
    traj, steps = batch.traj_uid[real], batch.step_index[real]
    if row_reward == "return_to_go":
        per_row[real] = step_discounted_returns(per_row[real], traj, steps, return_gamma)
    elif row_reward == "episode":
        totals: dict[Any, float] = defaultdict(float)
        for t, r in zip(traj.tolist(), per_row[real].tolist()):
            totals[t] += r
        per_row[real] = [totals[t] for t in traj.tolist()]
    rewards = batch.token_level_rewards(torch.from_numpy(per_row))
    return _gae.gae(rewards, values, batch.response_mask, sample_mask=batch.sample_mask, **options)


_OUTCOME = ("step_reward", "response_mask", "index", "traj_uid")
_UNIT = {"group_stats_unit": "group_stats_unit"}

register_estimator(
    "step_gae",
    _gae.step_gae,
    inputs=("step_reward", "step_value", "response_mask", "traj_uid", "step_index"),
    options={"gamma": "gamma", "lam": "lam"},
)
register_estimator(
    "gae",
    _gae.gae,
    reader=gae_from_batch,
    options={"lam": "lam", "return_gamma": "gamma"},
    fixed={"gamma": 1.0, "row_reward": "return_to_go"},  # rows already carry discounted returns
)
register_estimator("grpo", _outcome.grpo, inputs=_OUTCOME, options=_UNIT)
register_estimator("drgrpo", _outcome.drgrpo, inputs=_OUTCOME, options=_UNIT)
register_estimator("rloo", _outcome.rloo, inputs=_OUTCOME, options=_UNIT)
register_estimator(
    "reinforce_pp",
    _outcome.reinforce_pp,
    inputs=("step_reward", "response_mask", "traj_uid", "step_index"),
    options={"gamma": "gamma"},
)
register_estimator(
    "reinforce_pp_baseline", _outcome.reinforce_pp_baseline, inputs=_OUTCOME, options=_UNIT
)
register_estimator(
    "gigpo",
    _gigpo.gigpo_advantage,
    inputs=(*_OUTCOME, "step_index", "anchor_obs"),
    options={"gamma": "gamma", "step_advantage_w": "step_advantage_w", "mode": "gigpo_mode"},
)

_CLIP = {"clip_low": "clip_low", "clip_high": "clip_high"}
register_policy_loss("ppo_clip", _losses.ppo_clip_loss, options={**_CLIP, "clip_c": "clip_c"})
register_policy_loss("gspo", _losses.gspo_loss, options=_CLIP, agg_modes=("seq-mean-token-mean",))
register_policy_loss("reinforce", _losses.reinforce_loss)
