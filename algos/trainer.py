"""The training loop: rollout -> advantages -> update, with evaluation, metrics and checkpoints.

>>> from algos.config import load_config
>>> from algos.trainer import train
>>> cfg = load_config("recipes/alfworld/gigpo.toml", ["model=tiny-random", "run.iterations=1"])
>>> run_dir = train(cfg)  # doctest: +SKIP

Everything that can fail on bad input is checked before the expensive work: the config when
it loads, then one env of each kind (:func:`algos.envs.check_envs`), then the model; the run
directory is created only after that. Iterations are numbered 1..N everywhere (console, plots,
``metrics.jsonl``, ``checkpoints/iter_00000N``); evaluation "before" is iteration 0.

Under ``torchrun`` every rank runs this same loop on its share of the task groups
(:mod:`algos.global_batch`); rank 0 alone evaluates, logs and writes files.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from algos.algorithms import advantages, get_algorithm
from algos.backends.base import SamplingParams
from algos.batch import StepBatch
from algos.checkpoint import init_chain, pin_init, restore_latest, save_checkpoint
from algos.config import Config, dumps
from algos.distributed import World, check_world, init_world, launcher_rank, launcher_world_size
from algos.envs import check_envs, iteration_seeds, make_envs
from algos.global_batch import GlobalRows, gather_rollout, gather_rows
from algos.learner import Learner
from algos.metrics import MetricsLogger
from algos.rollout import RolloutResult, rollout
from algos.runs import (
    check_new_run,
    hold_run,
    new_run_dir,
    read_json,
    run_config,
    run_kind,
    seed_everything,
    stop_on_disk_error,
    write_config,
    write_json,
)


@dataclass
class Session:
    """Everything a run holds: config, learner, backend, envs and the run dir."""

    cfg: Config
    run_dir: Path
    learner: Learner
    backend: Any
    venv: Any
    done: int = 0
    """Iterations completed (the next one is ``done + 1``)."""
    world: World = field(default_factory=World)
    """This process's rank of a data-parallel run (one process by default)."""
    eval_envs: Any = None
    """The held-out tasks' envs (:class:`algos.eval.HeldOutEnvs`), kept between evaluations."""

    def close(self) -> None:
        """Close the envs and the backend's engine."""
        self.venv.close()
        if self.eval_envs is not None:
            self.eval_envs.close()
        close = getattr(self.backend, "close", None)  # the vLLM engine holds processes and files
        if close is not None:
            close()


