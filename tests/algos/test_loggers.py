"""``algos.loggers``: real TensorBoard event files and a real W&B run in offline mode."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from algos.loggers import (
    LOGGER_NAMES,
    Logger,
    TensorBoardLogger,
    WandbLogger,
    finite_scalars,
    make_loggers,
)

CONFIG = {"algo": {"name": "grpo", "lr": 1e-5}, "env": {"id": "AgentR1/HotpotQA-v0"}}


def test_finite_scalars_by_hand() -> None:
    metrics = {"a": 1, "b": float("nan"), "c": float("inf"), "d": "text", "e": True, "f": 0.25}
    assert finite_scalars(metrics) == {"a": 1.0, "f": 0.25}


def test_unknown_or_repeated_names_list_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown logger 'mlflow'.*valid: tensorboard, wandb"):
        make_loggers(["tensorboard", "mlflow"], tmp_path, config={}, run_name="r")
    with pytest.raises(ValueError, match="listed twice"):
        make_loggers(["tensorboard", "tensorboard"], tmp_path, config={}, run_name="r")
    with pytest.raises(ValueError, match="list of names"):
        make_loggers("wandb", tmp_path, config={}, run_name="r")
    assert not (tmp_path / "tb").exists()  # nothing was built before the names were checked
    assert make_loggers([], tmp_path, config={}, run_name="r") == []


def test_tensorboard_logs_finite_scalars_config_and_tables(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (logger,) = make_loggers(["tensorboard"], tmp_path, config=CONFIG, run_name="r")
    assert isinstance(logger, TensorBoardLogger) and isinstance(logger, Logger)
    logger.log_scalars(1, {"reward/mean": 0.5, "loss": float("nan")})
    logger.log_scalars(2, {"reward/mean": 0.75, "loss": 1.5})
    logger.log_table("eval/episodes", ["task", "won"], [["a|b", True], ["c", False]])
    logger.close()
    logger.close()
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"tensors": 0})
    events.Reload()
    reward = [(e.step, e.value) for e in events.Scalars("reward/mean")]
    assert reward == [(1, 0.5), (2, 0.75)]
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(2, 1.5)]  # NaN skipped
    texts = {tag: events.Tensors(tag) for tag in events.Tags()["tensors"]}
    table = texts["eval/episodes/text_summary"][0]
    assert table.step == 2
    assert "| a\\|b | True |" in table.tensor_proto.string_val[0].decode()
    config = texts["config/text_summary"][0].tensor_proto.string_val[0].decode()
    assert '"name": "grpo"' in config


def wandb_records(run_dir: Path, timeout_s: float = 60.0) -> list:
    """The records of the offline run's ``.wandb`` file, once its ``exit`` record is there.

    The file is ``:W&B`` plus a 3-byte magic/version header, then LevelDB's log format
    (32 KiB blocks; each chunk: crc32, length, type FULL/FIRST/MIDDLE/LAST) holding one
    serialised ``wandb_internal_pb2.Record`` per entry. wandb 0.31 has no Python reader of
    its own (wandb-core reads it), so these lines read it. wandb-core, a separate process,
    may still be writing the file when ``finish()`` returns (once, in a CI run on a loaded
    machine, it held no ``run`` record yet), so this waits for the last record, ``exit``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        records = _read_wandb_file(run_dir)
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        if time.monotonic() > deadline:
            return records  # the assertions that follow say what is missing
        time.sleep(0.2)


def _read_wandb_file(run_dir: Path) -> list:
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, block, raw, pending = 7, 32 * 1024, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a chunk header is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if pos + 7 + length > len(data):  # a chunk still being written
            break
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            raw.append(chunk)
        elif kind == 2:
            pending = chunk
        elif kind == 3:
            pending += chunk
        elif kind == 4:
            raw.append(pending + chunk)
    return [pb.Record.FromString(r) for r in raw]


def test_wandb_offline_run_holds_config_scalars_and_table(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    loggers = make_loggers(
        ["tensorboard", "wandb"], tmp_path, config=CONFIG, run_name="keypad-grpo"
    )
    assert [type(x) for x in loggers] == [TensorBoardLogger, WandbLogger]
    for logger in loggers:
        logger.log_scalars(1, {"reward/mean": 0.5, "loss": float("inf")})
        logger.log_scalars(2, {"reward/mean": 0.75})
        logger.log_table("eval/episodes", ["task", "won"], [["a", True], ["b", False]])
        logger.close()
    records = wandb_records(tmp_path)
    (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert run.display_name == "keypad-grpo" and run.project == "agent-gym"
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["algo"] == CONFIG["algo"] and config["env"] == CONFIG["env"]
    history = [
        {item.key or "/".join(item.nested_key): item.value_json for item in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [(h["_step"], h.get("reward/mean")) for h in history] == [("1", "0.5"), ("2", "0.75")]
    assert all("loss" not in h for h in history)  # inf skipped
    assert history[-1]["eval/episodes/nrows"] == "2"
    (table,) = tmp_path.glob("wandb/offline-run-*/files/media/table/eval/episodes_*.table.json")
    assert json.loads(table.read_text())["data"] == [["a", True], ["b", False]]
    assert (tmp_path / "wandb_run_id").read_text().strip() == run.run_id


def test_wandb_resume_continues_the_same_run(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    first = WandbLogger(tmp_path, config=CONFIG, run_name="r")
    run_id = first._run.id
    first.log_scalars(1, {"x": 1.0})
    first.close()
    second = WandbLogger(tmp_path, config=CONFIG, run_name="r", resume=True)
    assert second._run.id == run_id
    second.close()
    fresh = WandbLogger(tmp_path, config=CONFIG, run_name="r", resume=False)
    assert fresh._run.id != run_id
    fresh.close()


def test_missing_wandb_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    # wandb is installed here, so its absence is simulated: None in sys.modules makes
    # `import wandb` raise ImportError, as it does where the package is missing.
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ImportError, match=r"pip install 'agent-gym\[wandb\]'"):
        make_loggers(["tensorboard", "wandb"], tmp_path, config={}, run_name="r")


def test_logger_names_are_the_documented_ones() -> None:
    assert LOGGER_NAMES == ("tensorboard", "wandb")
