"""Time every advantage estimator against its per-group Python-loop version.

Batches are generated (not real rollouts): about 8 step rows per trajectory, 8 trajectories
per task group, ALFWorld-like rewards (10 on success at the last step, -0.1 for an invalid
action) and anchors with realistic repetition (every trajectory of a group starts in the same
state; later states are drawn from a small per-group pool; one text is shared by all groups).
Rows are shuffled, as a balanced batch would be. The loop versions are the reference loops of
``tests/algos/reference_loops.py`` (a dict of lists per group, a Python loop per group, plain
float arithmetic); the "upstream-style" GiGPO loop computes the same formula the way verl-agent
writes it (a tensor per row, torch mean/std per group).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/bench_advantages.py                 # 10k, 100k, 1M rows
    OMP_NUM_THREADS=1 python benchmarks/bench_advantages.py --rows 100000 --loop-max-rows 100000

Prints one markdown table: vectorised seconds, loop seconds, their ratio, and the peak numpy
working memory of the vectorised call (tracemalloc, measured in a separate untimed call)
relative to the batch's own size (response mask + per-row numeric fields).
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import algos  # noqa: E402
from algos.gae import gae as token_gae  # noqa: E402


def _load_reference():
    path = ROOT / "tests" / "algos" / "reference_loops.py"
    spec = importlib.util.spec_from_file_location("reference_loops", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_reference()


def make_batch(n_rows: int, length: int, seed: int = 0) -> dict:
    """Generated step rows (about 8 per trajectory, 8 trajectories per task group)."""
    rng = np.random.default_rng(seed)
    n_traj = max(1, n_rows // 8)
    steps = np.clip(rng.poisson(8, n_traj), 1, 50)
    steps[-1] += n_rows - steps.sum()  # exact row count
    while steps[-1] < 1:  # rare: trim earlier trajectories
        k = int(np.argmax(steps[:-1]))
        steps[k] -= 1
        steps[-1] += 1
    traj = np.repeat(np.arange(n_traj), steps)
    start = np.cumsum(steps) - steps
    step = np.arange(n_rows) - np.repeat(start, steps)
    group = traj // 8
    last = step == np.repeat(steps - 1, steps)
    won = rng.random(n_traj) < 0.5
    reward = np.where(last & np.repeat(won, steps), 10.0, 0.0)
    reward -= 0.1 * (rng.random(n_rows) < 0.1)
    state = np.where(step == 0, 0, rng.integers(1, 7, n_rows))  # 6 later states per group
    pool = [f"You are in the middle of a room. Looking around you, you see a cabinet {k}."
            for k in range(7)]  # fmt: skip
    anchors = np.full(n_rows, None, dtype=object)
    for i in range(n_rows):  # building the data is not timed
        s = int(state[i])
        anchors[i] = "You arrive at the kitchen." if s == 6 else f"task {group[i]}: {pool[s]}"
    # A rollout makes one key object per task and per trajectory and repeats it on every step
    # row; anchors are new text objects at every step.
    index = np.array([f"task-{g}" for g in range(int(group.max()) + 1)], dtype=object)[group]
    traj_uid = np.array([f"traj-{t}" for t in range(n_traj)], dtype=object)[traj]
    tokens = rng.integers(1, length + 1, n_rows)
    mask = (torch.arange(length)[None, :] < torch.from_numpy(tokens)[:, None]).float()
    perm = rng.permutation(n_rows)
    return {
        "step_reward": reward[perm],
        "index": index[perm],
        "traj_uid": traj_uid[perm],
        "step_index": step[perm],
        "anchor_obs": anchors[perm],
        "tokens": tokens[perm],
        "response_mask": mask[perm],
        "values": rng.normal(size=(n_rows, length)),
    }


def estimators(b: dict) -> dict:
    """name -> (vectorised call, loop call)."""
    r, m, idx, tu, si, an = (
        b[k]
        for k in ("step_reward", "response_mask", "index", "traj_uid", "step_index", "anchor_obs")
    )
    v0 = b["values"][:, 0]
    tok = b["tokens"]
    return {
        "gigpo": (
            lambda: algos.gigpo_advantage(r, m, idx, tu, si, an, mode="mean_std_norm"),
            lambda: ref.gigpo(r, idx, tu, si, an, mode="mean_std_norm"),
        ),
        "gigpo vs upstream-style loop": (
            lambda: algos.gigpo_advantage(r, m, idx, tu, si, an, mode="mean_std_norm"),
            lambda: ref.gigpo_torch_loop(r, idx, tu, si, an, mode="mean_std_norm"),
        ),
        "grpo": (lambda: algos.grpo(r, m, idx, tu), lambda: ref.grpo(r, idx, tu)),
        "drgrpo": (lambda: algos.drgrpo(r, m, idx, tu), lambda: ref.grpo(r, idx, tu, False)),
        "rloo": (lambda: algos.rloo(r, m, idx, tu), lambda: ref.rloo(r, idx, tu)),
        "reinforce_pp_baseline": (
            lambda: algos.reinforce_pp_baseline(r, m, idx, tu),
            lambda: ref.reinforce_pp_baseline(r, idx, tu, tok),
        ),
        "reinforce_pp": (
            lambda: algos.reinforce_pp(r, m, tu, si, gamma=0.95),
            lambda: ref.reinforce_pp(r, tu, si, tok, 0.95),
        ),
        "step_gae": (
            lambda: algos.step_gae(r, v0, m, tu, si, gamma=0.95, lam=0.95),
            lambda: ref.step_gae(r, v0, tu, si, 0.95, 0.95),
        ),
        "gae (token)": (
            lambda: token_gae(
                _token_rewards(b), torch.from_numpy(b["values"]), m, gamma=0.95, lam=0.95
            ),
            lambda: ref.token_gae(
                _token_rewards(b).tolist(), b["values"].tolist(), m.tolist(), 0.95, 0.95
            ),
        ),
    }


def _token_rewards(b: dict) -> torch.Tensor:
    out = torch.zeros(b["response_mask"].shape, dtype=torch.float64)
    out[torch.arange(len(b["tokens"])), torch.from_numpy(b["tokens"] - 1)] = torch.from_numpy(
        b["step_reward"]
    )
    return out


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_numpy_bytes(fn) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--length", type=int, default=16, help="response length L")
    parser.add_argument("--loop-max-rows", type=int, default=100_000, help="skip loops above this")
    parser.add_argument("--only", nargs="*", help="estimator names to run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
          f"torch {torch.__version__}, numpy {np.__version__}, L={args.length}")  # fmt: skip
    print(
        "| rows | estimator | vectorised s | loop s | loop / vectorised | peak numpy mem / batch |"
    )
    print("|---:|---|---:|---:|---:|---:|")
    for n in args.rows:
        b = make_batch(n, args.length)
        batch_bytes = b["response_mask"].numel() * 4 + n * 8 * 4  # mask + 4 numeric row fields
        repeat = 3 if n <= 100_000 else 1
        for name, (vec, loop) in estimators(b).items():
            if args.only and name not in args.only:
                continue
            t_vec = best_time(vec, repeat)
            mem = peak_numpy_bytes(vec) / batch_bytes
            if n <= args.loop_max_rows:
                t_loop = best_time(loop, 1)
                loop_s, ratio = f"{t_loop:.3f}", f"{t_loop / t_vec:.0f}x"
            else:
                loop_s, ratio = "-", "-"
            print(f"| {n:,} | {name} | {t_vec:.3f} | {loop_s} | {ratio} | {mem:.2f} |", flush=True)


if __name__ == "__main__":
    main()
