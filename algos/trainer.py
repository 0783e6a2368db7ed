"""The training loop: rollout -> advantages -> update, with metrics, checkpoints and resume.

>>> from algos.config import load_config
>>> from algos.trainer import train
>>> cfg = load_config("recipes/alfworld/gigpo.toml", ["model=tiny-random", "run.iterations=1"])
>>> run_dir = train(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos.algorithms import advantages, get_algorithm
from algos.backends.base import SamplingParams
from algos.batch import StepBatch
from algos.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from algos.config import Config, config_from_dict, dumps
from algos.context import chat_prompt_shorter
from algos.learner import Learner
from algos.metrics import MetricsLogger
from algos.rollout import RolloutResult, rollout


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (sampling in ``generate`` uses torch's global RNG)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def resolve_device(name: str) -> str:
    """``auto`` -> ``cuda`` when available, else ``cpu``."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def prompt_templates(spec: str) -> Any:
    """The ``env.prompt`` setting as ``PromptTemplates`` (None = the env's own templates).

    Raises:
        ValueError: ``spec`` is not ``env``, ``compact`` or an importable ``module:NAME``.
    """
    if spec in ("", "env"):
        return None
    if spec == "compact":
        from agent_gym.wrappers.chat_prompt import COMPACT_PROMPTS

        return COMPACT_PROMPTS
    module, sep, name = spec.partition(":")
    if not sep:
        raise ValueError(f"env.prompt={spec!r}: use 'env', 'compact' or 'module:NAME'")
    import importlib

    return getattr(importlib.import_module(module), name)


def make_envs(cfg: Config, num_envs: int, *, evaluation: bool = False) -> Any:
    """The wrapped vector env: ``ParseAction`` -> ``ShapeReward`` -> ``ChatPrompt``."""
    import agent_gym  # noqa: F401  (registers the AgentR1/* ids)
    from agent_gym.vector import make_vec
    from agent_gym.wrappers import ChatPrompt, ParseAction, ShapeReward

    e = cfg.env
    wrappers = [
        functools.partial(ParseAction, format=e.action_format, match=e.action_match),
        functools.partial(
            ShapeReward,
            reward_scale=e.reward_scale,
            success_bonus=e.success_bonus,
            invalid_penalty=e.invalid_penalty,
        ),
        functools.partial(
            ChatPrompt,
            history_length=e.history_length,
            action_format=e.action_format,
            templates=prompt_templates(e.prompt),
        ),
    ]
    kwargs = {**e.kwargs, **(e.eval_kwargs if evaluation else {})}
    return make_vec(e.id, num_envs, mode=e.vector_mode, wrappers=wrappers, **kwargs)


def shorter_for(venv: Any) -> Any:
    """The ChatPrompt history-trimming callback for in-process envs (None for async)."""
    envs = getattr(venv, "envs", None)
    if not isinstance(envs, (list, tuple)):
        return None
    callbacks = [chat_prompt_shorter(env) for env in envs]
    return lambda i, k: callbacks[i](k) if callbacks[i] is not None else None


def freeze_lower_layers(model: Any, keep: int) -> None:
    """Freeze everything but the last ``keep`` decoder layers and the final norm (CPU profile).

    The backward pass then stops at the first trainable layer, which is what makes a
    135M-parameter update affordable on two CPU cores.
    """
    from algos.critic import backbone_of

    body = backbone_of(model)
    layers = getattr(body, "layers", None)
    if layers is None:
        raise ValueError(f"model.trainable_layers: {type(body).__name__} has no .layers list")
    model.requires_grad_(False)
    for layer in list(layers)[-keep:]:
        layer.requires_grad_(True)
    norm = getattr(body, "norm", None)
    if norm is not None:
        norm.requires_grad_(True)


@dataclass
class Session:
    """Everything a run holds: config, model, learner, backend, envs and the run dir."""

    cfg: Config
    run_dir: Path
    learner: Learner
    backend: Any
    venv: Any
    start_iteration: int = 0


