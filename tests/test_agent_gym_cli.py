"""The ``agent-gym`` command, run as a user would (subprocess, real envs)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import agent_gym


def _cli(*args: str, stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "agent_gym.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_list_shows_every_id_with_its_data_source() -> None:
    out = _cli("list")
    assert out.returncode == 0, out.stderr
    for env_id in agent_gym.ENV_IDS:
        assert env_id in out.stdout
    assert "import failed" not in out.stdout
    assert "generated:" in out.stdout


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_play_quit_and_eof(env_id: str) -> None:
    out = _cli("play", env_id, "--seed", "1", stdin="not a real command\nquit\n")
    assert out.returncode == 0, out.stderr
    assert "Task:" in out.stdout and "reward 0" in out.stdout
    assert "INVALID action" in out.stdout  # "not a real command" is marked as such
    eof = _cli("play", env_id, "--seed", "1", stdin="")
    assert eof.returncode == 0, eof.stderr
    assert "Traceback" not in eof.stderr


def test_play_accepts_short_names_and_rejects_unknown() -> None:
    assert _cli("play", "webshop", stdin="quit\n").returncode == 0
    bad = _cli("play", "nosuchenv")
    assert bad.returncode != 0 and "unknown environment 'nosuchenv'" in bad.stderr
    assert "AgentR1/WebShop-v0" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# ALFWorld's full default set is 3,827 games (minutes to write); a small build is enough here.
PREPARE_ARGS = {
    "AgentR1/ALFWorld-v0": ["--env-arg", "split=valid_seen", "--env-arg", "num_games=4"]
}


@pytest.mark.parametrize("env_id", agent_gym.ENV_IDS)
def test_prepare_is_idempotent(env_id: str) -> None:
    args = ["prepare", env_id, "--quiet", *PREPARE_ARGS.get(env_id, [])]
    first = _cli(*args)
    assert first.returncode == 0, first.stderr
    second = _cli(*args)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip(), "prepare should say what it built"


def test_evaluate_expert_prints_a_table() -> None:
    out = _cli("evaluate", "--agent", "expert", "--episodes", "2")
    assert out.returncode == 0, out.stderr
    for env_id in agent_gym.ENV_IDS:
        assert env_id.split("/")[-1] in out.stdout
    assert "95%" in out.stdout


def test_play_skips_empty_lines_marks_invalid_actions_and_counts_steps() -> None:
    out = _cli("play", "alfworld", "--seed", "0", stdin="\n\nlook\ngo to nowhere\nquit\n")
    assert out.returncode == 0, out.stderr
    assert "step 1/50]" in out.stdout and "step 2/50]" in out.stdout  # the empty lines: no step
    assert "step 3/50]" not in out.stdout
    assert out.stdout.count("INVALID action") == 1  # "go to nowhere"; "look" is valid


def _options(parser):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _options(sub)
        elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield parser.prog, action


@pytest.mark.parametrize("module", ["agent_gym.cli", "algos.cli"])
def test_every_option_has_help_and_shows_its_default(module) -> None:
    import importlib

    parser = importlib.import_module(module).build_parser()
    for prog, action in _options(parser):
        assert action.help, f"{prog} {action.dest} has no help text"
    if module == "agent_gym.cli":
        out = _cli("evaluate", "--help")
        assert "(default: expert)" in out.stdout and "(default: 0)" in out.stdout
    top = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120
    )
    assert top.returncode == 0 and "``" not in top.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # Found by probing: each was a traceback, or (the port) served on another port:
        # bind() takes 99999 modulo 65536.
        (["play", "alfworld", "--seed", "-1"], "argument --seed: must be >= 0, got -1"),
        (["evaluate", "--env", "hotpotqa", "--episodes", "0"], "must be >= 1, got 0"),
        (["serve-env", "alfworld", "--port", "99999"], "must be from 0 to 65535, got 99999"),
        (["serve", "webshop", "--port", "70000"], "must be from 0 to 65535, got 70000"),
        (["serve-env", "alfworld", "--idle-timeout", "nan"], "must be a number of seconds"),
        (["play", "alfworld", "--seed", "x"], "argument --seed: 'x' is not a whole number"),
        (
            ["play", "alfworld", "--env-arg", "split=bogus"],
            "agent-gym play AgentR1/ALFWorld-v0: ValueError: unknown split 'bogus'",
        ),
        (
            ["evaluate", "--env", "hotpotqa", "--split", "bogus"],
            "agent-gym evaluate AgentR1/HotpotQA-v0: ValueError: split='bogus'",
        ),
        (
            ["prepare", "hotpotqa", "--env-arg", "bogus=1"],
            "agent-gym prepare AgentR1/HotpotQA-v0: TypeError: ",
        ),
    ],
)
def test_bad_arguments_are_one_line_refusals(args: list[str], message: str) -> None:
    out = _cli(*args, timeout=120)
    assert out.returncode != 0
    assert message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "serving" not in out.stderr


@pytest.mark.parametrize("command", [["serve-env", "hotpotqa"], ["serve", "webshop"]])
def test_an_address_that_cannot_be_listened_on_is_named(command: list[str]) -> None:
    """A taken port or a host that does not resolve was `OSError: [Errno 98] Address already in
    use` / `gaierror: Name or service not known`, naming neither."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = _cli(*command, "--port", str(port), timeout=120)
    assert out.returncode != 0
    assert f"OSError: cannot listen on 127.0.0.1:{port} (Address already in use)" in out.stderr
    out = _cli(*command, "--host", "no-such-host.invalid", "--port", "0", timeout=120)
    assert out.returncode != 0 and "cannot listen on no-such-host.invalid:0 (" in out.stderr
    assert "Traceback" not in out.stderr