def build_session(
    cfg: Config, run_dir: Path | None, *, resume: bool = False, log: Any = print
) -> Session:
    """Check the envs, load the models, build learner, backend and envs, and seed the RNGs.

    ``run_dir=None`` means a new run whose directory is created once everything loaded; with
    ``resume`` the run in ``run_dir`` continues from its newest loadable checkpoint.
    ``model.init = "sft"`` starts from ``run_dir/sft`` (see :func:`train`).
    """
    from algos.backends import make_backend
    from algos.policy import build_models, compute_dtype_line

    world = init_world(cfg)
    if not world.is_main:
        log, cfg.run.progress = _quiet, False  # rank 0 reports
    check_envs(cfg)
    build_cfg = cfg
    if cfg.model.init == "sft":
        build_cfg = copy.deepcopy(cfg)
        build_cfg.model.init = str(Path(run_dir) / "sft")
    if build_cfg.model.init:  # a wrong model.init is one line before the model loads
        init_chain(Path(build_cfg.model.init), cfg.model.name)
    models = build_models(build_cfg)
    if line := compute_dtype_line(cfg, models):
        log(line)
    backend = make_backend(
        cfg.rollout.backend,
        world.rollout_copy(models.model, cfg.rollout.backend),
        models.tokenizer,
        seed=world.seed(cfg.run.seed),
        max_model_len=cfg.rollout.max_prompt_tokens + cfg.rollout.max_new_tokens,
        max_batch_size=cfg.rollout.max_batch_size,
    )
    world.wrap(models)  # DDP or FSDP2 when WORLD_SIZE > 1
    learner = Learner(
        models.model,
        models.tokenizer,
        get_algorithm(cfg.algo.name),
        cfg.algo,
        cfg.optim,
        temperature=cfg.rollout.temperature,
        critic=models.critic,
        ref_model=models.ref,
        loss_scale_factor=float(cfg.rollout.max_new_tokens),
        world=world,
    )
    if world.size > 1 and hasattr(learner, "trunk_depth"):
        learner.trunk_depth = None  # its shortcut calls layers directly, past DDP's/FSDP's hooks
    if not backend.returns_logprobs:
        raise ValueError(f"backend {cfg.rollout.backend!r} returns no log-probs; cannot train")
    # Seed only now: loading or converting a model may have drawn from the global RNGs.
    seed_everything(cfg.run.seed, cfg.run.threads)
    done = 0
    if run_dir is None:
        run_dir = world.broadcast_object(new_run_dir(cfg) if world.is_main else None)
    if not resume:
        if world.is_main:
            write_config(run_dir, cfg)
    else:
        done, extra = restore_latest(run_dir, learner, log)
        if "rollout" in extra and hasattr(backend, "rng_state"):
            backend.rng_state = extra["rollout"]
        backend.sync_weights(world.rollout_model(learner.model))
    lo, hi = world.env_range(cfg.env.num_tasks, cfg.env.group_size)
    venv = make_envs(cfg, hi - lo)
    return Session(cfg, run_dir, learner, backend, venv, done, world)


def prepare_batch(
    ro: RolloutResult, learner: Learner, cfg: Config
) -> tuple[StepBatch, torch.Tensor, torch.Tensor, dict[str, float], GlobalRows]:
    """Fill the rollout's ``StepBatch`` for the update and compute its advantages.

    Old log-probs are the rollout's own (or recomputed by the actor with
    ``optim.recompute_old_logp``); reference log-probs and critic values are added when the
    learner has those models. The estimator runs on the global batch (every rank's rows; at
    world size 1, ``ro.batch`` itself).

    Returns:
        ``(batch, advantages (B, L), returns (B, L), metrics, global rows)``: this rank's rows.
    """
    batch = ro.batch
    extra: dict[str, float] = {}
    if cfg.optim.recompute_old_logp or batch.old_log_prob is None:
        recomputed = learner.score(batch, "logp")
        if batch.old_log_prob is not None:
            diff = (recomputed - batch.old_log_prob).abs() * batch.response_mask
            top = float(diff.max()) if diff.numel() else 0.0
            extra["rollout/logp_abs_diff_max"] = learner.world.reduce([top], "max")[0]
        batch.old_log_prob = recomputed
    if learner.ref_model is not None:
        batch.ref_log_prob = learner.score(batch, "ref")
    if learner.critic is not None:
        batch.values = learner.score(batch, "values")
    rows = gather_rows(learner.world, batch)
    adv, ret = advantages(rows.batch, cfg.algo)
    adv, ret = adv.float(), ret.float()
    rows.advantages = adv
    m = rows.batch.response_mask.bool()
    extra["actor/advantage_mean"] = float(adv[m].mean()) if m.any() else 0.0
    extra["actor/advantage_abs_mean"] = float(adv[m].abs().mean()) if m.any() else 0.0
    if rows.batch.values is not None:
        extra["critic/value_mean"] = float(rows.batch.values[:, 0].mean())
    width = batch.response_length
    return batch, rows.mine(adv, width), rows.mine(ret, width), extra, rows