def build_session(cfg: Config, run_dir: Path, *, resume: bool = False) -> Session:
    """Load the model(s), the learner and the envs; restore the last checkpoint on resume."""
    from algos.backends import make_backend
    from algos.critic import ValueModel
    from algos.models import load_model

    seed_everything(cfg.run.seed)
    algo = get_algorithm(cfg.algo.name)
    m = cfg.model
    lora = {"r": m.lora_rank, "lora_alpha": m.lora_alpha, "target_modules": "all-linear"}
    model, tok = load_model(
        m.name,
        dtype=m.dtype,
        device=resolve_device(m.device),
        seed=cfg.run.seed,
        gradient_checkpointing=m.gradient_checkpointing,
        lora=lora if m.lora_rank else None,
    )
    if m.trainable_layers:
        freeze_lower_layers(model, m.trainable_layers)
    critic = ValueModel(model) if algo.critic else None
    ref = None
    if cfg.algo.kl_coef:
        import copy

        ref = copy.deepcopy(model).eval().requires_grad_(False)
    learner = Learner(
        model,
        tok,
        algo,
        cfg.algo,
        cfg.optim,
        temperature=cfg.rollout.temperature,
        critic=critic,
        ref_model=ref,
        loss_scale_factor=float(cfg.rollout.max_new_tokens),
    )
    backend = make_backend(
        cfg.rollout.backend,
        model,
        tok,
        seed=cfg.run.seed,
        max_model_len=cfg.rollout.max_prompt_tokens + cfg.rollout.max_new_tokens,
        max_batch_size=cfg.rollout.max_batch_size,
    )
    if not backend.returns_logprobs:
        raise ValueError(f"backend {cfg.rollout.backend!r} returns no log-probs; cannot train")
    start = 0
    if resume:
        ckpt = latest_checkpoint(run_dir)
        if ckpt is None:
            raise FileNotFoundError(f"{run_dir}: no complete checkpoint to resume from")
        start = load_checkpoint(ckpt, learner) + 1
        backend.sync_weights(learner.model)
    venv = make_envs(cfg, cfg.env.num_tasks * cfg.env.group_size)
    return Session(cfg, run_dir, learner, backend, venv, start)


def prepare_batch(
    ro: RolloutResult, learner: Learner, cfg: Config
) -> tuple[StepBatch, torch.Tensor, torch.Tensor, dict[str, float]]:
    """Fill the rollout's ``StepBatch`` for the update and compute its advantages.

    Old log-probs are the rollout's own (or recomputed by the actor with
    ``optim.recompute_old_logp``); reference log-probs and critic values are added when the
    learner has those models. Advantages come from the algorithm's estimator through
    ``algos.compute_advantages`` (:func:`algos.algorithms.advantages`).

    Returns:
        ``(batch, advantages (B, L), returns (B, L), metrics)``.
    """
    batch = ro.batch
    extra: dict[str, float] = {}
    if cfg.optim.recompute_old_logp or batch.old_log_prob is None:
        recomputed = learner.score(batch, "logp")
        if batch.old_log_prob is not None:
            diff = (recomputed - batch.old_log_prob).abs() * batch.response_mask
            extra["rollout/logp_abs_diff_max"] = float(diff.max())
        batch.old_log_prob = recomputed
    if learner.ref_model is not None:
        batch.ref_log_prob = learner.score(batch, "ref")
    if learner.critic is not None:
        batch.values = learner.score(batch, "values")
    adv, ret = advantages(learner.algo, batch, cfg.algo)
    adv, ret = adv.float(), ret.float()
    m = batch.response_mask.bool()
    extra["actor/advantage_mean"] = float(adv[m].mean()) if m.any() else 0.0
    extra["actor/advantage_abs_mean"] = float(adv[m].abs().mean()) if m.any() else 0.0
    if batch.values is not None:
        extra["critic/value_mean"] = float(batch.values[:, 0].mean())
    return batch, adv, ret, extra


