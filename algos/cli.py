"""The ``algos`` command: ``train``, ``eval``, ``list`` and ``plot``.

algos train recipes/alfworld/gigpo.toml [--set key=value ...]
algos train --resume runs/ALFWorld-v0-gigpo-20250101-120000
algos eval --env AgentR1/ALFWorld-v0 --policy hf:smollm2-135m --episodes 20 --split valid_seen
algos list
algos plot RUN_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    from algos.config import load_config
    from algos.trainer import train

    if args.resume:
        if args.recipe or args.set:
            print("--resume takes the run's own config; drop the recipe and --set", file=sys.stderr)
            return 2
        run_dir = train(None, run_dir=Path(args.resume), resume=True)  # type: ignore[arg-type]
    else:
        if not args.recipe:
            print(
                "algos train: give a recipe (recipes/<env>/<algo>.toml) or --resume RUN_DIR",
                file=sys.stderr,
            )
            return 2
        cfg = load_config(args.recipe, args.set or [])
        run_dir = train(cfg)
    print(f"run directory: {run_dir}")
    plots = run_dir / "plots" / "curves.png"
    if plots.is_file():
        print(f"learning curves: {plots}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from algos.config import load_config
    from algos.eval import evaluate, expert_evaluate, policy_backend, with_env

    cfg = with_env(load_config(args.recipe, args.set or []), args.env, args.split)
    if args.policy == "expert":
        result = expert_evaluate(cfg, args.episodes)
    else:
        backend = policy_backend(args.policy, cfg, model_name=args.model)
        result = evaluate(cfg, backend, args.episodes)
    print(f"{cfg.env.id} [{args.policy}] {result['line']}")
    for name, block in result.get("per_task_type", {}).items():
        lo, hi = block["success_ci95"]
        print(
            f"  {name:36s} success {block['success_rate']:.1%} ({lo:.1%}-{hi:.1%}) "
            f"n={block['episodes']}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def _list(args: argparse.Namespace) -> int:
    from agent_gym.registration import ENV_IDS
    from algos.algorithms import ALGORITHMS
    from algos.models import MODEL_NAMES

    print("algorithms:")
    for a in ALGORITHMS.values():
        print(
            f"  {a.name:14s} {a.estimator} + {a.loss}{' + critic' if a.critic else ''}: {a.summary}"
        )
    from algos.registry import ESTIMATORS, POLICY_LOSSES

    print(f"estimators (algo.estimator): {', '.join(ESTIMATORS)}")
    print(f"policy losses (algo.policy_loss): {', '.join(POLICY_LOSSES)}")
    print("envs:")
    for env_id in ENV_IDS:
        print(f"  {env_id}")
    print("models:")
    for name, text in MODEL_NAMES.items():
        print(f"  {name:14s} {text}")
    print("  <path or id>   any Hugging Face causal LM with a chat template")
    return 0


def _plot(args: argparse.Namespace) -> int:
    from algos.plot import plot_run

    for path in plot_run(args.run_dir):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    p = argparse.ArgumentParser(prog="algos", description="Train and evaluate LLM agents.")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train from a TOML recipe, or resume a run")
    t.add_argument("recipe", nargs="?", help="recipe file, e.g. recipes/alfworld/gigpo.toml")
    t.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set optim.lr=1e-5 (repeatable)",
    )
    t.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its last checkpoint")
    t.set_defaults(func=_train)
    e = sub.add_parser("eval", help="success rate and score of a policy, with 95%% intervals")
    e.add_argument("--env", help="env id (default: the recipe's)")
    e.add_argument("--policy", required=True, help="hf:MODEL, vllm:MODEL, openai:URL or expert")
    e.add_argument("--model", help="served model name for openai:URL")
    e.add_argument("--episodes", type=int, default=20)
    e.add_argument("--split", help="data split passed to the env (e.g. valid_seen)")
    e.add_argument("--recipe", help="recipe for prompt/format settings (default: built-ins)")
    e.add_argument("--set", action="append", metavar="KEY=VALUE", help="config override")
    e.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    e.set_defaults(func=_eval)
    sub.add_parser("list", help="algorithms, envs and models").set_defaults(func=_list)
    pl = sub.add_parser("plot", help="write learning-curve PNGs of a run")
    pl.add_argument("run_dir")
    pl.set_defaults(func=_plot)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``algos`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:
        print(f"algos {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
