"""``algos compare``: several algorithms from one starting checkpoint, over several seeds.

Every run of a comparison shares everything but the algorithm and the seed: the recipe and its
overrides, the starting weights (``--init RUN_DIR``, or one behaviour-cloning stage run once
and shared when the recipe says ``model.init = "sft"``), the task draws (``env.seed``: every
run trains on the same tasks in the same order), the iteration budget and the held-out tasks.
``run.seed`` (sampling and shuffling) is the only thing the seeds change. The start is
evaluated once: greedy decoding of the same weights on the same held-out tasks gives the same
rows, so the first run's "before" and reference-agent rows are written into every later run.

The output folder holds one run directory per (algorithm, seed), ``comparison.json``,
``comparison.md`` (the final held-out success of every seed, its mean and 95% t-interval over
seeds per algorithm, and per-iteration success) and ``comparison.png`` (success vs iteration,
mean over seeds with the interval, for each algorithm). Runs that finished are not rerun, so a
stopped comparison continues where it stopped.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from agent_gym.paths import atomic_write_text
from algos.config import load_config
from algos.metrics import read_metrics
from algos.runs import check_folder, read_json, write_json

#: Two-sided 95% Student t quantiles by degrees of freedom (1..10); 1.96 beyond.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074,
        23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045,
        30: 2.042}  # fmt: skip


def t95(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (two-sided 95%).

    A table to 30, then the Cornish-Fisher expansion around the normal quantile (within 1e-4
    of the exact value there; it was 1.96 past 10, an interval up to 11% too narrow).

    >>> t95(2), t95(11), round(t95(60), 3)
    (4.303, 2.201, 2.0)
    """
    if df in _T95:
        return _T95[df]
    z = 1.959964
    terms = ((z**3 + z) / 4, (5 * z**5 + 16 * z**3 + 3 * z) / 96,
             (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384)  # fmt: skip
    return z + sum(g / df ** (k + 1) for k, g in enumerate(terms))


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval over seeds (the interval is the mean itself for one value).

    >>> [round(x, 3) for x in t_interval([0.5, 0.6, 0.7])]
    [0.6, 0.352, 0.848]
    """
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t95(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def compare(
    recipe: str,
    algos: list[str],
    seeds: list[int],
    *,
    out_dir: Path,
    overrides: list[str] = (),
    init: str | None = None,
    log: Any = print,
) -> Path:
    """Train every (algorithm, seed) and write the comparison; return ``out_dir``.

    Raises:
        ValueError: An algorithm or seed is given twice, an algorithm is unknown, the
            recipe and overrides do not load, or the env, the expert or the backend cannot
            run here; checked for every run before any trains and before ``out_dir`` is
            created.
        FileNotFoundError: The recipe, or the starting run's checkpoint, does not exist.
        NotADirectoryError: ``out_dir`` is, or is inside, a file.
    """
    from algos.algorithms import ALGORITHMS
    from algos.checkpoint import init_chain
    from algos.envs import check_envs
    from algos.sft import finished, resume_sft, sft
    from algos.trainer import check_machine, resume, train

    for flag, values in (("--algos", algos), ("--seeds", seeds)):
        twice = sorted({str(v) for v in values if values.count(v) > 1})
        if twice:
            raise ValueError(
                f"{flag} {' '.join(map(str, values))}: {', '.join(twice)} given twice "
                "(each would be one more copy of the same run)"
            )
    unknown = [a for a in algos if a not in ALGORITHMS]
    if unknown:
        raise ValueError(
            f"--algos {' '.join(algos)}: unknown algorithm {unknown[0]!r}; valid: "
            f"{', '.join(ALGORITHMS)}"
        )
    out_dir = Path(out_dir)
    check_folder(out_dir, "--out")
    base = load_config(recipe, list(overrides))
    for algo in algos:  # every run's config loads before the first one trains
        for seed in seeds:
            cfg = load_config(recipe, _run_sets(overrides, algo, seed, out_dir, init))
            _check_same_settings(out_dir / f"{algo}-seed{seed}", cfg)
    start = base.model.init if init is None else init
    if start not in ("", "sft"):  # a wrong starting run is one line, not an empty --out
        init_chain(Path(start), base.model.name)
    check_machine(base)  # so are an env, an expert or a backend that cannot run here
    check_envs(base, experts=base.sft.expert if start == "sft" else None)
    out_dir.mkdir(parents=True, exist_ok=True)
    if init is None and base.model.init == "sft":
        stage = out_dir / "sft"
        if not finished(stage):
            log(f"compare: behaviour cloning once, shared by every run -> {stage}")
            again = "the same `algos compare` command (it goes on where it stopped)"
            if (stage / "config.json").is_file():  # an earlier comparison stopped in it
                resume_sft(stage, log=log, continue_with=again)
            else:
                sft(base, run_dir=stage, log=log, continue_with=again)
        init = str(stage)
    runs: dict[str, list[Path]] = {}
    start_eval: dict[str, Any] = {}  # the start's held-out rows, the same for every run
    for algo in algos:
        for seed in seeds:
            name = f"{algo}-seed{seed}"
            run_dir = out_dir / name
            cfg = load_config(recipe, _run_sets(overrides, algo, seed, out_dir, init))
            log(f"compare: {name} ({cfg.run.iterations} iterations)")
            if (run_dir / "config.json").is_file():  # started by an earlier comparison
                resume(run_dir, log=log)
            else:
                if start_eval and not (run_dir / "eval.json").is_file():
                    # Greedy decoding of the same weights on the same held-out tasks: the
                    # first run's "before" (and reference agents) hold for every run.
                    run_dir.mkdir(parents=True, exist_ok=True)
                    write_json(run_dir / "eval.json", start_eval)
                train(cfg, log=log)
            if not start_eval:
                evals = read_json(run_dir / "eval.json")
                start_eval = {k: v for k, v in evals.items() if k not in ("after",)}
            runs.setdefault(algo, []).append(run_dir)
    result = summarize_runs(runs)
    atomic_write_text(out_dir / "comparison.json", json.dumps(result, indent=2))
    atomic_write_text(out_dir / "comparison.md", markdown(result))
    plot(result, out_dir / "comparison.png")
    log(markdown(result))
    return out_dir


def _run_sets(
    overrides: list[str], algo: str, seed: int, out_dir: Path, init: str | None
) -> list[str]:
    """The ``--set`` overrides of the comparison's run of ``algo`` with ``seed``.

    Paths are written as TOML basic strings (JSON's escapes), so a quote or backslash in
    ``--out`` or ``--init`` reaches the config as it was typed.
    """
    return [*overrides, f"algo={algo}", f"run.seed={seed}",
            f"run.out_dir={json.dumps(str(out_dir))}", f"run.name='{algo}-seed{seed}'",
            f"model.init={json.dumps(init or '')}"]  # fmt: skip


def _check_same_settings(run_dir: Path, cfg: Any) -> None:
    """Refuse to continue a run of an earlier comparison that ``cfg`` would not reproduce.

    A run that exists is resumed with its own ``config.json``: a comparison in the same
    ``--out`` with another recipe or other overrides would mix two settings in one table.
    ``model.init`` is left out (a run records the checkpoint it started from).

    Raises:
        ValueError: The run's config differs from ``cfg``; the message names the keys.
    """
    from algos.runs import run_config

    if not (run_dir / "config.json").is_file():
        return
    old, new = run_config(run_dir).to_dict(), cfg.to_dict()
    keys = [
        f"{sec}.{key}"
        for sec, values in new.items()
        if isinstance(values, dict)
        for key, value in values.items()
        if (sec, key) != ("model", "init") and old[sec][key] != value
    ]
    if keys:
        raise ValueError(
            f"--out {run_dir.parent}: {run_dir.name} was trained with other settings "
            f"({', '.join(f'{k} {_get(old, k)!r} here, {_get(new, k)!r} now' for k in keys[:3])}"
            f"{', ...' if len(keys) > 3 else ''}); compare in another --out folder"
        )


def _get(data: dict[str, Any], key: str) -> Any:
    sec, name = key.split(".", 1)
    return data[sec][name]


def _run_figures(run_dir: Path) -> dict[str, Any]:
    evals = read_json(run_dir / "eval.json")
    rows = read_metrics(run_dir)
    curve = {r["iteration"]: r["eval/success_rate"] for r in rows if "eval/success_rate" in r}
    if "before" in evals:
        curve[0] = evals["before"]["success_rate"]
    last = max([r["iteration"] for r in rows] + [0])
    if "after" in evals:
        curve[last] = evals["after"]["success_rate"]
    return {
        "run": str(run_dir),
        "before": evals.get("before", {}).get("success_rate"),
        "after": evals.get("after", {}).get("success_rate"),
        "episodes": evals.get("after", {}).get("episodes"),
        "heldout_curve": dict(sorted(curve.items())),
        "train_curve": {
            r["iteration"]: r["rollout/success_rate"] for r in rows if "rollout/success_rate" in r
        },  # fmt: skip
        "random": evals.get("random", {}).get("success_rate"),
    }


def rate_interval(rates: list[float]) -> tuple[float, float, float]:
    """:func:`t_interval` of success rates, clipped to [0, 1] (three seeds give wide intervals).

    >>> rate_interval([0.0, 1.0, 1.0])[1:]
    (0.0, 1.0)
    """
    mean, lo, hi = t_interval(rates)
    return mean, max(lo, 0.0), min(hi, 1.0)


def summarize_runs(runs: dict[str, list[Path]]) -> dict[str, Any]:
    """Per algorithm: every seed's figures, the final success's mean and 95% t-interval."""
    out: dict[str, Any] = {}
    for algo, dirs in runs.items():
        seeds = [_run_figures(d) for d in dirs]
        finals = [s["after"] for s in seeds if s["after"] is not None]
        iters = sorted({i for s in seeds for i in s["heldout_curve"]})
        curve = {}
        for i in iters:
            vals = [s["heldout_curve"][i] for s in seeds if i in s["heldout_curve"]]
            curve[i] = rate_interval(vals) + (len(vals),)
        out[algo] = {
            "seeds": seeds,
            "final": rate_interval(finals) if finals else None,
            "curve": curve,
        }
    return out


def markdown(result: dict[str, Any]) -> str:
    """The comparison as Markdown tables."""
    lines = ["| algorithm | held-out success after (mean, 95% t-interval over seeds) | every seed | n per seed |",
             "|---|---|---|---|"]  # fmt: skip
    for algo, r in result.items():
        if r["final"] is None:
            continue
        mean, lo, hi = r["final"]
        each = ", ".join(f"{s['after']:.1%}" for s in r["seeds"] if s["after"] is not None)
        n = r["seeds"][0]["episodes"]
        lines.append(f"| {algo} | {mean:.1%} [{lo:.1%}, {hi:.1%}] | {each} | {n} |")
    iters = sorted({int(i) for r in result.values() for i in r["curve"]})
    lines += ["", "| iteration | " + " | ".join(result) + " |", "|---|" + "---|" * len(result)]
    for i in iters:
        cells = []
        for r in result.values():
            c = r["curve"].get(i) or r["curve"].get(str(i))
            cells.append(f"{c[0]:.1%} [{c[1]:.1%}, {c[2]:.1%}]" if c else "-")
        lines.append(f"| {i} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    """Held-out success vs iteration: the mean over seeds and its 95% t-interval per algorithm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6, 4))
    for algo, r in result.items():
        pts = sorted((int(i), c) for i, c in r["curve"].items())
        if not pts:
            continue
        xs = [p[0] for p in pts]
        ax.plot(
            xs,
            [p[1][0] for p in pts],
            marker="o",
            label=f"{algo} (mean of {len(r['seeds'])} seeds)",
        )
        ax.fill_between(xs, [p[1][1] for p in pts], [p[1][2] for p in pts], alpha=0.2)
    randoms = [s["random"] for r in result.values() for s in r["seeds"] if s["random"] is not None]
    if randoms:
        ax.axhline(sum(randoms) / len(randoms), ls=":", color="grey", label="random agent")
    ax.set_xlabel("iteration (0 = the policy RL started from)")
    ax.set_ylabel("held-out success rate")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
