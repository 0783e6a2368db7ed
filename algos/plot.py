"""Learning curves of a run as PNG files (``algos plot RUN_DIR``).

``curves.png`` has one panel per group of metrics, each with a y-axis label and a legend
entry for every line, iterations 1..N on an integer x axis (epochs for an ``algos sft`` run,
whose panel is the cloning NLL on training and held-out demonstrations). The success panel shows the
training rollouts' success with its 95% Wilson interval, and the held-out evaluation before
(at iteration 0), during (``run.eval_every``) and after training (at N) with theirs, next to
the random agent's. ``success.png`` is that panel alone, large enough to read at a glance.
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
    ("cloning NLL", "nats per response token", (
        ("sft/loss", "training demonstrations"), ("sft/val_nll", "held-out demonstrations"),
    )),
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
        ("time/update_s", "update"), ("time/epoch_s", "cloning epoch"),
    )),
)  # fmt: skip


def _held_out(evals: dict[str, Any]) -> dict[str, Any]:
    """The summary that describes a run's held-out games (``before``, else ``after``)."""
    return evals.get("before") or evals.get("after") or {}


def held_out_points(rows: list[dict[str, Any]], evals: dict[str, Any], last: int
                    ) -> list[tuple[int, float, float, float, int]]:  # fmt: skip
    """``(iteration, success, low, high, n)`` of every held-out evaluation of a run, in order.

    Before training at iteration 0 (``eval.json``'s ``before``), during it from the
    ``eval/success_rate`` metrics (``run.eval_every``) and after it at ``last``; ``low`` and
    ``high`` bound the 95% Wilson interval over the ``n`` distinct tasks.
    """
    n = _held_out(evals).get("episodes")
    points = [(0, evals["before"])] if "before" in evals else []
    if n:
        points += [(r["iteration"], {"success_rate": r["eval/success_rate"], "episodes": n})
                   for r in rows if "eval/success_rate" in r]  # fmt: skip
    if "after" in evals:
        points.append((last, evals["after"]))
    out = []
    for x, s in points:
        k = int(s["episodes"])
        lo, hi = wilson_interval(round(s["success_rate"] * k), k)
        out.append((x, s["success_rate"], lo, hi, k))
    return out


def _success_panel(ax: Any, rows: list[dict[str, Any]], evals: dict[str, Any], last: int) -> None:
    pts = [(r["iteration"], r["rollout/success_rate"], r.get("rollout/episodes")) for r in rows
           if "rollout/success_rate" in r]  # fmt: skip
    if pts:
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], marker="o", ms=3, label="training rollouts")
        if all(p[2] for p in pts):
            ci = [wilson_interval(round(p[1] * p[2]), int(p[2])) for p in pts]
            ax.fill_between(xs, [c[0] for c in ci], [c[1] for c in ci], alpha=0.15,
                            label="training: 95% interval")  # fmt: skip
    held = held_out_points(rows, evals, last)
    if held:
        source = _held_out(evals).get("data_sources") or []
        data = f", {', '.join(source)}" if source else ""  # generated data says so
        ax.errorbar([h[0] for h in held], [h[1] for h in held],
                    yerr=[[h[1] - h[2] for h in held], [h[3] - h[1] for h in held]],
                    fmt="s-", ms=5, capsize=3, color="C3",
                    label=f"held-out games (n={held[0][4]}{data}), 95% interval")  # fmt: skip
    if "random" in evals:
        ax.axhline(evals["random"]["success_rate"], ls=":", color="grey",
                   label="held-out games: random agent")  # fmt: skip
    ax.set_ylim(-0.03, 1.03)


def _dress(ax: Any, title: str, ylabel: str, legend_size: int, xlabel: str = "iteration") -> None:
    """Title, axis labels, integer iterations (or epochs), legend and grid of one panel."""
    from matplotlib.ticker import MaxNLocator

    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=legend_size)
    ax.grid(alpha=0.3)


def draw_plots(run_dir: Path, log: Any = print) -> None:
    """:func:`plot_run` at the end of a run or a clone, which is complete by then.

    Plots that cannot be written (a full disk) are a warning that says how to draw them later.
    """
    try:
        plot_run(run_dir)
    except ImportError:  # pragma: no cover - matplotlib is in the train extra
        pass
    except OSError as exc:
        log(f"warning: {exc.filename or Path(run_dir) / 'plots'}: cannot write the plots "
            f"({exc.strerror}); the run is complete: `algos plot {run_dir}` draws them later")  # fmt: skip


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write ``RUN_DIR/plots/curves.png`` (the panels that have data) and ``success.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    evals = read_json(Path(run_dir) / "eval.json")
    xlabel = "epoch" if any("sft/loss" in r for r in rows) else "iteration"  # a cloning run
    before = read_json(Path(run_dir) / "sft.json").get("val_nll_before")  # its epoch 0
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
                if key == "sft/val_nll" and isinstance(before, (int, float)):
                    pts.insert(0, (0, before))  # the untrained model's, at epoch 0
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label)
        _dress(ax, title, ylabel, legend_size=7, xlabel=xlabel)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(str(Path(run_dir).name))
    fig.tight_layout()
    paths = [out_dir / "curves.png"]
    fig.savefig(paths[0], dpi=90)
    plt.close(fig)
    if any("rollout/success_rate" in r for r in rows) or evals:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        _success_panel(ax, rows, evals, last)
        _dress(ax, f"{Path(run_dir).name}: success rate", "share of episodes won", legend_size=8)
        fig.tight_layout()
        paths.append(out_dir / "success.png")
        fig.savefig(paths[-1], dpi=100)
        plt.close(fig)
    return paths
