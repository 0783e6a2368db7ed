"""GiGPO vs GRPO on the long ALFWorld recipe: the table and figure of docs/results.md.

Reads run directories and one ``algos eval --json`` file on this machine (nothing is typed in
by hand) and writes ``compare-alfworld-long.png`` beside this file:

    python docs/results/compare_alfworld_long.py

GRPO's runs come from ``algos compare ... --algos grpo --out runs/cmp-long-grpo`` (their
``eval.json`` holds the clone, the random agent and the end of each run). GiGPO's are the
recipe's RL seeds 0-3: seeds 0-2 ran 16 iterations, and their held-out success after 12 was
measured on their checkpoints of iteration 12 (``GIGPO_HELD_OUT``, an ``algos eval --json``
file; a run's first 12 iterations do not depend on its length); seed 3 ran 12 (its
``eval.json``). The training curves are each run's first 12 iterations of ``metrics.jsonl``.
"""

from __future__ import annotations

import json
from pathlib import Path

from algos.compare import rate_interval, t_interval
from algos.metrics import read_metrics

ITERATIONS = 12
SEEDS = (0, 1, 2, 3)
GRPO = [Path(f"runs/cmp-long-grpo/grpo-seed{s}") for s in SEEDS]
GIGPO_16 = [Path("runs/long-avx2"), Path("runs/long-avx2-s1"), Path("runs/long-avx2-s2")]
GIGPO_12 = [Path("runs/long12-avx2-s3")]
GIGPO = GIGPO_16 + GIGPO_12
GIGPO_HELD_OUT = Path("runs/cmp-long-gigpo12.json")
GIGPO_SPECS = [f"run:{d}/checkpoints/iter_{ITERATIONS:06d}" for d in GIGPO_16]


def train_curve(run: Path) -> list[float]:
    """Training-rollout success of iterations 1..ITERATIONS."""
    curve = [r["rollout/success_rate"] for r in read_metrics(run) if "rollout/success_rate" in r]
    if len(curve) < ITERATIONS:
        raise ValueError(f"{run}/metrics.jsonl: {len(curve)} iterations, {ITERATIONS} needed")
    return curve[:ITERATIONS]


def after(run: Path) -> float:
    """Held-out success of a run's final policy (its ``eval.json``)."""
    return json.loads((run / "eval.json").read_text())["after"]["success_rate"]


def main() -> None:
    """Print the table and write the figure."""
    start = json.loads((GRPO[0] / "eval.json").read_text())
    clone, random = start["before"]["success_rate"], start["random"]["success_rate"]
    gigpo_evals = json.loads(GIGPO_HELD_OUT.read_text())
    held = {
        "gigpo": [gigpo_evals[spec]["success_rate"] for spec in GIGPO_SPECS]
        + [after(d) for d in GIGPO_12],
        "grpo": [after(d) for d in GRPO],
    }
    diffs = [a - b for a, b in zip(held["gigpo"], held["grpo"])]
    print("| RL seed | GiGPO | GRPO | GiGPO - GRPO |\n|---|---|---|---|")
    for s, a, b, d in zip(SEEDS, held["gigpo"], held["grpo"], diffs):
        print(f"| {s} | {a:.1%} | {b:.1%} | {100 * d:+.1f} |")
    (ma, la, ha), (mb, lb, hb) = rate_interval(held["gigpo"]), rate_interval(held["grpo"])
    md, ld, hd = t_interval(diffs)
    print(f"| mean [95% t] | {ma:.1%} [{la:.1%}, {ha:.1%}] | {mb:.1%} [{lb:.1%}, {hb:.1%}] | "
          f"{100 * md:+.1f} [{100 * ld:+.1f}, {100 * hd:+.1f}] |")  # fmt: skip
    print(f"clone {clone:.1%}, random agent {random:.1%}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    xs = list(range(1, ITERATIONS + 1))
    for (algo, dirs), color, dx in (
        (("gigpo", GIGPO), "tab:blue", -0.15),
        (("grpo", GRPO), "tab:orange", 0.15),
    ):
        curves = [train_curve(d) for d in dirs]
        stats = [rate_interval([c[i] for c in curves]) for i in range(ITERATIONS)]
        ax.plot(xs, [s[0] for s in stats], color=color, marker=".", lw=1,
                label=f"{algo}: training rollouts (mean of {len(dirs)} seeds, 95% t)")  # fmt: skip
        ax.fill_between(xs, [s[1] for s in stats], [s[2] for s in stats], color=color, alpha=0.12)
        m, lo, hi = rate_interval(held[algo])
        ax.errorbar([dx, ITERATIONS + dx], [clone, m], yerr=[[0, m - lo], [0, hi - m]],
                    color=color, ls="--", lw=2, marker="s", capsize=4,
                    label=f"{algo}: 64 held-out games (mean, 95% t)")  # fmt: skip
    ax.axhline(random, ls=":", color="grey", label="random agent (held-out)")
    ax.set_xlabel("RL iteration (0 = the clone both start from)")
    ax.set_ylabel("success rate")
    ax.set_title("GiGPO vs GRPO, long ALFWorld recipe (generated games)", fontsize=10)
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(Path(__file__).with_name("compare-alfworld-long.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
