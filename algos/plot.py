"""Learning curves of a run as PNG files (``algos plot RUN_DIR``)."""

from __future__ import annotations

from pathlib import Path

from algos.metrics import read_metrics

#: Panels of ``curves.png``: (title, metric keys).
PANELS = (
    ("success rate", ("rollout/success_rate",)),
    ("return / score", ("rollout/return_mean", "rollout/score_mean")),
    ("episode length", ("rollout/episode_length",)),
    ("valid-action ratio", ("rollout/valid_action_ratio",)),
    ("policy loss", ("actor/pg_loss",)),
    ("entropy / KL", ("actor/entropy", "actor/kl")),
    ("clip fraction", ("actor/pg_clipfrac",)),
    ("grad norm", ("actor/grad_norm",)),
    ("value loss", ("critic/value_loss",)),
    ("tokens/s", ("perf/rollout_tokens_per_s", "perf/update_tokens_per_s")),
    ("seconds per phase", ("time/rollout_s", "time/prepare_s", "time/update_s")),
)


def plot_run(run_dir: str | Path) -> list[Path]:
    """Write ``RUN_DIR/plots/curves.png`` (all panels that have data); return the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(run_dir)
    panels = [(t, [k for k in keys if any(k in r for r in rows)]) for t, keys in PANELS]
    panels = [(t, keys) for t, keys in panels if keys]
    out_dir = Path(run_dir) / "plots"
    out_dir.mkdir(exist_ok=True)
    cols = 3
    nrows = max((len(panels) + cols - 1) // cols, 1)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.0 * nrows), squeeze=False)
    for ax, (title, keys) in zip(axes.flat, panels):
        for key in keys:
            pts = [(r["iteration"], r[key]) for r in rows if key in r]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=key)
        ax.set_title(title)
        ax.set_xlabel("iteration")
        if len(keys) > 1:
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
