"""Checkpoints: resume reproduces an uninterrupted run, recovers from damage, runs no code."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from conftest import HERE
from safetensors.torch import load_file

from algos.checkpoint import complete_checkpoints, latest_checkpoint
from algos.config import load_config
from algos.metrics import read_metrics
from algos.trainer import resume, train

QUIET = {"log": lambda *_: None}


def _cfg(overrides, name, iterations, *extra):
    return load_config(
        None,
        [
            *overrides,
            "algo=grpo",
            "env.num_tasks=2",
            "env.group_size=4",
            f"run.iterations={iterations}",
            f"run.name='{name}'",
            *extra,
        ],
    )


def _weights(run):
    return load_file(str(latest_checkpoint(run) / "model.safetensors"))


def test_resume_matches_uninterrupted_run(keypad_overrides):
    full = train(_cfg(keypad_overrides, "full", 3), **QUIET)
    part = train(_cfg(keypad_overrides, "part", 2), **QUIET)
    resume(part, iterations=3, **QUIET)  # the run was meant to go on: extend it
    a, b = read_metrics(full), read_metrics(part)
    assert [r["iteration"] for r in b] == [1, 2, 3]
    for key in ("rollout/success_rate", "rollout/return_mean", "actor/pg_loss", "actor/grad_norm"):
        assert a[2][key] == b[2][key], key
    wa, wb = _weights(full), _weights(part)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def test_checkpoints_hold_only_what_trains(keypad_overrides):
    run = train(_cfg(keypad_overrides, "lean", 1, "model.trainable_layers=1"), **QUIET)
    saved = _weights(run)
    assert saved and all(k.startswith(("model.layers.1.", "model.norm.")) for k in saved), saved
    assert not any(k.startswith("model.embed_tokens") for k in saved)


def test_resuming_a_finished_run_says_so(keypad_overrides, monkeypatch):
    run = train(_cfg(keypad_overrides, "done", 1), **QUIET)
    lines = []

    def no_model(*_):
        raise AssertionError("a finished run loaded its model")

    monkeypatch.setattr("algos.policy.build_models", no_model)  # it says so before loading
    resume(run, log=lines.append)
    assert any("already finished (1/1 iterations)" in line for line in lines)
    assert [r["iteration"] for r in read_metrics(run)] == [1]


def test_a_second_run_under_a_taken_name_is_refused_and_the_first_kept(
    keypad_overrides, monkeypatch
):
    """The same command twice must not overwrite the first run, nor (as a pipeline) carry it on
    under another config: it is refused before anything loads, naming the resume command."""
    from algos.sft import sft

    run = train(_cfg(keypad_overrides, "taken", 1), **QUIET)
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}

    def no_model(*_):
        raise AssertionError("the model was loaded before the name was checked")

    monkeypatch.setattr("algos.policy.build_models", no_model)
    again = rf"{run} already holds a run \(run.name='taken'\); continue it with `algos train --resume {run}`"
    with pytest.raises(FileExistsError, match=again):
        train(_cfg(keypad_overrides, "taken", 1), **QUIET)
    with pytest.raises(FileExistsError, match=again):  # a pipeline would reuse its stage
        train(_cfg(keypad_overrides, "taken", 2, "model.init='sft'", "run.seed=1"), **QUIET)
    with pytest.raises(FileExistsError, match=rf"`algos sft --resume {run}`"):
        sft(_cfg(keypad_overrides, "taken", 1), **QUIET)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == files


def test_default_run_names_taken_in_the_same_second_get_a_suffix(tmp_path, monkeypatch):
    import time

    from algos.runs import new_run_dir

    monkeypatch.setattr(time, "strftime", lambda *_: "20261207-130000")
    cfg = load_config(None, ["algo=grpo", f"run.out_dir='{tmp_path}'"])
    names = [new_run_dir(cfg).name for _ in range(3)]
    base = names[0]
    assert base.endswith("-grpo-20261207-130000") and names[1:] == [f"{base}-2", f"{base}-3"]


def test_resume_refuses_fewer_iterations_and_a_config_that_is_not_one(keypad_overrides):
    """Bad resume arguments are one error before the model loads; config.json stays as it was."""
    run = train(_cfg(keypad_overrides, "short", 2), **QUIET)
    config = (run / "config.json").read_text()
    for fewer in (1, -1):
        with pytest.raises(ValueError, match=f"--iterations {fewer}: .* has done 2 iterations"):
            resume(run, iterations=fewer, **QUIET)
    assert (run / "config.json").read_text() == config  # not rewritten with a bad count
    (run / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config.json: not a config \(a JSON object"):
        resume(run, **QUIET)


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"run": {}}'])
def test_a_starting_run_whose_config_is_damaged_is_named(tmp_path, text):
    """model.init (or eval's run:) reads the other run's config.json; a damaged one was a bare
    JSONDecodeError (naming no file) or an AttributeError."""
    from algos.checkpoint import init_chain

    (tmp_path / "config.json").write_text(text)
    with pytest.raises(ValueError, match=rf"{tmp_path / 'config.json'} is not a run's config"):
        init_chain(tmp_path, "smollm2-135m")


def test_a_run_killed_before_its_first_checkpoint_starts_over(keypad_overrides, tmp_path):
    """Killed in iteration 1 (config.json and a torn metrics line, no checkpoint): resume runs it."""
    full = train(_cfg(keypad_overrides, "whole", 1), **QUIET)
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text((full / "config.json").read_text())
    (killed / "metrics.jsonl").write_text('{"iteration": 1, "rollout/succ')
    lines = []
    resume(killed, log=lines.append)
    assert any("starting it over from iteration 1" in str(line) for line in lines)
    a, b = read_metrics(full), read_metrics(killed)
    assert [r["iteration"] for r in b] == [1]
    assert a[0]["rollout/success_rate"] == b[0]["rollout/success_rate"]  # the same run
    wa, wb = _weights(full), _weights(killed)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_pipeline_stopped_while_cloning_before_a_checkpoint_starts_the_stage_over(
    keypad_overrides, tmp_path
):
    """Stopped (Ctrl-C) in its cloning stage before the first epoch's checkpoint, the
    pipeline's resume said "no complete checkpoint to resume from" and could not go on."""
    clone = ("model.init='sft'", "env.kwargs={distinct_tasks=true}", "sft.demos=4",
             "sft.val_demos=0", "sft.epochs=1")  # fmt: skip
    full = train(_cfg(keypad_overrides, "whole", 1, *clone), **QUIET)
    stopped = tmp_path / "stopped"
    (stopped / "sft").mkdir(parents=True)  # what train() and sft() write before the first epoch
    (stopped / "config.json").write_text((full / "config.json").read_text())
    (stopped / "sft" / "config.json").write_text((full / "sft" / "config.json").read_text())
    (stopped / "sft" / "sft.json").write_text('{"finished": false}')
    lines = []
    resume(stopped, log=lines.append)
    assert any("before its first epoch's checkpoint; starting it over" in str(x) for x in lines)
    assert json.loads((stopped / "sft" / "sft.json").read_text())["finished"]
    wa, wb = _weights(full), _weights(stopped)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)  # the same run