def iteration_rollout(
    cfg: Config, venv: Any, backend: Any, iteration: int, *, envs: slice = slice(None)
) -> RolloutResult:
    """Play iteration ``iteration``'s (1-based) task draws as training does.

    The draws of :func:`algos.envs.iteration_seeds`, sampled with ``cfg.rollout``'s settings at
    ``cfg.env.max_steps``, history re-rendered into each prompt. ``envs`` picks a share of the
    ``num_tasks x group_size`` envs (a rank's groups); ``venv`` holds that many.
    """
    r = cfg.rollout
    seeds, groups = iteration_seeds(cfg, iteration - 1)
    return rollout(
        venv,
        backend,
        seeds=seeds[envs],
        groups=groups[envs],
        sampling=SamplingParams(r.max_new_tokens, r.temperature, r.top_p),
        max_prompt_tokens=r.max_prompt_tokens,
        max_steps=cfg.env.max_steps or None,
        rerender_history=True,
        progress=cfg.run.progress,
    )


def run_iteration(s: Session, iteration: int) -> tuple[dict[str, Any], list[Any]]:
    """Iteration ``iteration`` (1-based): one rollout and one update.

    Returns:
        ``(metrics, episodes)``.
    """
    cfg = s.cfg
    lo, hi = s.world.env_range(cfg.env.num_tasks, cfg.env.group_size)  # this rank's groups
    t0 = time.perf_counter()
    with _recording_trunk(s.backend, s.learner.trunk_depth):
        ro = iteration_rollout(cfg, s.venv, s.backend, iteration, envs=slice(lo, hi))
    ro = gather_rollout(s.world, ro, lo)  # this rank's rows, every rank's episodes and counts
    metrics: dict[str, Any] = {f"rollout/{k}": v for k, v in ro.summary().items()}
    metrics["rollout/episodes"] = len(ro.episodes)
    metrics["rollout/step_rows"] = len(ro)
    metrics["rollout/trimmed_prompts"] = ro.trimmed_prompts
    metrics["rollout/response_length"] = ro.response_tokens / max(len(ro), 1)
    metrics["perf/rollout_tokens_per_s"] = ro.response_tokens / max(ro.generate_seconds, 1e-9)
    metrics["time/rollout_s"] = time.perf_counter() - t0
    if ro.batch is not None:
        metrics.update(update_policy(s, ro, iteration))
    return metrics, ro.episodes


@contextlib.contextmanager
def _recording_trunk(backend: Any, depth: int | None) -> Iterator[None]:
    """Have the hf backend record the frozen trunk's output for the update (:mod:`algos.trunk`).

    Other backends (vLLM, a server) cannot: the update then runs the full model.
    """
    records = depth is not None and hasattr(backend, "capture_depth")
    if records:
        backend.capture_depth = depth
    try:
        yield
    finally:
        if records:
            backend.capture_depth = None


def update_policy(s: Session, ro: RolloutResult, iteration: int) -> dict[str, Any]:
    """The update of iteration ``iteration`` on ``ro``'s rows (this rank's): its metrics.

    Scores, advantages on the global batch, ``optim.ppo_epochs`` of optimiser steps, then the
    backend takes the new weights.
    """
    cfg, learner = s.cfg, s.learner
    metrics: dict[str, Any] = {}
    sleep = getattr(s.backend, "sleep", None)
    if sleep is not None:  # vLLM sleep mode: the engine's GPU memory is the learner's meanwhile
        sleep(cfg.dist.vllm_sleep_level)
    t1 = time.perf_counter()
    batch, adv, ret, extra, rows = prepare_batch(ro, learner, cfg)
    metrics.update(extra)
    metrics["time/prepare_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    upd = learner.update(
        batch,
        adv,
        ret if learner.critic is not None else None,
        seed=cfg.run.seed * 1_000_003 + iteration - 1,
        train_actor=iteration > cfg.optim.critic_warmup,
        progress=cfg.run.progress,
        rows=rows,
    )
    s.backend.sync_weights(s.world.rollout_model(learner.model))
    metrics["time/update_s"] = time.perf_counter() - t2
    metrics["perf/update_tokens_per_s"] = upd.pop("update_tokens_per_s")
    for k, v in upd.items():
        section = "critic" if k.startswith(("value", "vf_", "vpred", "critic")) else "actor"
        metrics[f"{section}/{k}"] = v
    return metrics


