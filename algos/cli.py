"""The ``algos`` command: ``train``, ``sft``, ``compare``, ``eval``, ``list`` and ``plot``.

algos train recipes/alfworld/gigpo.toml [--set key=value ...]
algos train --resume runs/ALFWorld-v0-gigpo-20250101-120000
algos sft recipes/alfworld/gigpo.toml [--set sft.demos=500 ...]
algos eval --env alfworld --policy random --policy hf:smollm2-135m --episodes 16
algos eval --recipe recipes/alfworld/long/gigpo.toml --policy run:RUN_DIR --trajectories eps.jsonl
algos compare recipes/alfworld/gigpo.toml --algos gigpo grpo --seeds 0 1 2 --out runs/cmp
algos list
algos plot RUN_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    from algos.config import load_config
    from algos.trainer import resume, train

    if args.resume:
        if args.recipe or args.set:
            print(
                "algos train: --resume takes the run's own config; drop the recipe and --set "
                "(use --iterations N to extend the run)",
                file=sys.stderr,
            )
            return 2
        run_dir = resume(Path(args.resume), iterations=args.iterations)
    else:
        if not args.recipe:
            print(
                "algos train: give a recipe (recipes/<env>/<algo>.toml) or --resume RUN_DIR",
                file=sys.stderr,
            )
            return 2
        overrides = list(args.set or [])
        if args.iterations is not None:
            overrides.append(f"run.iterations={args.iterations}")
        run_dir = train(load_config(args.recipe, overrides))
    print(f"run directory: {run_dir}")
    plots = run_dir / "plots" / "curves.png"
    if plots.is_file():
        print(f"learning curves: {plots}")
    return 0


def _sft(args: argparse.Namespace) -> int:
    from algos.config import load_config
    from algos.sft import resume_sft, sft

    if args.resume:
        run_dir = resume_sft(Path(args.resume))
    else:
        if not args.recipe:
            print("algos sft: give a recipe or --resume RUN_DIR", file=sys.stderr)
            return 2
        run_dir = sft(load_config(args.recipe, args.set or []))
    print(f"run directory: {run_dir}")
    print(f"learning curves: {run_dir / 'plots' / 'curves.png'}")
    print(f"start RL from it with: --set model.init={run_dir}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from algos.compare import compare

    out = compare(
        args.recipe,
        args.algos,
        args.seeds,
        out_dir=Path(args.out),
        overrides=args.set or [],
        init=args.init,
    )
    print(f"comparison: {out / 'comparison.md'} and {out / 'comparison.png'}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from agent_gym.episode import summarize
    from agent_gym.paths import atomic_write_text
    from algos.config import load_config
    from algos.envs import check_envs
    from algos.eval import (
        HeldOutEnvs,
        check_policy,
        is_reference_agent,
        open_policy,
        play,
        play_agent,
        table,
        with_env,
    )
    from algos.metrics import append_jsonl

    cfg = with_env(load_config(args.recipe, args.set or []), args.env, args.split)
    policies = [p for spec in args.policy for p in spec.split(",") if p]
    if not policies:
        raise ValueError(f"--policy {' '.join(args.policy)!r} names no policy")
    if args.episodes < 1:
        raise ValueError(f"--episodes {args.episodes}: play at least 1 held-out task")
    for flag, path in (("--json", args.json), ("--trajectories", args.trajectories)):
        if path:  # say so now, not after every episode
            _check_output(flag, Path(path))
    for spec in policies:  # the last policy's typo before the first one plays
        check_policy(spec, cfg)
    check_envs(cfg, training=False)  # an unknown --split is one line, not a traceback
    if args.trajectories:
        Path(args.trajectories).write_text("")  # each policy's episodes are appended below
    rows, results = [], {}
    with HeldOutEnvs(cfg) as envs:  # every model plays in the same envs
        for spec in policies:
            if is_reference_agent(spec):
                episodes = play_agent(cfg, spec, args.episodes, progress=True)
            else:
                backend = open_policy(spec, cfg, served_model=args.model)
                keep = bool(args.trajectories)
                episodes = play(cfg, backend, args.episodes, progress=True, record_text=keep,
                                envs=envs)  # fmt: skip
            result = summarize(episodes)
            print(f"{cfg.env.id} [{spec}] {result['line']}", flush=True)
            rows.append((spec, result))
            results[spec] = result
            if args.trajectories:  # each policy's episodes as soon as they are played
                append_jsonl(args.trajectories, [{"policy": spec, **e.to_json()} for e in episodes])
    n = max(result["episodes"] for _, result in rows)  # every row plays the same list
    print(f"\n{cfg.env.id}, {n} distinct held-out tasks (seeds from {cfg.env.eval_seed}):")
    print(table(rows))
    for spec, result in rows:
        for name, block in result.get("per_task_type", {}).items():
            lo, hi = block["success_ci95"]
            print(
                f"  {spec}: {name:36s} success {block['success_rate']:.1%} ({lo:.1%}-{hi:.1%}) "
                f"n={block['episodes']}"
            )
    if args.json:
        atomic_write_text(args.json, json.dumps(results, indent=2))
    return 0


def _check_output(flag: str, path: Path) -> None:
    """Refuse an output file that could not be written, before anything is played.

    Raises:
        ValueError: ``path``'s folder does not exist or cannot be written in, or ``path``
            is a folder; the message names ``flag``.
    """
    if not path.parent.is_dir():
        raise ValueError(f"{flag} {path}: its folder {path.parent} does not exist")
    if path.is_dir():
        raise ValueError(f"{flag} {path}: is a folder; give a file name in it")
    try:  # the one sure test of a folder (permissions, a read-only mount, /proc)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot write in {path.parent} ({exc.strerror})") from None


def _list(args: argparse.Namespace) -> int:
    from agent_gym.registration import ENV_IDS
    from algos.algorithms import ALGORITHMS
    from algos.models import MODEL_NAMES
    from algos.registry import ESTIMATORS, POLICY_LOSSES

    print("algorithms:")
    for a in ALGORITHMS.values():
        print(
            f"  {a.name:14s} {a.estimator} + {a.loss}{' + critic' if a.critic else ''}: {a.summary}"
        )
    print(f"estimators (algo.estimator): {', '.join(ESTIMATORS)}")
    print(f"policy losses (algo.policy_loss): {', '.join(POLICY_LOSSES)}")
    print("envs (short names work too: alfworld, webshop, hotpotqa, papersearch):")
    for env_id in ENV_IDS:
        print(f"  {env_id}")
    print("models:")
    for name, text in MODEL_NAMES.items():
        print(f"  {name:14s} {text}")
    print("  <folder>       a local Hugging Face model folder (nothing is downloaded)")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from algos.metrics import read_metrics
    from algos.plot import plot_run

    for path in plot_run(args.run_dir):
        print(path)
    if not read_metrics(args.run_dir):  # a run still in its first iteration, say
        print(f"note: {args.run_dir} has no finished iteration yet; the curves are empty")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    from agent_gym.cli import HelpFormatter as _Help

    p = argparse.ArgumentParser(
        prog="algos", description="Train and evaluate LLM agents.", formatter_class=_Help
    )
    sub = p.add_subparsers(dest="command", required=True)
    sets = {"action": "append", "metavar": "KEY=VALUE", "default": None}
    t = sub.add_parser(
        "train", help="train from a TOML recipe, or resume a run", formatter_class=_Help
    )
    t.add_argument("recipe", nargs="?", help="recipe file, e.g. recipes/alfworld/gigpo.toml")
    t.add_argument("--set", help="override a config field, e.g. optim.lr=1e-5 (repeatable)", **sets)
    t.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    t.add_argument("--iterations", type=int, help="total iterations (also extends a resumed run)")
    t.set_defaults(func=_train)
    s = sub.add_parser(
        "sft", help="behaviour cloning on scripted-expert demonstrations", formatter_class=_Help
    )
    s.add_argument("recipe", nargs="?", help="recipe whose env, prompts and model to use")
    s.add_argument("--set", help="override a config field, e.g. sft.demos=500 (repeatable)", **sets)
    s.add_argument("--resume", metavar="RUN_DIR", help="continue an SFT run from its checkpoint")
    s.set_defaults(func=_sft)
    c = sub.add_parser(
        "compare",
        help="several algorithms from one starting checkpoint over several seeds",
        formatter_class=_Help,
    )
    c.add_argument("recipe", help="recipe shared by every run, e.g. recipes/alfworld/gigpo.toml")
    c.add_argument("--algos", nargs="+", default=["gigpo", "grpo"], help="algorithms to compare")
    c.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="run.seed of each run")
    c.add_argument("--out", required=True, help="folder for the runs, the table and the plot")
    c.add_argument("--init", help="starting run directory (default: the recipe's model.init)")
    c.add_argument("--set", help="config override for every run (repeatable)", **sets)
    c.set_defaults(func=_compare)
    e = sub.add_parser(
        "eval",
        help="success, score and valid actions of policies on the same held-out tasks",
        formatter_class=_Help,
    )
    e.add_argument(
        "--env", help="env id or short name (default: the recipe's env, else AgentR1/ALFWorld-v0)"
    )
    e.add_argument(
        "--policy",
        action="append",
        required=True,
        help="random, expert, expert:METHOD, hf:MODEL, run:RUN_DIR[/checkpoints/iter_N], "
        "vllm:MODEL or openai:URL; repeat (or comma-separate) for a table",
    )
    e.add_argument("--model", help="served model name for openai:URL (default: model.name)")
    e.add_argument("--episodes", type=int, default=20, help="held-out tasks to play")
    e.add_argument("--split", help="data split of the tasks (default: env.eval_kwargs' split)")
    e.add_argument("--recipe", help="recipe for prompt/format settings (default: the built-ins)")
    e.add_argument("--set", help="config override (repeatable)", **sets)
    e.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    e.add_argument(
        "--trajectories",
        metavar="PATH",
        help="also write every episode as a JSON line: policy, task id, seed, outcome and "
        "each step's observation and action",
    )
    e.set_defaults(func=_eval)
    sub.add_parser("list", help="algorithms, envs and models", formatter_class=_Help).set_defaults(
        func=_list
    )
    pl = sub.add_parser("plot", help="write learning-curve PNGs of a run", formatter_class=_Help)
    pl.add_argument("run_dir", help="a run directory")
    pl.set_defaults(func=_plot)
    return p


#: What bad input (or a server that does not answer) raises: one line naming it, exit status 2.
REFUSALS = (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, ConnectionError)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``algos`` console script."""
    from algos.checkpoint import CheckpointError
    from algos.runs import DISK_ERRNOS, RunWriteError, disk_trouble

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (*REFUSALS, CheckpointError, RunWriteError) as exc:
        print(f"algos {args.command}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write outside a run (eval --json, compare's tables)
        if exc.errno not in DISK_ERRNOS:
            raise
        print(f"algos {args.command}: {disk_trouble(exc)[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"algos {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
