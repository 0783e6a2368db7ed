"""The ``agent-gym`` command: list, play, prepare, evaluate and serve the environments.

Examples::

    agent-gym list
    agent-gym play AgentR1/ALFWorld-v0 --seed 3
    agent-gym prepare AgentR1/WebShop-v0
    agent-gym evaluate --agent expert --episodes 20
    agent-gym serve webshop --port 3000
    agent-gym serve-env AgentR1/HotpotQA-v0 --port 8000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym

import agent_gym
from agent_gym.registration import env_class, resolve_env_id


def _parse_kv(pairs: Sequence[str]) -> dict[str, Any]:
    """Parse ``key=value`` pairs; values are JSON when they parse as JSON, else strings."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"agent-gym: expected key=value, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _int_in(low: int, high: int | None = None):
    """An argparse ``type`` for whole numbers in ``[low, high]`` (a refusal names the bound)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            bounds = f">= {low}" if high is None else f"from {low} to {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    return parse


def _seconds(text: str) -> float:
    """An argparse ``type`` for a finite, non-negative number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


#: What a wrong ``--env-arg``, ``--split`` or address raises when an env is built or served.
ENV_ERRORS = (gym.error.Error, ModuleNotFoundError, TypeError, ValueError, OSError)


@contextlib.contextmanager
def _one_line(command: str, env: str) -> Iterator[None]:
    """Exit with one line naming the command, the env and the error, not a traceback."""
    try:
        yield
    except ENV_ERRORS as exc:
        raise SystemExit(f"agent-gym {command} {env}: {type(exc).__name__}: {exc}") from None