def train(cfg: Config, *, log: Any = print) -> Path:
    """Train a new run per ``cfg``; return its run directory.

    With ``model.init = "sft"`` the run is a pipeline: behaviour cloning on expert
    demonstrations (``[sft]``, :mod:`algos.sft`) into ``RUN_DIR/sft`` first, then RL from it;
    the evaluation "before" is then the cloned policy, the one RL starts from.
    """
    run_dir = None
    check_machine(cfg)
    if launcher_rank() == 0:  # rank 0 alone writes the run directory
        check_new_run(cfg)
    if (pinned := pin_init(cfg.model.init)) != cfg.model.init:
        cfg = copy.deepcopy(cfg)  # the caller's config stays as it was
        cfg.model.init = pinned
    if cfg.model.init == "sft":
        from algos.demos import check_split

        check_split(cfg)
        check_envs(cfg, experts=cfg.sft.expert)
        run_dir = new_run_dir(cfg)
        write_config(run_dir, cfg)
    return _run(cfg, run_dir, log, resume=False)


def resume(run_dir: str | Path, *, iterations: int | None = None, log: Any = print) -> Path:
    """Continue the run in ``run_dir`` after its newest loadable checkpoint.

    A run killed before it wrote its first checkpoint starts over from iteration 1 (the same
    config and seeds, so the same run); one whose checkpoints are all damaged is an error. A
    finished run is left as it is, said before any model loads.

    Args:
        run_dir: A run directory (its ``config.json`` is the config).
        iterations: Raise the run's total iteration count (None = as configured).
        log: Where progress lines go.

    Raises:
        FileNotFoundError: Not a run directory, or every checkpoint in it is damaged.
        FileExistsError: Another process is training in it (:func:`algos.runs.hold_run`).
        ValueError: Its ``config.json`` or ``eval.json`` is damaged, or ``iterations`` is
            negative or fewer than the iterations the run has done (checked before any model
            loads).
    """
    run_dir = Path(run_dir)
    cfg = run_config(run_dir)
    with _holding(run_dir):
        return _resume(cfg, run_dir, iterations, log)


def _holding(run_dir: Path) -> Any:
    """:func:`algos.runs.hold_run` in the process that writes the run (rank 0)."""
    return hold_run(run_dir) if launcher_rank() == 0 else contextlib.nullcontext()


def _resume(cfg: Config, run_dir: Path, iterations: int | None, log: Any) -> Path:
    from algos.checkpoint import done_iterations
    from algos.config import apply

    read_json(run_dir / "eval.json")  # a damaged one is named now, not after the model loads
    if run_kind(run_dir) == "sft":  # its epochs are not iterations: RL would train in it
        raise ValueError(
            f"{run_dir} is a behaviour-cloning run (algos sft): continue it with `algos sft "
            f"--resume {run_dir}`, or start RL from it with --set model.init={run_dir}"
        )
    check_machine(cfg)
    done = done_iterations(run_dir)
    if iterations is not None:
        if iterations < done:
            raise ValueError(
                f"--iterations {iterations}: {run_dir} has done {done} iterations already "
                f"(give {done} or more)"
            )
        apply(cfg, {"run": {"iterations": iterations}}, source=f"--iterations {iterations}")
        if launcher_rank() == 0:  # the other ranks may be reading it
            from agent_gym.paths import atomic_write_text

            atomic_write_text(run_dir / "config.json", dumps(cfg))
    if _finished(cfg, run_dir, done):  # said before any model loads
        log(f"{run_dir}: already finished ({done}/{cfg.run.iterations} iterations)")
        return run_dir
    started = any((run_dir / "checkpoints").glob("iter_*"))
    if not started and cfg.model.init != "sft":  # the pipeline finds its own stage (_run)
        log(f"{run_dir}: killed before its first checkpoint; starting it over from iteration 1")
    return _run(cfg, run_dir, log, resume=started)


