"""``algos sft``: behaviour cloning on scripted-expert demonstrations, a warm start for RL.

The demonstrations (:mod:`algos.demos`) are rendered with the RL rollout's prompts and action
format; the loss is the token NLL of the response tokens only (the prompt is context, never a
target), averaged over the tokens of each mini-batch of ``sft.mini_batch_size`` steps, which is
computed in micro-batches of ``optim.micro_batch_size`` with exact accumulation, as the RL
learner does. Only the parameters the config trains (``model.trainable_layers``, LoRA) move.

The run directory has the layout of a training run (``config.json``, ``metrics.jsonl`` with one
line per epoch, ``checkpoints/``), so ``algos train --set model.init=RUN_DIR`` starts RL from it
and ``algos sft --resume RUN_DIR`` continues it after its last complete epoch. Reported per
epoch: ``sft/loss`` (training NLL per token) and ``sft/val_nll`` on held-out demonstrations
(other train-split tasks, never trained on).
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from algos.batch import StepBatch
from algos.config import Config, dumps
from algos.demos import Demo, check_split, load_or_make_demos
from algos.learner import response_logits, token_logp
from algos.metrics import progress_bar
from algos.packing import pack
from algos.trunk import trunk_depth, trunk_states


@dataclass
class _Cloner:
    """What :func:`algos.checkpoint.save_checkpoint` needs of a learner."""

    model: Any
    optimizer: Any
    device: Any
    critic: Any = None
    critic_optimizer: Any = None


def rows(demos: list[Demo], pad_id: int) -> StepBatch:
    """The demonstration steps as a ``StepBatch`` (response = the expert's action tokens)."""
    width = max(len(d.response_ids) for d in demos)
    ids = torch.full((len(demos), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(demos), width))
    for i, d in enumerate(demos):
        ids[i, : len(d.response_ids)] = torch.tensor(d.response_ids)
        mask[i, : len(d.response_ids)] = 1.0
    return StepBatch(
        prompt_ids=[torch.tensor(d.prompt_ids, dtype=torch.long) for d in demos],
        response_ids=ids,
        response_mask=mask,
        step_reward=[0.0] * len(demos),
        index=[d.episode for d in demos],
        traj_uid=[d.episode for d in demos],
        step_index=[d.step for d in demos],
    )


def token_nll(
    model: Any, batch: StepBatch, pad_id: int, device: Any, depth: int | None = None
) -> tuple[torch.Tensor, int]:
    """``(sum of the response tokens' NLL, number of response tokens)`` of a batch.

    A prompt prefix common to the batch's rows runs once (:func:`algos.packing.pack`).
    """
    inputs = pack(batch, pad_id, device, depth, share_prefix=True)
    logp = token_logp(response_logits(model, inputs), inputs, 1.0)
    mask = batch.response_mask[:, : inputs["width_r"]].to(device)
    return -(logp * mask).sum(), int(mask.sum().item())


@torch.no_grad()
def with_trunk_states(
    model: Any, batch: StepBatch, pad_id: int, device: Any, micro: int, *, progress: bool = False
) -> StepBatch:
    """``batch`` with the frozen trunk's output recorded per row (one forward of the trunk).

    Every epoch then runs only the trainable top layers (:mod:`algos.trunk`); a model whose
    trunk is not frozen gets the batch back unchanged. This pass can be the longest part of
    cloning (WebShop's 443 steps of ~400-token prompts: 17 minutes on 2 cores), hence the bar.
    """
    depth = trunk_depth(model)
    if depth is None:
        return batch
    states: list[torch.Tensor] = [None] * len(batch)  # type: ignore[list-item]
    bar = progress_bar(progress, "sft (recording the frozen trunk)", total=len(batch), unit="step")
    for rows_ in _episode_parts(batch, micro):
        part = batch.select(rows_)
        inputs = pack(part, pad_id, device, share_prefix=True)
        out = trunk_states(model, depth, inputs)
        head = None
        if isinstance(out, tuple):  # the shared prefix's states, then the rows'
            head, out = out[0][0].cpu(), out[1]
        out = out.cpu()
        shared = 0 if head is None else head.shape[0]
        width_p = inputs["input_ids"].shape[1] - inputs["width_r"]
        lengths = (part.response_mask != 0).sum(-1).tolist()
        for i, (row, p) in enumerate(zip(rows_, part.prompt_ids)):
            own = out[i, width_p - (len(p) - shared) : width_p + lengths[i] - 1]
            states[row] = own.clone() if head is None else torch.cat([head, own], 0)
        bar.update(len(part))
    bar.close()
    batch.trunk_states = states
    return batch


@torch.no_grad()
def mean_nll(model: Any, batch: StepBatch | None, pad_id: int, device: Any, micro: int) -> float:
    """Per-token NLL of ``batch``'s responses under ``model`` (nan when there is no batch).

    A batch from :func:`with_trunk_states` runs only the top layers on its recorded states.
    """
    if batch is None:
        return float("nan")
    depth = None if batch.trunk_states is None else trunk_depth(model)
    was = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for part_rows in _episode_parts(batch, micro):
            nll, n = token_nll(model, batch.select(part_rows), pad_id, device, depth)
            total, count = total + float(nll), count + n
    finally:
        model.train(was)
    return total / max(count, 1)


def sft(
    cfg: Config, *, run_dir: Path | None = None, log: Any = print, continue_with: str = ""
) -> Path:
    """Clone the expert per ``cfg`` into a new run directory (or ``run_dir``); return it.

    Args:
        cfg: The config (its ``[sft]`` table; ``model.init = "sft"`` is read as no init).
        run_dir: Where to clone (a pipeline's stage folder); None: a new run directory.
        log: Where progress lines go.
        continue_with: What a refused write (a full disk) says continues the run (default:
            ``algos sft --resume RUN``; a pipeline's stage names the pipeline's command).
    """
    from agent_gym.paths import atomic_write_text
    from algos.checkpoint import init_chain, pin_init
    from algos.envs import check_envs
    from algos.policy import check_model
    from algos.runs import hold_run, new_run_dir, stop_on_disk_error, write_config

    cfg = copy.deepcopy(cfg)
    if cfg.model.init == "sft":  # the pipeline's RL config: this stage starts from the model
        cfg.model.init = ""
    cfg.model.init = pin_init(cfg.model.init)
    check_split(cfg)
    check_model(cfg)
    check_envs(cfg, experts=cfg.sft.expert)
    if cfg.model.init:
        init_chain(Path(cfg.model.init), cfg.model.name)
    if run_dir is None:
        run_dir = new_run_dir(cfg, "sft")
        write_config(run_dir, cfg)
        config_written = True
    else:
        run_dir, config_written = Path(run_dir), False
        run_dir.mkdir(parents=True, exist_ok=True)
    command = continue_with or f"`algos sft --resume {run_dir}`"
    with hold_run(run_dir), stop_on_disk_error(run_dir, command):
        if not config_written:
            atomic_write_text(run_dir / "config.json", dumps(cfg))
        atomic_write_text(run_dir / "sft.json", json.dumps({"finished": False}))  # the mark
        return _run(cfg, run_dir, log, resume=False)


def resume_sft(run_dir: Path, *, log: Any = print, continue_with: str = "") -> Path:
    """Continue the SFT run in ``run_dir`` after its last complete epoch.

    A run stopped before its first epoch's checkpoint starts over (the same clone).
    ``continue_with`` as in :func:`sft`.

    Raises:
        ValueError: ``run_dir`` is a training run (its checkpoints would be replaced).
        FileExistsError: Another process is cloning in it (:func:`algos.runs.hold_run`).
    """
    from algos.runs import hold_run, run_config, run_kind, stop_on_disk_error

    run_dir = Path(run_dir)
    cfg = run_config(run_dir)
    if run_kind(run_dir) == "rl":
        raise ValueError(
            f"{run_dir} is a training run (algos train), not a behaviour-cloning run: continue "
            f"it with `algos train --resume {run_dir}`"
        )
    command = continue_with or f"`algos sft --resume {run_dir}`"
    with hold_run(run_dir), stop_on_disk_error(run_dir, command):
        started = any((run_dir / "checkpoints").glob("iter_*"))
        if not started:  # the same config and seeds: the same clone
            log(f"{run_dir}: stopped before its first epoch's checkpoint; starting it over")
        return _run(cfg, run_dir, log, resume=started)


def finished(run_dir: Path) -> bool:
    """Whether the SFT run in ``run_dir`` completed every epoch."""
    from algos.runs import read_json

    return bool(read_json(Path(run_dir) / "sft.json").get("finished", False))


def _run(cfg: Config, run_dir: Path, log: Any, *, resume: bool) -> Path:
    from algos.checkpoint import restore_latest, save_checkpoint
    from algos.metrics import MetricsLogger
    from algos.policy import build_models, compute_dtype_line
    from algos.runs import seed_everything, write_json

    s = cfg.sft
    build_cfg = copy.deepcopy(cfg)
    build_cfg.algo.kl_coef, build_cfg.algo.name = 0.0, "grpo"  # no reference, no critic
    models = build_models(build_cfg)
    if line := compute_dtype_line(cfg, models):
        log(line)
    model, tok = models.model, models.tokenizer
    pad = tok.pad_token_id
    device = next(model.parameters()).device
    train = load_or_make_demos(cfg, tok, s.demos, s.seed, log=log, progress=cfg.run.progress)
    seen = {d.task_id for d in train}
    val = [
        d
        for d in load_or_make_demos(cfg, tok, s.val_demos, s.seed + 1, log=log, progress=False)
        if d.task_id not in seen  # held out: tasks the training demos never show
    ] if s.val_demos else []  # fmt: skip
    if not train:
        raise ValueError("sft: the expert produced no demonstration steps")
    params = [p for p in model.parameters() if p.requires_grad]
    cloner = _Cloner(model, torch.optim.AdamW(params, lr=s.lr, weight_decay=0.0), device)
    seed_everything(cfg.run.seed, cfg.run.threads)
    done = restore_latest(run_dir, cloner, log)[0] if resume else 0
    logger = MetricsLogger(run_dir, loggers=cfg.run.loggers, config=cfg.to_dict(),
                           resume_from=done)  # fmt: skip
    micro = cfg.optim.micro_batch_size
    summary = {"train_steps": len(train), "val_steps": len(val)}
    try:
        t0 = time.perf_counter()
        # The frozen trunk's output, recorded once: every epoch and every held-out NLL then
        # runs only the top layers.
        val_rows = with_trunk_states(model, rows(val, pad), pad, device, micro) if val else None
        train_rows = with_trunk_states(model, rows(train, pad), pad, device, micro,
                                       progress=cfg.run.progress)  # fmt: skip
        if train_rows.trunk_states is not None:
            log(f"sft: recorded the frozen trunk's output of {len(train_rows) + len(val)} steps "
                f"in {time.perf_counter() - t0:.1f} s; epochs run the top layers only")  # fmt: skip
        if not resume:
            before = summary["val_nll_before"] = mean_nll(model, val_rows, pad, device, micro)
            log(f"sft: held-out demonstration NLL before: {before:.3f} per token")
        val_nll = None  # the latest epoch's, when one ran here
        for epoch in range(done + 1, s.epochs + 1):
            t0 = time.perf_counter()
            loss, tokens = _epoch(cloner, train_rows, pad, s, micro, cfg.run.seed + epoch,
                                  progress=cfg.run.progress)  # fmt: skip
            val_nll = mean_nll(model, val_rows, pad, device, micro)
            metrics = {
                "sft/loss": loss,
                "sft/val_nll": val_nll,
                "perf/update_tokens_per_s": tokens / max(time.perf_counter() - t0, 1e-9),
                "time/epoch_s": time.perf_counter() - t0,
            }
            logger.log(epoch, metrics)
            log(f"sft epoch {epoch}/{s.epochs}  loss {loss:.3f}  held-out nll "
                f"{metrics['sft/val_nll']:.3f}  {metrics['time/epoch_s']:.1f}s")  # fmt: skip
            # The last epoch's checkpoint is all RL starts from: the earlier ones go.
            save_checkpoint(run_dir, epoch, cloner, keep=1 if epoch == s.epochs else 2)
        if val_nll is None:  # resumed after the last epoch
            val_nll = mean_nll(model, val_rows, pad, device, micro)
        summary["val_nll_after"] = val_nll
        summary["finished"] = True
        write_json(run_dir / "sft.json", summary)
    finally:
        logger.close()
    from algos.plot import draw_plots

    draw_plots(run_dir, log)  # plots/curves.png: the NLL per epoch
    return run_dir


def episode_order(batch: StepBatch, seed: int) -> list[int]:
    """The rows with their episodes shuffled and each episode's steps kept together, in order.

    Mini-batches cut from it hold whole stretches of episodes, whose steps share the task and
    the room: a micro-batch's common prompt prefix then runs once (:func:`token_nll`).
    """
    episodes: dict[Any, list[int]] = {}
    for row, ep in enumerate(batch.traj_uid):
        episodes.setdefault(ep, []).append(row)
    groups = list(episodes.values())
    perm = torch.randperm(len(groups), generator=torch.Generator().manual_seed(seed)).tolist()
    return [row for k in perm for row in groups[k]]


def _episode_parts(batch: StepBatch, micro: int) -> list[list[int]]:
    """Micro-batches of at most ``micro`` rows, none spanning two episodes."""
    parts: list[list[int]] = []
    for row, ep in enumerate(batch.traj_uid):
        if not parts or len(parts[-1]) == micro or batch.traj_uid[parts[-1][0]] != ep:
            parts.append([])
        parts[-1].append(row)
    return parts


def _epoch(
    c: _Cloner, batch: StepBatch, pad: int, s: Any, micro: int, seed: int, *, progress: bool
) -> tuple[float, int]:
    """One pass in mini-batches of shuffled episodes; returns (mean token NLL, tokens seen)."""
    n = len(batch)
    order = episode_order(batch, seed)
    steps = math.ceil(n / s.mini_batch_size)
    bar = progress_bar(progress, "sft (optimizer steps)", total=steps)
    total_nll, total_tokens, seen = 0.0, 0, 0
    for start in range(0, n, s.mini_batch_size):
        mb = batch.select(order[start : start + s.mini_batch_size])
        tokens = max(int((mb.response_mask != 0).sum()), 1)
        c.optimizer.zero_grad(set_to_none=True)
        for part_rows in _episode_parts(mb, micro):
            part = mb.select(part_rows)
            nll, count = token_nll(c.model, part, pad, c.device, trunk_depth(c.model))
            (nll / tokens).backward()  # the mini-batch's token mean, accumulated exactly
            total_nll += nll.item()
            total_tokens += count
            seen += sum(len(p) for p in part.prompt_ids) + count
        torch.nn.utils.clip_grad_norm_([p for p in c.model.parameters() if p.requires_grad], 1.0)
        c.optimizer.step()
        bar.update(1)
    bar.close()
    return total_nll / max(total_tokens, 1), seen