def _make(command: str, env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """``gym.make(env_id, **kwargs)``, or exit with one line naming the env and the error."""
    with _one_line(command, env_id):
        return gym.make(env_id, **kwargs)


def _resolve_id(name: str) -> str:
    """Accept a full id or a short, case-insensitive name such as ``webshop``."""
    try:
        return resolve_env_id(name)
    except ValueError as exc:
        raise SystemExit(f"agent-gym: {exc}") from None


def cmd_list(args: argparse.Namespace) -> int:
    """Print the registered ids with their default data source and step limit."""
    rows = [("id", "default data", "max steps")]
    for env_id in agent_gym.ENV_IDS:
        spec = gym.spec(env_id)
        try:
            source = env_class(env_id).default_data_source
        except Exception as exc:  # noqa: BLE001 - a broken env must not hide the others
            source = f"(import failed: {exc})"
        rows.append((env_id, source, str(spec.max_episode_steps)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for i, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print(
        "\nData marked generated:* is built offline by agent-gym; it is not the official "
        "benchmark data (see docs/datasets.md)."
    )
    return 0


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Shows an option's default in its help, where it has one (both command lines use it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default == [] or default == argparse.SUPPRESS
        if not unset and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text


def _print_state(
    obs: str, info: dict[str, Any], reward: float | None = None, step: str = ""
) -> None:
    print()
    print(obs)
    if info.get("admissible_actions"):
        acts = info["admissible_actions"]
        print("\n[admissible] " + textwrap.shorten(" | ".join(acts), width=2000))
    if reward is not None:
        invalid = "" if info.get("is_action_valid", True) else "INVALID action (nothing changed)  "
        print(
            f"[{invalid}reward {reward:g}  score {info.get('score', 0.0):g}  "
            f"won {info.get('won')}  {step}]"
        )


def cmd_play(args: argparse.Namespace) -> int:
    """Let a person play an env in the terminal."""
    env_id = _resolve_id(args.env)
    env = _make("play", env_id, _parse_kv(args.env_arg))
    try:
        obs, info = env.reset(seed=args.seed)
        limit = env.spec.max_episode_steps if env.spec is not None else None
        print(f"{env_id}  task {info['task_id']}  data {info['data_source']}")
        print(f"Task: {info['task']}")
        print("Type an action; 'quit' (or Ctrl-D) leaves, 'restart' starts a new episode.")
        _print_state(obs, info)
        total, steps = 0.0, 0
        while True:
            try:
                action = input("> ")
            except EOFError:
                print()
                return 0
            if not action.strip():
                continue  # an empty line is not an action: no step is spent
            if action.strip().lower() in ("quit", "exit", ":q"):
                return 0
            if action.strip().lower() == "restart":
                obs, info = env.reset()
                total, steps = 0.0, 0
                print(f"\nTask: {info['task']}")
                _print_state(obs, info)
                continue
            obs, reward, terminated, truncated, info = env.step(action)
            total, steps = total + float(reward), steps + 1
            _print_state(obs, info, float(reward), f"step {steps}/{limit or '-'}")
            if terminated or truncated:
                why = "terminated" if terminated else "step limit reached"
                print(
                    f"\nEpisode over ({why}): return {total:g}, won {info['won']}, "
                    f"score {info['score']:g}. Type 'restart' or 'quit'."
                )
    finally:
        env.close()


def cmd_prepare(args: argparse.Namespace) -> int:
    """Build and cache an env's default data."""
    ids = agent_gym.ENV_IDS if args.env == "all" else (_resolve_id(args.env),)
    kwargs = _parse_kv(args.env_arg)
    for env_id in ids:
        with _one_line("prepare", env_id):
            print(env_class(env_id).prepare(progress=not args.quiet, **kwargs))
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Run the scripted expert or the random-admissible agent over the envs and print a table."""
    from agent_gym.agents import ExpertAgent, RandomAgent, run_episode
    from agent_gym.episode import summarize

    ids = agent_gym.ENV_IDS if args.env == "all" else (_resolve_id(args.env),)
    print(
        f"agent: {args.agent}, {args.episodes} episodes per env, "
        f"split: {args.split or 'each env default'}"
    )
    header = (
        f"{'env':24} {'data':28} {'success [95% CI]':>21} {'score':>7} {'valid':>7} {'length':>7}"
    )
    print(header + "\n" + "-" * len(header))
    for env_id in ids:
        env = _make("evaluate", env_id, {"split": args.split} if args.split else {})
        agent = ExpertAgent(env) if args.agent == "expert" else RandomAgent(args.seed)
        try:
            episodes = [run_episode(env, agent, seed=args.seed + i) for i in range(args.episodes)]
        finally:
            env.close()
        s = summarize(episodes)
        lo, hi = s["success_ci95"]
        print(
            f"{env_id.split('/')[-1]:24} {','.join(s['data_sources']):28} "
            f"{s['success_rate']:6.1%} [{lo:5.1%}-{hi:5.1%}] {s['score_mean']:7.3f} "
            f"{s['valid_action_ratio']:7.1%} {s['episode_length']:7.1f}"
        )
    print("\n[lo-hi] is the 95% Wilson interval of the success rate over episodes.")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve an env's pages over HTTP for a person to browse (WebShop)."""
    env_id = _resolve_id(args.env)
    if env_id != "AgentR1/WebShop-v0":
        raise SystemExit(f"agent-gym: only WebShop has a web site to serve, not {env_id}")
    from agent_gym.envs.webshop.server import serve

    with _one_line("serve", env_id):
        serve(port=args.port, host=args.host, **_parse_kv(args.env_arg))
    return 0


def cmd_serve_env(args: argparse.Namespace) -> int:
    """Serve an env over the OpenEnv protocol (WebSocket /ws and HTTP /sessions)."""
    # Short names (hotpotqa) name the registered envs; anything else goes to gym.make as is.
    short = {i.split("/")[-1].rsplit("-v", 1)[0].lower(): i for i in agent_gym.ENV_IDS}
    env_id = short.get(args.env.lower(), args.env)
    try:
        from agent_gym.openenv_server import serve
    except ImportError as exc:
        raise SystemExit(f"agent-gym: {exc}") from None
    idle = None if args.idle_timeout <= 0 else args.idle_timeout
    with _one_line("serve-env", args.env):
        serve(
            env_id,
            _parse_kv(args.env_arg),
            host=args.host,
            port=args.port,
            max_sessions=args.max_sessions,
            idle_timeout=idle,
            max_action_chars=args.max_action_chars,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``agent-gym``."""
    parser = argparse.ArgumentParser(
        prog="agent-gym",
        description="List, play, prepare, evaluate and serve agent-gym's environments.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=agent_gym.__version__)
    sub = parser.add_subparsers(dest="command", required=True)

    def env_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--env-arg",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="constructor keyword for the env, e.g. split=valid_unseen",
        )

    def sub_parser(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, formatter_class=HelpFormatter)

    p = sub_parser("list", "registered environments")
    p.set_defaults(func=cmd_list)
    p = sub_parser("play", "play an environment in the terminal")
    p.add_argument("env", help="env id or short name (alfworld, webshop, hotpotqa, papersearch)")
    p.add_argument(
        "--seed", type=_int_in(0), default=None, help="reset seed (default: a random task)"
    )
    env_args(p)
    p.set_defaults(func=cmd_play)
    p = sub_parser("prepare", "build and cache an env's default data")
    p.add_argument("env", help="env id, short name, or 'all'")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    env_args(p)
    p.set_defaults(func=cmd_prepare)
    p = sub_parser("evaluate", "scripted-expert or random-agent evaluation table")
    p.add_argument("--env", default="all", help="env id, short name, or 'all'")
    p.add_argument(
        "--agent",
        choices=("expert", "random"),
        default="expert",
        help="the env's scripted expert, or uniform over the admissible commands",
    )
    p.add_argument(
        "--episodes", type=_int_in(1), default=10, help="episodes per env (seeds seed, seed+1, ...)"
    )
    p.add_argument("--split", default=None, help="data split (default: each env's default)")
    p.add_argument(
        "--seed", type=_int_in(0), default=0, help="first reset seed, and the random agent's"
    )
    p.set_defaults(func=cmd_evaluate)
    p = sub_parser("serve", "serve WebShop's pages over HTTP on loopback")
    p.add_argument("env", help="webshop")
    p.add_argument("--port", type=_int_in(0, 65535), default=3000, help="port to listen on")
    p.add_argument("--host", default="127.0.0.1", help="bind address")
    env_args(p)
    p.set_defaults(func=cmd_serve)
    p = sub_parser(
        "serve-env",
        "serve an env over the OpenEnv protocol (for TRL, other trainers, any language)",
    )
    p.add_argument("env", help="registered id or short name, or any gym.make id (module:Id too)")
    p.add_argument(
        "--port", type=_int_in(0, 65535), default=8000, help="0 picks a free port (printed)"
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address (no authentication!)")
    p.add_argument("--max-sessions", type=_int_in(1), default=16, help="most sessions open at once")
    p.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=600.0,
        help="close sessions idle this long (s; 0: never)",
    )
    p.add_argument("--max-action-chars", type=_int_in(1), default=1_000_000, help="longest action")
    env_args(p)
    p.set_defaults(func=cmd_serve_env)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``agent-gym``."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print()
        return 130


if __name__ == "__main__":
    sys.exit(main())