def check_machine(cfg: Config) -> None:
    """Refuse a config this machine cannot run: the launcher's processes, the backend, the model.

    Called first, before a run directory is made, a stage clones or a model loads.
    """
    from algos.backends import check_backend
    from algos.policy import check_model

    check_world(cfg, launcher_world_size())
    check_backend(cfg.rollout.backend, f"rollout.backend = {cfg.rollout.backend!r}")
    check_model(cfg)


def _sft_stage(cfg: Config, run_dir: Path, log: Any) -> None:
    """The pipeline's first stage: clone the expert into ``run_dir/sft`` (or finish doing so)."""
    from algos.sft import finished, resume_sft, sft

    stage = run_dir / "sft"
    if finished(stage):
        return
    log(f"stage 1/2: behaviour cloning on {cfg.sft.demos} expert episodes -> {stage}")
    command = f"`algos train --resume {run_dir}`"  # what continues the pipeline
    if (stage / "config.json").is_file():
        resume_sft(stage, log=log, continue_with=command)
    else:
        sft(cfg, run_dir=stage, log=log, continue_with=command)
    log("stage 2/2: RL from the cloned policy")


def _run(cfg: Config, run_dir: Path | None, log: Any, *, resume: bool) -> Path:
    with contextlib.ExitStack() as held:
        if run_dir is not None:
            held.enter_context(_holding(run_dir))
        if cfg.model.init == "sft":
            _sft_stage(cfg, run_dir, log)
            resume = any((run_dir / "checkpoints").glob("iter_*"))  # killed before RL: start it
        s = build_session(cfg, run_dir, resume=resume, log=log)
        if run_dir is None:  # made just now by build_session
            held.enter_context(_holding(s.run_dir))
        with stop_on_disk_error(s.run_dir, f"`algos train --resume {s.run_dir}`"):
            return _train_session(s, log)


def _train_session(s: Session, log: Any) -> Path:
    """Evaluate, train and evaluate in the built session ``s``; return its run directory."""
    from algos.eval import HeldOutEnvs, evaluate

    cfg = s.cfg
    main = s.world.is_main  # rank 0 evaluates, logs and writes; the others wait at barriers
    if main and s.eval_envs is None:
        s.eval_envs = HeldOutEnvs(cfg)  # one set of held-out envs for every evaluation

    def held_out() -> dict[str, Any]:
        return evaluate(
            cfg, s.backend, cfg.run.eval_episodes, progress=cfg.run.progress, envs=s.eval_envs
        )

    if not main:
        log = _quiet
    if _finished(cfg, s.run_dir, s.done):
        log(f"{s.run_dir}: already finished ({s.done}/{cfg.run.iterations} iterations)")
        s.close()
        return _leave(s)
    logger = MetricsLogger(
        s.run_dir, loggers=cfg.run.loggers, config=cfg.to_dict(), resume_from=s.done, enabled=main
    )
    summary: dict[str, Any] = read_json(s.run_dir / "eval.json")
    try:
        if cfg.run.eval_episodes and "before" not in summary and main:
            summary.update(_baselines(cfg, log))
            summary["before"] = held_out()
            log(f"eval before training: {summary['before']['line']}")
            write_json(s.run_dir / "eval.json", summary)
        s.world.barrier()
        for it in range(s.done + 1, cfg.run.iterations + 1):
            metrics, episodes = run_iteration(s, it)
            every = cfg.run.eval_every
            if (
                main
                and cfg.run.eval_episodes
                and every
                and it % every == 0
                and it < cfg.run.iterations
            ):
                held = held_out()
                metrics.update({f"eval/{k}": held[k] for k in _EVAL_KEYS})
                log(f"eval after iteration {it}: {held['line']}")
            logger.log(it, metrics)
            if cfg.run.log_episodes:
                logger.log_episodes(it, [e.to_json() for e in episodes[: cfg.run.log_episodes]])
            log(_progress_line(it, cfg.run.iterations, metrics))
            if metrics["rollout/step_rows"] == 0 or "time/update_s" not in metrics:
                log(f"warning: iteration {it} produced no step rows to train on "
                    f"(every episode ended before its first step: "
                    f"{_end_reasons(episodes)}); check rollout.max_prompt_tokens")  # fmt: skip
            last = it == cfg.run.iterations
            if last or (cfg.run.save_every and it % cfg.run.save_every == 0):
                save_checkpoint(
                    s.run_dir,
                    it,
                    s.learner,
                    keep=cfg.run.keep_checkpoints,
                    extra_rng=_backend_rng(s.backend),
                )
        if cfg.run.eval_episodes and main:
            summary["after"] = held_out()
            log(f"eval after training: {summary['after']['line']}")
            write_json(s.run_dir / "eval.json", summary)
            logger.log_eval(summary)
            log(_eval_table(summary))
    finally:
        logger.close()
        s.close()
    run_dir = _leave(s)
    if main:
        from algos.plot import draw_plots

        draw_plots(run_dir, log)
    return run_dir


