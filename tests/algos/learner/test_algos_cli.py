"""The ``algos`` command end to end (a subprocess, as a user runs it) and the config errors."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HERE, KEYPAD

from algos.config import load_config

ROOT = Path(__file__).resolve().parents[3]


def _algos(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "algos.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _keypad_args(*overrides: str) -> list[str]:
    """``train`` on the Keypad test recipe with the learner tests' settings and ``overrides``."""
    sets = [s.replace("AlgosTest", "keypad_env:AlgosTest") for s in KEYPAD] + list(overrides)
    return [
        "train",
        str(ROOT / "recipes/test/keypad.toml"),
        *(a for s in sets for a in ("--set", s)),
    ]


def _train_keypad(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    """``algos train`` on the Keypad test recipe with the learner tests' settings and ``overrides``."""
    return _algos(*_keypad_args(*overrides), cwd=tmp_path)


def test_unknown_key_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown key optim.lrr; valid keys in \[optim\]: lr, "):
        load_config(None, ["optim.lrr=1"])
    with pytest.raises(ValueError, match="must be float"):
        load_config(None, ["optim.lr='fast'"])


def test_every_recipe_loads():
    """Every recipe and every shared file it extends loads; a recipe names its algorithm."""
    files = sorted((ROOT / "recipes").rglob("*.toml"))
    recipes = [f for f in files if not f.name.startswith("_") and f.parent.name != "recipes"]
    # 4 envs x 7 algorithms, ALFWorld's longer GiGPO run (recipes/alfworld/long/) and the test one
    assert len(recipes) == 4 * 7 + 2
    for path in files:
        cfg = load_config(path)
        if path in recipes and path.parent.name != "test":
            assert cfg.algo.name == path.stem, path
            assert cfg.profile == "cpu" and cfg.model.name == "smollm2-135m", path


def test_train_plot_and_list(tmp_path):
    out = _train_keypad(tmp_path, "run.iterations=2", f"run.out_dir='{tmp_path}'", "run.name='cli'")
    assert out.returncode == 0, out.stderr[-2000:]
    run = tmp_path / "cli"
    for name in (
        "config.json",
        "metrics.jsonl",
        "episodes.jsonl",
        "plots/curves.png",
        "plots/success.png",
        "checkpoints/latest",
    ):
        assert (run / name).exists(), name
    assert "success" in out.stdout
    assert _algos("plot", str(run), cwd=tmp_path).returncode == 0
    (tmp_path / "early").mkdir()  # a run still in its first iteration
    (tmp_path / "early" / "metrics.jsonl").write_text("")
    early = _algos("plot", str(tmp_path / "early"), cwd=tmp_path)
    assert early.returncode == 0 and "has no finished iteration yet" in early.stdout
    listing = _algos("list", cwd=tmp_path)
    assert "gigpo" in listing.stdout and "AgentR1/ALFWorld-v0" in listing.stdout
    bad = _algos(
        "train", str(ROOT / "recipes/test/keypad.toml"), "--set", "algo.nme=x", cwd=tmp_path
    )
    assert bad.returncode == 2 and "valid keys in [algo]" in bad.stderr
    again = _algos("train", str(run), cwd=tmp_path)  # a run directory where a recipe goes
    assert again.returncode == 2
    assert f"continue it with `algos train --resume {run}`" in again.stderr


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("env.id='AgentR1/Nope-v0'", "unknown environment 'AgentR1/Nope-v0'"),
        ("env.kwargs={nope=1}", "does not take them"),
        (
            "model.name='nonexistent-model-xyz'",
            "is not a built-in name (smollm2-135m, tiny-random)",
        ),
        ("model.name='/no/such/folder'", "nothing is downloaded at run time"),
        ("model.init='/no/such/run'", "model.init='/no/such/run': no complete checkpoint there"),
        # 400,000 envs were made one by one after the model loaded, for hours or until memory ran out
        ("env.num_tasks=100000", "100000 x 4: 400000 envs in one process, more than the 4096"),
    ],
)
def test_bad_env_or_model_is_one_line_and_leaves_no_run_directory(tmp_path, override, message):
    """Env and model names are checked before anything is written (offline: no Hub retries)."""
    out = _algos(
        "train",
        str(ROOT / "recipes/test/keypad.toml"),
        "--set",
        override,
        "--set",
        f"run.out_dir='{tmp_path / 'runs'}'",
        cwd=tmp_path,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


def test_an_iteration_without_rows_says_why(tmp_path):
    """Every episode hitting the context limit at step 0 trains nothing, and the run says so."""
    out = _train_keypad(
        tmp_path,
        "rollout.max_prompt_tokens=8",
        "run.iterations=1",
        "run.eval_episodes=0",
        f"run.out_dir='{tmp_path}'",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "warning: iteration 1 produced no step rows to train on" in out.stdout + out.stderr
    assert "context_limit" in out.stdout + out.stderr


def test_eval_writes_every_episode_of_every_policy(tmp_path):
    """``algos eval --trajectories`` keeps each policy's episodes, steps included (a model's too)."""
    path = tmp_path / "eps.jsonl"
    sets = [s.replace("AlgosTest", "keypad_env:AlgosTest") for s in KEYPAD]
    sets.append("env.kwargs={distinct_tasks=true}")  # a task per seed: 3 distinct ones
    args = [a for s in sets for a in ("--set", s)]
    policies = ("random", "expert", "hf:tiny-random")
    out = _algos(
        "eval", "--recipe", str(ROOT / "recipes/test/keypad.toml"), *args,
        "--policy", ",".join(policies), "--episodes", "3", "--trajectories", str(path),
        "--json", str(tmp_path / "eval.json"), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["policy"] for e in lines] == [p for p in policies for _ in range(3)]
    results = json.loads((tmp_path / "eval.json").read_text())
    for policy in policies:
        episodes = [e for e in lines if e["policy"] == policy]
        assert len({e["task_id"] for e in episodes}) == 3  # the same distinct tasks for each
        assert sum(e["won"] for e in episodes) / 3 == results[policy]["success_rate"]
        for e in episodes:
            assert len(e["steps"]) == e["length"] > 0
            assert all(isinstance(s["observation"], str) and "action" in s for s in e["steps"])
    assert all(e["won"] for e in lines if e["policy"] == "expert")


def test_eval_output_in_a_missing_folder_fails_before_playing(tmp_path):
    sets = [s.replace("AlgosTest", "keypad_env:AlgosTest") for s in KEYPAD]
    args = [a for s in sets for a in ("--set", s)]
    out = _algos(
        "eval", "--recipe", str(ROOT / "recipes/test/keypad.toml"), *args, "--policy",
        "random", "--trajectories", str(tmp_path / "nope" / "eps.jsonl"), cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 2
    assert "--trajectories" in out.stderr and "does not exist" in out.stderr
    assert "eval (random)" not in out.stderr  # no episode was played
    none = _algos("eval", "--env", "keypad_env:AlgosTest-v0", "--policy", "random",
                  "--episodes", "0", cwd=tmp_path)  # fmt: skip
    assert none.returncode == 2 and "--episodes 0: play at least 1" in none.stderr


def test_eval_checks_every_policy_the_split_and_the_outputs_before_playing(tmp_path):
    env = ("eval", "--env", "keypad_env:AlgosTest/Keypad-v0", "--episodes", "1")
    for args, message in (
        (("--policy", "random,rnadom"), "unknown policy 'rnadom'"),
        (
            ("--policy", "random", "--policy", f"run:{tmp_path}"),
            f"--policy run:{tmp_path}: {tmp_path} is not a run directory",
        ),
        (("--policy", "random", "--json", str(tmp_path)), f"--json {tmp_path}: is a folder"),
        (("--policy", "random", "--trajectories", str(tmp_path)), "--trajectories"),
        (("--policy", "random", "--json", "/proc/eval.json"), "--json /proc/eval.json: cannot"),
        (("--policy", "random", "--env", "no_such_module:Foo-v0"), "No module named"),
        (("--policy", "random,hf:no-such-model"), "--policy hf:no-such-model: model 'no-such-"),
        (("--policy", "random,run:"), "policy 'run:' names no run directory; use run:RUN_DIR"),
        (("--policy", "random", "--split", "nope"), "env.eval_kwargs={'split': 'nope'}"),
    ):
        out = _algos(*env, *args, cwd=tmp_path)
        assert out.returncode == 2, out.stderr[-2000:]
        assert message in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert "eval (random)" not in out.stderr  # no episode was played


def test_run_folders_that_cannot_be_used_are_one_line_before_anything_loads(tmp_path):
    """A taken run.name, and an out_dir (or --out) that is a file, were tracebacks."""
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "config.json").write_text("{}")
    (tmp_path / "afile").write_text("")
    out_dir = f"run.out_dir='{tmp_path}'"
    for args, message in (
        (
            _keypad_args(out_dir, "run.name='taken'"),
            f"algos train: {tmp_path / 'taken'} already holds a run (run.name='taken')",
        ),
        (
            _keypad_args(f"run.out_dir='{tmp_path / 'afile'}'"),
            f"algos train: run.out_dir='{tmp_path / 'afile'}': {tmp_path / 'afile'} is a file, "
            "not a folder",
        ),
        (
            _keypad_args(out_dir, "run.name='afile/x'"),
            f"run.name='afile/x': {tmp_path / 'afile'} is a file, not a folder",
        ),
        (
            ("compare", str(ROOT / "recipes/test/keypad.toml"), "--out", str(tmp_path / "afile")),
            f"algos compare: --out: {tmp_path / 'afile'} is a file, not a folder",
        ),
    ):
        out = _algos(*args, cwd=tmp_path)
        assert out.returncode == 2, out.stderr[-2000:]
        assert message in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]


def test_a_model_that_cannot_load_here_is_one_line_before_a_run_folder(tmp_path):
    """A model name that resolves to nothing, more trainable layers than the model has, or CUDA
    where there is none failed as the model loaded, after the run folder was made (and, in a
    pipeline, after cloning's demonstrations): the same command then found its name taken."""
    import torch

    cases = [
        ("model.name='no-such-model'", "model 'no-such-model' is not a built-in name"),
        ("model.trainable_layers=3", "model.trainable_layers=3, but tiny-random has 2 decoder"),
    ]
    if not torch.cuda.is_available():
        cases.append(("model.device='cuda'", "model.device='cuda', but torch sees no CUDA device"))
    for setting, message in cases:
        for command in ("train", "sft"):
            args = _keypad_args(f"run.out_dir='{tmp_path}'", "model.init='sft'", setting)
            out = _algos(command, *args[1:], cwd=tmp_path)
            assert out.returncode == 2, out.stderr[-2000:]
            assert f"algos {command}: {message}" in out.stderr, out.stderr[-2000:]
            assert "Traceback" not in out.stderr, out.stderr[-2000:]
            assert "demonstration" not in out.stdout + out.stderr  # nothing was played
    assert not any(tmp_path.iterdir()), "a refused start left a run folder"


def test_a_backend_that_cannot_run_here_is_one_line_before_anything_loads(tmp_path):
    """An unreachable openai server was a ConnectionError traceback; `rollout.backend = "vllm"`
    without vLLM an ImportError traceback after the model loaded (and after cloning)."""
    import importlib.util

    env = ("eval", "--env", "keypad_env:AlgosTest/Keypad-v0", "--episodes", "1")
    cases = [
        (
            (*env, "--policy", "openai:http://127.0.0.1:9"),  # port 9 (discard): nothing listens
            "algos eval: http://127.0.0.1:9/v1/chat/completions: <urlopen error",
        ),
        (
            (*env, "--policy", "random,openai:notaurl"),
            "algos eval: --policy openai:notaurl: openai backend: 'notaurl' is not a server URL",
        ),
    ]
    if importlib.util.find_spec("vllm") is None:
        cases += [
            (
                (*env, "--policy", "random,vllm:m"),
                "algos eval: --policy vllm:m: the vllm backend needs vLLM",
            ),
            (
                _keypad_args(
                    f"run.out_dir='{tmp_path}'", "rollout.backend='vllm'", "model.init='sft'"
                ),
                "algos train: rollout.backend = 'vllm': the vllm backend needs vLLM",
            ),
        ]
    for args, message in cases:
        out = _algos(*args, cwd=tmp_path)
        assert out.returncode == 2, out.stderr[-2000:]
        assert message in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert "eval (random)" not in out.stderr and "sft:" not in out.stderr  # nothing played
    assert not any(tmp_path.glob("*/sft")), "the pipeline cloned before refusing the backend"
    assert not any(tmp_path.glob("*/config.json")), "a refused start left a run directory"


def _algos_limited(limit: int, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``algos ARGS`` where no file may grow past ``limit`` bytes: a disk that refuses writes.

    A real OS limit, not a fake: RLIMIT_FSIZE, past which a write fails with EFBIG (where a
    full disk gives ENOSPC).
    """
    import resource
    import signal

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "algos.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, preexec_fn=limited)  # fmt: skip


def _one_line(out: subprocess.CompletedProcess, *parts: str) -> None:
    """``out`` stopped with exit status 2 and one message holding ``parts``, no traceback."""
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    for part in parts:
        assert part in out.stderr, out.stderr[-2000:]


def test_a_checkpoint_that_cannot_be_written_is_one_line_and_the_run_resumes(tmp_path):
    """A full disk was a SafetensorError traceback that left a half-written checkpoint folder.

    200 KB lets the run's logs through and stops the first checkpoint (the tiny model's
    weights are 366 KB).
    """
    args = _keypad_args(f"run.out_dir='{tmp_path}'", "run.name='full'", "run.iterations=2",
                        "run.save_every=1")  # fmt: skip
    out = _algos_limited(200_000, *args, cwd=tmp_path)
    run = tmp_path / "full"
    _one_line(out, f"algos train: {run}/checkpoints/iter_000001: cannot write it (",
              f"the run stopped before its first checkpoint: make room and continue with "
              f"`algos train --resume {run}`")  # fmt: skip
    assert not list((run / "checkpoints").glob(".*")), "a half-written checkpoint was left"
    again = _algos("train", "--resume", str(run), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (run / "checkpoints" / "iter_000002" / "model.safetensors").is_file()


def test_a_log_that_cannot_be_written_is_one_line_and_the_run_resumes(tmp_path):
    """A full disk while ``episodes.jsonl`` (or ``metrics.jsonl``) was appended was an
    ``OSError: [Errno 28]`` traceback naming no file.

    15 KB lets the first iteration's 8 logged episodes (~10 KB) through, not the second's.
    """
    args = _keypad_args(f"run.out_dir='{tmp_path}'", "run.name='full'", "run.iterations=2",
                        "run.save_every=0", "run.log_episodes=8")  # fmt: skip
    out = _algos_limited(15_000, *args, cwd=tmp_path)
    run = tmp_path / "full"
    _one_line(out, f"algos train: {run}/episodes.jsonl: cannot write it (File too large)",
              f"make room and continue with `algos train --resume {run}`")  # fmt: skip
    again = _algos("train", "--resume", str(run), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in metrics] == [1, 2]  # the torn part was dropped
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert [e["iteration"] for e in episodes] == [1] * 8 + [2] * 8


def test_eval_output_that_cannot_be_written_is_one_line(tmp_path):
    """A full disk under ``algos eval --trajectories`` was a traceback naming no file."""
    path = tmp_path / "eps.jsonl"
    out = _algos_limited(1_000, "eval", "--env", "keypad_env:AlgosTest/Keypad-v0", "--set",
                         "env.kwargs={distinct_tasks=true}", "--policy", "random", "--episodes",
                         "4", "--trajectories", str(path), cwd=tmp_path)  # fmt: skip
    _one_line(out, f"algos eval: {path}: cannot write it (File too large)")


def test_plots_that_cannot_be_written_leave_the_finished_run_finished(tmp_path):
    """The plots drawn after the last evaluation are not the run: a figure that could not be
    written (here a folder stands where it goes) said the run stopped and should resume."""
    run = tmp_path / "done"
    (run / "plots" / "curves.png").mkdir(parents=True)
    out = _train_keypad(tmp_path, f"run.out_dir='{tmp_path}'", "run.name='done'")
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"warning: {run}/plots/curves.png: cannot write the plots" in out.stdout, out.stdout
    assert f"`algos plot {run}` draws them later" in out.stdout
    assert (run / "checkpoints" / "latest").is_file()


def test_a_config_that_cannot_be_written_leaves_no_run_folder(tmp_path):
    """``config.json`` written in place by a full disk left half a file, in a folder whose
    name a second try then found taken."""
    args = _keypad_args(f"run.out_dir='{tmp_path}'", "run.name='full'")
    out = _algos_limited(1_000, *args, cwd=tmp_path)
    _one_line(out, f"algos train: {tmp_path}/full/config.json: cannot write it (File too large)",
              "nothing ran: make room and run the command again")  # fmt: skip
    assert not (tmp_path / "full").exists()


@pytest.mark.parametrize(
    ("code", "trouble", "fix"),
    [
        (errno.EIO, "the disk failed to read or write it (Input/output error)", "check the disk"),
        (errno.EROFS, "cannot write it (Read-only file system)", "make the folder writable"),
    ],
)
def test_a_failing_or_read_only_disk_is_not_called_full(tmp_path, code, trouble, fix):
    """An I/O error (a read as much as a write) and a read-only folder were reported as "cannot
    write it ... make room". A failing device or a read-only mount cannot be made here without
    privileges, so the OSError is raised as the OS raises it, inside the run's guard."""
    from algos.checkpoint import CheckpointWriteError
    from algos.runs import RunWriteError, stop_on_disk_error

    log = tmp_path / "metrics.jsonl"
    with (
        pytest.raises(RunWriteError) as err,
        stop_on_disk_error(tmp_path, "`algos train --resume R`"),
    ):
        raise OSError(code, os.strerror(code), str(log))
    assert str(err.value) == (
        f"{log}: {trouble}; the run stopped before its first checkpoint: {fix} and continue "
        "with `algos train --resume R`"
    )
    with pytest.raises(RunWriteError) as err, stop_on_disk_error(tmp_path, "`R`"):
        raise CheckpointWriteError("CKPT: cannot write it (...)", code)  # as save_checkpoint does
    assert str(err.value).endswith(f": {fix} and continue with `R`")


def test_a_cloning_stage_that_cannot_be_written_names_the_pipeline_to_resume(tmp_path):
    """A pipeline's clone that could not be checkpointed said ``continue with --resume
    RUN/sft``: neither the command nor the folder that continues the pipeline."""
    clone = (f"run.out_dir='{tmp_path}'", "model.init='sft'", "env.kwargs={distinct_tasks=true}",
             "sft.demos=4", "sft.val_demos=0", "sft.epochs=1")  # fmt: skip
    out = _algos_limited(8_000, *_keypad_args(*clone, "run.name='full'"), cwd=tmp_path)
    run = tmp_path / "full"
    _one_line(out, f"algos train: {run}/sft/checkpoints/iter_000001: cannot write it (",
              f"make room and continue with `algos train --resume {run}`")  # fmt: skip
    again = _algos("train", "--resume", str(run), cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (run / "checkpoints" / "iter_000002" / "model.safetensors").is_file()
    # The same clone as a run of its own names its own command; a comparison's, the comparison.
    args = _keypad_args(*clone, "run.name='clone'")[1:]
    out = _algos_limited(8_000, "sft", *args, cwd=tmp_path)
    _one_line(out, f"make room and continue with `algos sft --resume {tmp_path / 'clone'}`")
    out = _algos_limited(8_000, "compare", *args, "--algos", "grpo", "--seeds", "0", "--out",
                         str(tmp_path / "cmp"), cwd=tmp_path)  # fmt: skip
    _one_line(out, f"algos compare: {tmp_path}/cmp/sft/checkpoints/iter_000001: cannot write",
              "make room and continue with the same `algos compare` command")  # fmt: skip