def iteration_seeds(cfg: Config, iteration: int) -> tuple[list[int], list[int]]:
    """Reset seeds and group ids of one iteration (``group_size`` members per task)."""
    from agent_gym.vector import group_seeds

    e = cfg.env
    seeds = group_seeds(e.seed + iteration, e.num_tasks, e.group_size)
    return seeds, [i // e.group_size for i in range(len(seeds))]


def run_iteration(s: Session, iteration: int) -> dict[str, Any]:
    """One rollout + update; returns the iteration's metrics."""
    cfg, learner = s.cfg, s.learner
    r = cfg.rollout
    seeds, groups = iteration_seeds(cfg, iteration)
    t0 = time.perf_counter()
    ro = rollout(
        s.venv,
        s.backend,
        seeds=seeds,
        groups=groups,
        sampling=SamplingParams(r.max_new_tokens, r.temperature, r.top_p),
        max_prompt_tokens=r.max_prompt_tokens,
        max_steps=cfg.env.max_steps or None,
        shorter=shorter_for(s.venv),
        progress=cfg.run.progress,
    )
    t_roll = time.perf_counter() - t0
    metrics: dict[str, Any] = {f"rollout/{k}": v for k, v in ro.summary().items()}
    metrics["rollout/step_rows"] = len(ro)
    metrics["rollout/trimmed_prompts"] = ro.trimmed_prompts
    metrics["rollout/response_length"] = ro.response_tokens / max(len(ro), 1)
    metrics["perf/rollout_tokens_per_s"] = ro.response_tokens / max(ro.generate_seconds, 1e-9)
    metrics["time/rollout_s"] = t_roll
    if ro.batch is None:
        return metrics
    t1 = time.perf_counter()
    batch, adv, ret, extra = prepare_batch(ro, learner, cfg)
    metrics.update(extra)
    metrics["time/prepare_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    upd = learner.update(
        batch,
        adv,
        ret if learner.critic is not None else None,
        seed=cfg.run.seed * 1_000_003 + iteration,
        train_actor=iteration >= cfg.optim.critic_warmup,
        progress=cfg.run.progress,
    )
    s.backend.sync_weights(learner.model)
    metrics["time/update_s"] = time.perf_counter() - t2
    metrics["perf/update_tokens_per_s"] = upd.pop("update_tokens_per_s")
    for k, v in upd.items():
        section = "critic" if k.startswith(("value", "vf_", "vpred", "critic")) else "actor"
        metrics[f"{section}/{k}"] = v
    metrics["_episodes"] = ro.episodes
    return metrics


def _episode_json(ep: Any) -> dict[str, Any]:
    keys = (
        "traj",
        "group",
        "seed",
        "task",
        "task_id",
        "task_type",
        "data_source",
        "ret",
        "won",
        "score",
        "length",
        "valid_actions",
        "end_reason",
        "steps",
    )
    return {k: getattr(ep, k) for k in keys}


def new_run_dir(cfg: Config) -> Path:
    """``out_dir/name`` (default ``<env>-<algo>-<YYYYmmdd-HHMMSS>``), created."""
    name = cfg.run.name or "{}-{}-{}".format(
        cfg.env.id.split("/")[-1].split(":")[-1], cfg.algo.name, time.strftime("%Y%m%d-%H%M%S")
    )
    path = Path(cfg.run.out_dir) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def train(
    cfg: Config, *, run_dir: Path | None = None, resume: bool = False, log: Any = print
) -> Path:
    """Train per ``cfg``; return the run directory.

    With ``resume=True``, ``run_dir`` must hold a run: its resolved config is used and training
    continues after its last checkpoint.
    """
    from algos.eval import evaluate

    if resume:
        if run_dir is None:
            raise ValueError("resume needs the run directory")
        cfg = config_from_dict(json.loads((Path(run_dir) / "config.json").read_text()))
    run_dir = Path(run_dir) if run_dir is not None else new_run_dir(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        (run_dir / "config.json").write_text(dumps(cfg))
    s = build_session(cfg, run_dir, resume=resume)
    logger = MetricsLogger(
        run_dir,
        tensorboard=cfg.run.tensorboard,
        resume_from=s.start_iteration - 1 if resume else None,
    )
    summary: dict[str, Any] = {}
    try:
        if cfg.run.eval_episodes and not resume:
            summary["before"] = evaluate(cfg, s.backend, cfg.run.eval_episodes)
            log(f"eval before training: {_eval_line(summary['before'])}")
        for it in range(s.start_iteration, cfg.run.iterations):
            metrics = run_iteration(s, it)
            episodes = metrics.pop("_episodes", [])
            logger.log(it, metrics)
            if cfg.run.log_episodes:
                logger.log_episodes(
                    it, [_episode_json(e) for e in episodes[: cfg.run.log_episodes]]
                )
            log(_progress_line(it, cfg.run.iterations, metrics))
            last = it == cfg.run.iterations - 1
            if last or (cfg.run.save_every and (it + 1) % cfg.run.save_every == 0):
                save_checkpoint(run_dir, it, s.learner)
        if cfg.run.eval_episodes:
            summary["after"] = evaluate(cfg, s.backend, cfg.run.eval_episodes)
            log(f"eval after training: {_eval_line(summary['after'])}")
            if "before" in summary:
                log(_before_after(summary["before"], summary["after"]))
            (run_dir / "eval.json").write_text(json.dumps(summary, indent=2))
    finally:
        logger.close()
        s.venv.close()
        close = getattr(s.backend, "close", None)  # the vLLM engine holds processes and files
        if close is not None:
            close()
    try:
        from algos.plot import plot_run

        plot_run(run_dir)
    except ImportError:  # pragma: no cover - matplotlib is in the train extra
        pass
    return run_dir


def _eval_line(result: dict[str, Any]) -> str:
    valid = result.get("valid_action_ratio")
    return result["line"] + (f", valid actions {valid:.1%}" if valid is not None else "")


def _before_after(before: dict[str, Any], after: dict[str, Any]) -> str:
    parts = [f"success {before['success_rate']:.1%} -> {after['success_rate']:.1%}"]
    if "valid_action_ratio" in before and "valid_action_ratio" in after:
        parts.append(
            f"valid actions {before['valid_action_ratio']:.1%} -> {after['valid_action_ratio']:.1%}"
        )
    return f"before -> after training ({after['episodes']} eval episodes): " + ", ".join(parts)


def _progress_line(it: int, total: int, m: dict[str, Any]) -> str:
    def g(k: str, fmt: str = ".2f") -> str:
        return format(m[k], fmt) if k in m else "-"

    return (
        f"iter {it + 1}/{total}  success {g('rollout/success_rate')}  "
        f"return {g('rollout/return_mean')}  len {g('rollout/episode_length', '.1f')}  "
        f"valid {g('rollout/valid_action_ratio')}  pg {g('actor/pg_loss', '.3f')}  "
        f"rollout {g('time/rollout_s', '.1f')}s  update {g('time/update_s', '.1f')}s"
    )