def _finished(cfg: Config, run_dir: Path, done: int) -> bool:
    """Whether a run that has done ``done`` iterations has nothing left to do."""
    if done < cfg.run.iterations:
        return False
    return not cfg.run.eval_episodes or "after" in read_json(run_dir / "eval.json")


def _leave(s: Session) -> Path:
    """Free the session's models, then leave the process group; return the run directory."""
    run_dir, world = s.run_dir, s.world
    s.learner = s.backend = None  # FSDP's hooks hold the process group: free them first
    world.close()
    return run_dir


def _quiet(*args: Any, **kwargs: Any) -> None:
    """The ``log`` of ranks > 0 (rank 0 reports for the run)."""


#: Held-out figures logged as ``eval/...`` metrics with ``run.eval_every``.
_EVAL_KEYS = ("success_rate", "score_mean", "valid_action_ratio", "episode_length")


def _baselines(cfg: Config, log: Any) -> dict[str, Any]:
    """The reference agents of ``run.eval_baselines`` on the held-out tasks."""
    from algos.eval import evaluate_agent

    out = {}
    for agent in cfg.run.eval_baselines:
        out[agent] = evaluate_agent(cfg, agent, cfg.run.eval_episodes)
        log(f"eval {agent} agent: {out[agent]['line']}")
    return out


def _eval_table(summary: dict[str, Any]) -> str:
    from algos.eval import table

    names = {"random": "random agent", "expert": "scripted expert", "before": "policy before",
             "after": "policy after"}  # fmt: skip
    rows = [(names[k], summary[k]) for k in names if k in summary]
    n = summary["after"]["episodes"]
    return (
        f"held-out evaluation ({n} distinct tasks, each played once, the same for every row):\n"
        + table(rows)
    )


def _backend_rng(backend: Any) -> dict[str, torch.Tensor]:
    state = getattr(backend, "rng_state", None)
    return {"rollout": state} if state is not None else {}


def _end_reasons(episodes: list[Any]) -> str:
    from collections import Counter

    return ", ".join(
        f"{k or 'running'} {v}" for k, v in Counter(e.end_reason for e in episodes).items()
    )


def _progress_line(it: int, total: int, m: dict[str, Any]) -> str:
    def g(k: str, fmt: str = ".2f") -> str:
        return format(m[k], fmt) if k in m else "-"

    return (
        f"iter {it}/{total}  success {g('rollout/success_rate')}  "
        f"return {g('rollout/return_mean')}  len {g('rollout/episode_length', '.1f')}  "
        f"valid {g('rollout/valid_action_ratio')}  pg {g('actor/pg_loss', '.3f')}  "
        f"rollout {g('time/rollout_s', '.1f')}s  update {g('time/update_s', '.1f')}s"
    )