def test_a_damaged_eval_json_is_named_not_read_as_empty(keypad_overrides, capsys):
    """A damaged ``eval.json`` read as ``{}``: a finished run's resume evaluated "before" and
    "after" again over it, and ``algos plot`` drew no held-out curve, neither saying why."""
    from algos.cli import main

    run = train(_cfg(keypad_overrides, "evals", 1, "run.eval_episodes=4"), **QUIET)
    for damage in ('{"before": {"success_rate": 0.5', "[1, 2]"):
        (run / "eval.json").write_text(damage)
        for command in (["train", "--resume", str(run)], ["plot", str(run)]):
            assert main(command) == 2
            err = capsys.readouterr().err
            assert f"{run / 'eval.json'}: " in err and "restore it, or delete it" in err, err


def test_a_run_another_process_is_writing_is_not_resumed_beside_it(keypad_overrides):
    """Two ``--resume`` of one run (a second terminal, a retry while the first still ran)
    trained side by side: interleaved ``metrics.jsonl`` lines, each replacing the other's
    checkpoints."""
    from algos.runs import hold_run

    here = "env=keypad_env:AlgosTest/Keypad-v0"  # an id another process can import
    run = train(_cfg(keypad_overrides, "busy", 1, here), **QUIET)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        sys.executable,
        "-m",
        "algos.cli",
        "train",
        "--resume",
        str(run),
        "--iterations",
        "2",
    ]
    with hold_run(run):  # this process holds it, as a running `algos train` does
        out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 2, out.stderr[-2000:]
        assert f"{run} is in use by another process (pid {os.getpid()})" in out.stderr
        resume(run, iterations=2, **QUIET)  # the holder itself goes on (the lock re-enters)
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]
    out = subprocess.run([*command[:-1], "3"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]  # released: the next process may write
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2, 3]


def test_a_crafted_pickle_fails_closed(keypad_overrides, tmp_path):
    run = train(_cfg(keypad_overrides, "evil", 1), **QUIET)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    state = latest_checkpoint(run) / "state.pt"
    state.write_bytes(pickle.dumps(Payload()))
    with pytest.raises(FileNotFoundError, match="state.pt: cannot read as plain data"):
        resume(run, iterations=2, **QUIET)
    assert not marker.exists()


