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

from algos.algorithms import compute_advantages, get_algorithm
from algos.backends.base import SamplingParams
from algos.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from algos.config import Config, config_from_dict, dumps
from algos.context import chat_prompt_shorter
from algos.learner import Learner, TrainBatch
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


def make_envs(cfg: Config, num_envs: int, *, evaluation: bool = False) -> Any:
    """The wrapped vector env: ``ParseAction`` -> ``ShapeReward`` -> ``ChatPrompt``."""
    import agent_gym  # noqa: F401  (registers the AgentR1/* ids)
    from agent_gym.vector import make_vec
    from agent_gym.wrappers import ChatPrompt, ParseAction, ShapeReward

    e = cfg.env
    wrappers = [
        functools.partial(ParseAction, format=e.action_format),
        functools.partial(
            ShapeReward, success_bonus=e.success_bonus, invalid_penalty=e.invalid_penalty
        ),
        functools.partial(
            ChatPrompt, history_length=e.history_length, action_format=e.action_format
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
        cfg.rollout.backend, model, tok, max_batch_size=cfg.rollout.max_batch_size
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


def batch_from_rollout(
    ro: RolloutResult, learner: Learner, cfg: Config, iteration: int
) -> tuple[TrainBatch, dict[str, float]]:
    """Turn rollout rows into a :class:`TrainBatch` with old log-probs and advantages."""
    rows = ro.rows
    batch = TrainBatch.from_ids([r.prompt_ids for r in rows], [r.response_ids for r in rows])
    width = batch.response_mask.shape[1]
    rollout_logp = torch.zeros_like(batch.response_mask)
    for i, r in enumerate(rows):
        rollout_logp[i, : len(r.logprobs)] = torch.tensor(r.logprobs, dtype=torch.float32)
    extra: dict[str, float] = {}
    if cfg.optim.recompute_old_logp:
        batch.old_logp = learner.score(batch, "logp")
        diff = (batch.old_logp - rollout_logp).abs() * batch.response_mask
        extra["rollout/logp_abs_diff_max"] = float(diff.max()) if width else 0.0
    else:
        batch.old_logp = rollout_logp
    if learner.ref_model is not None:
        batch.ref_logp = learner.score(batch, "ref")
    values = learner.score(batch, "values") if learner.critic is not None else None
    anchors = np.full(len(rows), None, dtype=object)
    for i, r in enumerate(rows):
        anchors[i] = r.anchor_obs
    adv, ret = compute_advantages(
        learner.algo,
        step_reward=np.array([r.reward for r in rows], dtype=np.float64),
        response_mask=batch.response_mask,
        index=np.array([r.group for r in rows]),
        traj_uid=np.array([r.traj for r in rows]),
        step_index=np.array([r.step for r in rows]),
        anchor_obs=anchors,
        sample_mask=batch.sample_mask.numpy(),
        values=values,
        cfg=cfg.algo,
    )
    batch.advantages, batch.returns, batch.old_values = adv.float(), ret.float(), values
    m = batch.response_mask.bool()
    extra["actor/advantage_mean"] = float(adv[m].mean()) if m.any() else 0.0
    extra["actor/advantage_abs_mean"] = float(adv[m].abs().mean()) if m.any() else 0.0
    if values is not None:
        extra["critic/value_mean"] = float(values[:, 0].mean())
    return batch, extra


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
    metrics["rollout/step_rows"] = len(ro.rows)
    metrics["rollout/response_length"] = ro.response_tokens / max(len(ro.rows), 1)
    metrics["perf/rollout_tokens_per_s"] = ro.response_tokens / max(ro.generate_seconds, 1e-9)
    metrics["time/rollout_s"] = t_roll
    if not ro.rows:
        return metrics
    t1 = time.perf_counter()
    batch, extra = batch_from_rollout(ro, learner, cfg, iteration)
    metrics.update(extra)
    metrics["time/prepare_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    upd = learner.update(
        batch,
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
            log(f"eval before training: {summary['before']['line']}")
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
            log(f"eval after training: {summary['after']['line']}")
            (run_dir / "eval.json").write_text(json.dumps(summary, indent=2))
    finally:
        logger.close()
        s.venv.close()
    try:
        from algos.plot import plot_run

        plot_run(run_dir)
    except ImportError:  # pragma: no cover - matplotlib is in the train extra
        pass
    return run_dir


def _progress_line(it: int, total: int, m: dict[str, Any]) -> str:
    def g(k: str, fmt: str = ".2f") -> str:
        return format(m[k], fmt) if k in m else "-"

    return (
        f"iter {it + 1}/{total}  success {g('rollout/success_rate')}  "
        f"return {g('rollout/return_mean')}  len {g('rollout/episode_length', '.1f')}  "
        f"valid {g('rollout/valid_action_ratio')}  pg {g('actor/pg_loss', '.3f')}  "
        f"rollout {g('time/rollout_s', '.1f')}s  update {g('time/update_s', '.1f')}s"
    )
