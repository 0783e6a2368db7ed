"""Update time per iteration with 1 and 2 CPU ranks on the same global batch, and the all-reduce cost.

One real rollout of the ALFWorld GiGPO recipe's CPU profile (SmolLM2-135M-Instruct, the last 4
layers training, 2 task groups x 4 rollouts, generated games) is the global batch. Then, on
that batch, ``algos.trainer.update_policy`` (old log-probs, gather, advantages, the optimiser
steps) is timed in one process, and with 2 ranks under ``torchrun`` (gloo) with DDP and with
FSDP2; each rank holds one task group. The ranks of a 2-core machine share the cores, so no
speed-up is expected: the figures show what the distributed path costs.

The frozen-trunk shortcut (the update running only the trained layers on states recorded by the
rollout) is off under DDP/FSDP, so the batch's recorded states are dropped and every run does
the full forward: the three rows compare like with like.

Also timed on 2 ranks: ``all_reduce`` of a float32 tensor the size of the trained parameters
(what DDP reduces once per optimiser step) and of 16 floats (the per-step metrics).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_distributed.py [--repeats 3] [--model tiny-random]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RECIPE = "recipes/alfworld/gigpo.toml"


def _config(out: Path, model: str, strategy: str):
    from algos.config import load_config

    return load_config(
        ROOT / RECIPE,
        [
            "profile=cpu",
            f"model={model}",
            *(
                ["model.trainable_layers=1", "rollout.max_prompt_tokens=8192"]
                if model == "tiny-random"
                else []
            ),
            "run.eval_episodes=0",
            "run.progress=false",
            "run.loggers=[]",
            f"run.out_dir={json.dumps(str(out / 'runs'))}",
            f"run.name='{strategy}-{os.environ.get('RANK', '0')}'",
            f"dist.strategy={strategy}",
        ],
    )


def make_batch(out: Path, model: str) -> None:
    """One rollout of iteration 1's tasks in one process -> ``out/batch.pt``."""

    from algos.trainer import build_session, iteration_rollout

    cfg = _config(out, model, "ddp")
    s = build_session(cfg, None)
    ro = iteration_rollout(cfg, s.venv, s.backend, 1)
    s.close()
    batch = ro.batch
    if getattr(batch, "trunk_states", None) is not None:
        batch.trunk_states = None  # every run does the full forward (module docstring)
    from algos.batch import save_batch

    save_batch(batch, out / "batch.pt")


def worker(out: Path, model: str, strategy: str, repeats: int) -> None:
    """Time ``update_policy`` on this rank's rows ``repeats`` times (plus the all-reduces)."""
    import torch

    from algos.global_batch import empty_batch
    from algos.rollout import RolloutResult
    from algos.trainer import build_session, update_policy

    cfg = _config(out, model, strategy)
    s = build_session(cfg, None)
    s.learner.trunk_depth = None  # the full forward in every row of the table
    from algos.batch import load_batch

    batch = load_batch(out / "batch.pt")  # written by make_batch above
    lo, hi = s.world.env_range(cfg.env.num_tasks, cfg.env.group_size)
    mine = [i for i, t in enumerate(batch.traj_uid.tolist()) if lo <= t < hi]
    local = batch.select(mine) if mine else empty_batch()
    times, steps = [], 0
    for k in range(repeats):
        s.world.barrier()
        t0 = time.perf_counter()
        metrics = update_policy(s, RolloutResult(batch=local, episodes=[]), k + 1)
        times.append(time.perf_counter() - t0)
        steps = int(metrics["actor/optimizer_steps"])
    result = {"update_s": times, "optimizer_steps": steps, "rows": len(batch), "mine": len(mine)}
    if s.world.size > 1:
        import torch.distributed as dist

        n = sum(p.numel() for p in s.learner.model.parameters() if p.requires_grad)
        for name, size, reps in (("grad", n, 10), ("metrics", 16, 200)):
            t = torch.zeros(size)
            dist.all_reduce(t)  # warm-up
            s.world.barrier()
            t0 = time.perf_counter()
            for _ in range(reps):
                dist.all_reduce(t)
            result[f"allreduce_{name}_ms"] = (time.perf_counter() - t0) / reps * 1e3
        result["trained_params"] = n
    s.close()
    world = s.world
    if world.is_main:
        (out / f"{strategy}-{world.size}.json").write_text(json.dumps(result))
    del s, local, batch  # FSDP's hooks hold the process group: free the model first
    world.close()


def _run(args: list[str], nproc: int) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    env["TRANSFORMERS_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    here = str(Path(__file__).resolve())
    if nproc == 1:
        cmd = [sys.executable, here, *args]
    else:
        torchrun = str(Path(sys.executable).with_name("torchrun"))
        cmd = [torchrun, "--standalone", f"--nproc_per_node={nproc}", here, *args]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--repeats", type=int, default=3, help="timed updates per configuration")
    p.add_argument("--worker", nargs=2, metavar=("OUT", "STRATEGY"), help=argparse.SUPPRESS)
    p.add_argument("--make", metavar="OUT", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.make:
        make_batch(Path(a.make), a.model)
        return
    if a.worker:
        worker(Path(a.worker[0]), a.model, a.worker[1], a.repeats)
        return
    out = Path(tempfile.mkdtemp(prefix="bench-distributed-"))
    common = ["--model", a.model, "--repeats", str(a.repeats)]
    _run(["--make", str(out), *common], 1)
    _run(["--worker", str(out), "ddp", *common], 1)
    _run(["--worker", str(out), "ddp", *common], 2)
    _run(["--worker", str(out), "fsdp", *common], 2)
    rows = [("1 process", "ddp-1"), ("2 ranks, DDP", "ddp-2"), ("2 ranks, FSDP2", "fsdp-2")]
    first = json.loads((out / "ddp-1.json").read_text())
    print(
        f"\n{a.model}, {RECIPE} (profile cpu): {first['rows']} step rows, "
        f"{first['optimizer_steps']} optimiser steps per update; {platform.processor() or ''} "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"{time.strftime('%Y-%m-%d')}\n"
    )
    print("| run | update s (median) | min-max | rows on rank 0 |")
    print("|---|---|---|---|")
    for label, key in rows:
        r = json.loads((out / f"{key}.json").read_text())
        t = r["update_s"]
        print(f"| {label} | {statistics.median(t):.2f} | {min(t):.2f}-{max(t):.2f} | {r['mine']} |")
    for key in ("ddp-2", "fsdp-2"):
        r = json.loads((out / f"{key}.json").read_text())
        grad, met = r["allreduce_grad_ms"], r["allreduce_metrics_ms"]
        print(
            f"\n{key}: all_reduce of {r['trained_params'] / 1e6:.1f}M float32 (the trained "
            f"gradients) {grad:.1f} ms, of 16 floats (metrics) {met:.2f} ms; per optimiser step "
            f"{grad + met:.1f} ms, per update {r['optimizer_steps'] * (grad + met) / 1e3:.2f} s"
        )


if __name__ == "__main__":
    main()