def test_resume_falls_back_to_the_newest_loadable_checkpoint(keypad_overrides):
    run = train(_cfg(keypad_overrides, "fallback", 3, "run.save_every=1"), **QUIET)
    root = run / "checkpoints"
    assert [p.name for p in complete_checkpoints(run)] == ["iter_000003", "iter_000002"]
    (root / "iter_000003" / "model.safetensors").write_bytes(b"garbage")
    (root / ".iter_000004.999.tmp").mkdir()  # a write that never finished
    lines = []
    resume(run, iterations=4, log=lines.append)
    text = "\n".join(lines)
    assert "iter_000003/model.safetensors: cannot read" in text
    assert "resuming from the older checkpoint iter_000002" in text
    assert "removed .iter_000004.999.tmp" in text
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2, 3, 4]


def test_dangling_pointer_missing_state_and_a_torn_metrics_line(keypad_overrides):
    run = train(_cfg(keypad_overrides, "torn", 2, "run.save_every=1"), **QUIET)
    root = run / "checkpoints"
    (root / "latest").write_text("iter_000099\n")  # points nowhere
    (root / "iter_000002" / "state.json").unlink()  # the newest is incomplete
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write('{"iteration": 3, "rollout/succ')  # killed mid-line
    assert latest_checkpoint(run) == root / "iter_000001"
    resume(run, iterations=2, **QUIET)
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]


def test_a_killed_checkpoint_write_keeps_the_previous_one(keypad_overrides, tmp_path):
    """SIGKILL in the middle of writing checkpoint 2: checkpoint 1 stays the latest and loads."""
    run = train(_cfg(keypad_overrides, "killed", 1), **QUIET)
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(HERE)!r})
        import keypad_env  # registers the test env
        import safetensors.torch
        from algos import checkpoint
        from algos.trainer import build_session
        from algos.runs import run_config

        real = safetensors.torch.save_file
        def save_then_die(tensors, path, *a, **k):
            real(tensors, path, *a, **k)
            os.kill(os.getpid(), signal.SIGKILL)  # mid-checkpoint: state.pt not written yet
        safetensors.torch.save_file = save_then_die
        s = build_session(run_config({str(run)!r}), __import__("pathlib").Path({str(run)!r}), resume=True)
        checkpoint.save_checkpoint(s.run_dir, 2, s.learner)
        """
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    root = run / "checkpoints"
    assert list(root.glob(".iter_000002.*.tmp")), "the write was really interrupted"
    assert latest_checkpoint(run) == root / "iter_000001"
    resume(run, iterations=2, **QUIET)  # loads iteration 1 and trains iteration 2
    assert [r["iteration"] for r in read_metrics(run)] == [1, 2]
    assert not list(root.glob(".iter_*.tmp"))


def test_an_earlier_checkpoint_can_start_a_run_or_be_evaluated(keypad_overrides):
    from algos.checkpoint import load_init
    from algos.eval import evaluate, open_policy
    from algos.policy import build_models

    run = train(_cfg(keypad_overrides, "earlier", 2, "run.save_every=1"), **QUIET)
    first = run / "checkpoints" / "iter_000001"
    cfg = _cfg(keypad_overrides, "from-first", 1)
    model = build_models(cfg).model
    assert load_init(model, first, cfg.model.name) == 1
    state = model.state_dict()
    for key, saved in load_file(str(first / "model.safetensors")).items():
        assert torch.equal(state[key], saved), key  # iteration 1's weights, not the latest (2)
    assert not torch.equal(state[key], _weights(run)[key])
    # `algos eval --policy run:RUN_DIR/checkpoints/iter_N` reads the run's config, that checkpoint
    evaluate(cfg, open_policy(f"run:{first}", cfg), 1)
    with pytest.raises(FileNotFoundError, match="iter_000007.*not a complete checkpoint"):
        load_init(model, run / "checkpoints" / "iter_000007", cfg.model.name)


def test_every_checkpoint_can_be_kept_and_a_run_records_the_one_it_started_from(keypad_overrides):
    from algos.checkpoint import load_init
    from algos.policy import build_models
    from algos.runs import run_config

    source = train(_cfg(keypad_overrides, "source", 3, "run.keep_checkpoints=0"), **QUIET)
    assert [p.name for p in complete_checkpoints(source)] == [
        "iter_000003",
        "iter_000002",
        "iter_000001",
    ]
    started = train(_cfg(keypad_overrides, "started", 1, f"model.init='{source}'"), **QUIET)
    # The source training on must not change what `started` resumes from: it names iteration 3.
    assert run_config(started).model.init == str(source / "checkpoints" / "iter_000003")
    resume(source, iterations=4, **QUIET)
    resume(started, iterations=2, **QUIET)
    cfg = run_config(started)
    assert cfg.model.init == str(source / "checkpoints" / "iter_000003")
    # what a resume of `started` rebuilds its model from: iteration 3, not the source's newest (4)
    assert load_init(build_models(cfg).model, Path(cfg.model.init), cfg.model.name) == 3
