"""One update on a fixed global batch, as the trainer runs it; the trained parameters out.

Run by ``test_exactness.py``, in one process or under ``torchrun`` (gloo):

    python exact_update.py OUT make                 # a one-process Keypad rollout -> OUT/batch.pt
    python exact_update.py OUT run CASE [CASE ...]  # each case's update -> OUT/CASE.safetensors

A case is ``config:strategy:split``: ``config`` one of :data:`CONFIGS`, ``strategy`` ``ddp`` or
``fsdp``, ``split`` ``groups`` (each rank the rows of its task groups, as the trainer deals
them) or ``rank0`` (rank 0 every row, the other ranks none). Every rank takes its rows of the
same global batch and calls :func:`algos.trainer.update_policy`; rank 0 writes the parameters
(gathered from the shards under FSDP) and the update's metrics.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

from launch import KEYPAD

#: Settings compared across world sizes: a group estimator, a whitening one with the KL term
#: (a frozen reference, sharded under FSDP), and a critic one (values gathered, step-GAE).
LR = ["optim.lr=1e-5", "optim.critic_lr=1e-5"]

CONFIGS = {
    "gigpo": ["algo=gigpo"],
    "reinforce_pp_kl": ["algo=reinforce_pp", "algo.kl_coef=0.05"],
    "steppo": ["algo=steppo", "algo.clip_low=0.2", "algo.clip_high=0.28"],
}


def config(out: Path, name: str, *extra: str):
    from algos.config import load_config

    sets = [*KEYPAD, "run.iterations=1", *LR, f"run.out_dir='{out / 'runs'}'", f"run.name='{name}'"]
    return load_config(None, [*sets, *extra])


def make(out: Path) -> None:
    """A real one-process rollout of iteration 1's tasks, saved as the global batch."""
    from algos.trainer import build_session, iteration_rollout

    cfg = config(out, "make", *CONFIGS["gigpo"])
    s = build_session(cfg, None)
    ro = iteration_rollout(cfg, s.venv, s.backend, 1)
    s.close()
    from algos.batch import save_batch

    save_batch(ro.batch, out / "batch.pt")


def run_case(out: Path, case: str) -> None:
    from safetensors.torch import save_file

    from algos.checkpoint import trainable_state
    from algos.global_batch import empty_batch
    from algos.rollout import RolloutResult
    from algos.trainer import build_session, update_policy

    name, strategy, split = case.split(":")
    cfg = config(out, case.replace(":", "-"), *CONFIGS[name], f"dist.strategy={strategy}")
    s = build_session(cfg, None)
    from algos.batch import load_batch

    batch = load_batch(out / "batch.pt")  # written by make() above
    lo, hi = s.world.env_range(cfg.env.num_tasks, cfg.env.group_size)
    if split == "rank0":
        lo, hi = (0, 10**9) if s.world.is_main else (0, 0)
    mine = [i for i, t in enumerate(batch.traj_uid.tolist()) if lo <= t < hi]
    local = batch.select(mine) if mine else empty_batch()
    metrics = update_policy(s, RolloutResult(batch=local, episodes=[]), 1)
    state = trainable_state(s.learner.model)  # every rank: FSDP gathers
    if s.learner.critic is not None:
        state.update({f"critic.{k}": v for k, v in trainable_state(s.learner.critic).items()})
    if s.world.is_main:
        save_file(state, str(out / f"{case}.safetensors"))
        (out / f"{case}.json").write_text(json.dumps(metrics))
    s.close()
    del s
    gc.collect()


def main(argv: list[str]) -> None:
    out, mode, *cases = argv
    out = Path(out)
    if mode == "make":
        make(out)
        return
    import os

    import torch.distributed as dist

    ranks = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if ranks:  # one process group for every case (the sessions join it, they do not own it)
        dist.init_process_group("gloo")
    for case in cases:
        run_case(out, case)
    if ranks:
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
