"""Starting real ranks for the distributed tests: ``torchrun`` (gloo, CPU) or one process.

The processes run with this folder and the learner tests' folder (the Keypad env) importable,
offline and single-threaded; ``torchrun --standalone`` picks a free port, so tests never
collide on one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LEARNER_TESTS = HERE.parent / "learner"
PYTHON = sys.executable
TORCHRUN = str(Path(sys.executable).with_name("torchrun"))

#: A Keypad run of tiny-random that learns in seconds: 3 task groups (2 ranks get 2 and 1 of
#: them, an uneven share), several micro-batches per mini-batch and several optimiser steps.
KEYPAD = [
    "env=keypad_env:AlgosTest/Keypad-v0",
    "model=tiny-random",
    "env.num_tasks=3",
    "env.group_size=4",
    "env.action_format='plain'",
    "env.history_length=0",
    "rollout.max_new_tokens=2",
    "rollout.max_prompt_tokens=2048",
    "optim.lr=1e-2",
    "optim.critic_lr=1e-2",
    "optim.mini_batch_size=16",
    "optim.micro_batch_size=4",
    "optim.ppo_epochs=2",
    "run.progress=false",
    "run.loggers=[]",
    "run.log_episodes=2",
]


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a test process."""
    out = dict(os.environ)
    path = [str(HERE), str(LEARNER_TESTS), str(ROOT)]
    if out.get("PYTHONPATH"):
        path.append(out["PYTHONPATH"])
    out.update(
        PYTHONPATH=os.pathsep.join(path),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        out.pop(key, None)  # the test process itself is never a rank
    out.update(extra or {})
    return out


def run(
    args: list[str],
    *,
    nproc: int = 1,
    timeout: float = 600,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """``python ARGS`` (nproc 1) or ``torchrun --standalone --nproc_per_node N ARGS``.

    A hang is a failure: ``subprocess.TimeoutExpired`` after ``timeout`` seconds.
    """
    if nproc == 1:
        cmd = [PYTHON, *args]
    else:
        cmd = [TORCHRUN, "--standalone", f"--nproc_per_node={nproc}", *args]
    return subprocess.run(
        cmd,
        cwd=ROOT,
        env=env(extra_env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def train_args(run_dir: Path, *sets: str) -> list[str]:
    """``-m algos train`` of the Keypad recipe into ``run_dir``, with ``--set`` overrides."""
    out = ["-m", "algos", "train", "recipes/test/keypad.toml"]
    settings = [*KEYPAD, f"run.out_dir='{run_dir.parent}'", f"run.name='{run_dir.name}'", *sets]
    for s in settings:
        out += ["--set", s]
    return out


def check(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """Raise with the process's output when it failed."""
    if proc.returncode != 0:
        raise AssertionError(
            f"exit code {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n"
            f"--- stderr\n{proc.stderr[-6000:]}"
        )
    return proc
