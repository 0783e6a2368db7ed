"""Learning curves of a run as PNG files (``algos plot RUN_DIR``).

``curves.png`` has one panel per group of metrics, each with a y-axis label and a legend
entry for every line, iterations 1..N on an integer x axis. The success panel shows the
training rollouts' success with its 95% Wilson interval, and the held-out evaluation before
(at iteration 0) and after training (at N) with theirs, next to the random agent's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_gym.episode import wilson_interval
from algos.metrics import read_metrics
from algos.runs import read_json

#: Panels of ``curves.png``: (title, y label, ((metric key, legend label), ...)).
PANELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("success rate", "share of episodes won", (("rollout/success_rate", "training rollouts"),)),
    ("return / score", "mean per episode", (
        ("rollout/return_mean", "return (shaped)"), ("rollout/score_mean", "env score"),
    )),
    ("episode length", "steps", (("rollout/episode_length", "training rollouts"),)),
    ("valid actions", "share of steps", (("rollout/valid_action_ratio", "training rollouts"),)),
    ("policy loss", "loss", (("actor/pg_loss", "policy-gradient loss"),)),
    ("entropy / KL", "nats per token", (("actor/entropy", "entropy"), ("actor/kl", "KL to reference"))),
    ("clip fraction", "share of tokens", (("actor/pg_clipfrac", "ratio clipped"),)),
    ("grad norm", "L2 norm", (("actor/grad_norm", "actor"), ("critic/critic_grad_norm", "critic"))),
    ("value loss", "loss", (("critic/value_loss", "critic"),)),
    ("tokens/s", "tokens per second", (
        ("perf/rollout_tokens_per_s", "rollout (new tokens)"),
        ("perf/update_tokens_per_s", "update (prompt + response)"),
    )),
    ("seconds per phase", "seconds", (
        ("time/rollout_s", "rollout"), ("time/prepare_s", "old log-probs, values, advantages"),
        ("time/update_s", "update"),
    )),
)  # fmt: skip


def _success_panel(ax: Any, rows: list[dict[str, Any]], evals: dict[str, Any], last: int) -> None:
    pts = [(r["iteration"], r["rollout/success_rate"], r.get("rollout/episodes")) for r in rows
           if "rollout/success_rate" in r]  # fmt: skip
    if pts:
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], marker="o", ms=3, label="training rollouts")
        if all(p[2] for p in pts):
            ci = [wilson_interval(round(p[1] * p[2]), int(p[2])) for p in pts]
            ax.fill_between(xs, [c[0] for c in ci], [c[1] for c in ci], alpha=0.15,
                            label="95% interval")  # fmt: skip
    n_eval = (evals.get("before") or evals.get("after") or {}).get("episodes")
    mid = [(r["iteration"], r["eval/success_rate"]) for r in rows if "eval/success_rate" in r]
    if mid and n_eval:
        ci = [wilson_interval(round(y * n_eval), n_eval) for _, y in mid]
        ax.errorbar([x for x, _ in mid], [y for _, y in mid],
                    yerr=[[y - c[0] for (_, y), c in zip(mid, ci)],
                          [c[1] - y for (_, y), c in zip(mid, ci)]],
                    fmt="^", ms=5, capsize=3, label="held-out: during training")  # fmt: skip
    marks = (("before", 0, "s", "held-out: before"), ("after", last, "D", "held-out: after"))
    for key, x, marker, label in marks:
        if key in evals:
            s = evals[key]
            lo, hi = s["success_ci95"]
            y = s["success_rate"]
            ax.errorbar([x], [y], yerr=[[y - lo], [hi - y]], fmt=marker, ms=6, capsize=4,
                        label=f"{label} (n={s['episodes']})")  # fmt: skip
    if "random" in evals:
        ax.axhline(evals["random"]["success_rate"], ls=":", color="grey",
                   label="held-out: random agent")  # fmt: skip
    ax.set_ylim(-0.03, 1.03)


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write ``RUN_DIR/plots/curves.png`` (the panels that have data); return the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = read_metrics(run_dir)
    evals = read_json(Path(run_dir) / "eval.json")
    last = max([r["iteration"] for r in rows] + [1])
    panels = [
        (title, ylabel, [(k, lab) for k, lab in lines if any(k in r for r in rows)])
        for title, ylabel, lines in PANELS
    ]
    panels = [p for p in panels if p[2]]
    out_dir = Path(run_dir) / "plots"
    out_dir.mkdir(exist_ok=True)
    cols = 3
    nrows = max((len(panels) + cols - 1) // cols, 1)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.4 * cols, 3.2 * nrows), squeeze=False)
    for ax, (title, ylabel, lines) in zip(axes.flat, panels):
        if title == "success rate":
            _success_panel(ax, rows, evals, last)
        else:
            for key, label in lines:
                pts = [(r["iteration"], r[key]) for r in rows if key in r]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        ax.set_title(title)
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(str(Path(run_dir).name))
    fig.tight_layout()
    path = out_dir / "curves.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return [path]
