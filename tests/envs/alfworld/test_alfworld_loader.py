"""Bad input names itself: broken game files (generated and official) and malformed arguments
fail with one line naming the file or the argument, before TextWorld's parsers are reached
where that can be checked."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agent_gym.envs.alfworld.env import ALFWorldEnv
from agent_gym.envs.alfworld.gamefile import GameFileError, pddl_fault
from agent_gym.envs.alfworld.official import OfficialGames
from agent_gym.envs.alfworld.scenes import TASK_TYPES

FIXTURE = Path(__file__).parent / "fixtures" / "json_2.1.1"
TRAIN_GAME = (
    "train/pick_and_place_simple-Fork-None-CounterTop-7/trial_T20190000_000003/game.tw-pddl"
)


def test_pddl_fault_finds_the_line() -> None:
    assert pddl_fault("(define (problem p)\n  (:init (at a)\n  )") == (
        "line 1: '(' is never closed (1 missing)"
    )
    assert pddl_fault("(define (problem p))\n)") == "line 2: ')' closes nothing"
    assert pddl_fault("; (unclosed comment\n(define (domain d))") is None
    assert pddl_fault("(problem p)") == "it should start with '(define'"


@pytest.fixture()
def generated(tmp_path, monkeypatch) -> ALFWorldEnv:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    yield env
    env.close()


def _corrupt(path: Path, key: str, edit) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = edit(data[key])
    path.write_text(json.dumps(data), encoding="utf-8")


def _reset_error(env: ALFWorldEnv, k: int) -> str:
    record = env.games.record(k)
    with pytest.raises(GameFileError) as caught:
        env.reset(options={"task_id": record.task_id})
    message = str(caught.value)
    assert message.startswith(f"{record.path}: ") and "\n" not in message
    return message


def test_pddl_syntax_error_in_a_generated_game_names_the_file_and_line(generated) -> None:
    path = generated.games.record(1).path
    _corrupt(path, "pddl_problem", lambda text: text.rstrip().removesuffix(")"))
    message = _reset_error(generated, 1)
    assert re.search(r"pddl_problem is not valid PDDL: line 1: '\(' is never closed", message)


def test_parser_errors_name_the_file_and_the_part(generated) -> None:
    # Faults the cheap check cannot see reach TextWorld's parsers: a TatSu token error in the
    # grammar, an AssertionError in fast-downward's translator.
    grammar = generated.games.record(1).path
    _corrupt(grammar, "grammar", lambda text: "}}}" + text)
    assert "its grammar does not parse (FailedToken" in _reset_error(generated, 1)
    domain = generated.games.record(2).path
    _corrupt(domain, "pddl_domain", lambda text: text.replace("(:predicates", "(:predicates %%%"))
    message = _reset_error(generated, 2)
    assert "its PDDL (pddl_domain + pddl_problem) does not translate (AssertionError" in message
    # The env is still usable: a good game loads and plays after the failures.
    _, info = generated.reset(options={"task_id": generated.games.record(0).task_id})
    *_, info = generated.step(info["admissible_actions"][0])
    assert info["is_action_valid"]


def test_missing_fields_and_bad_json_name_the_file(generated) -> None:
    path = generated.games.record(3).path
    _corrupt(path, "pddl_domain", lambda text: 42)
    assert "pddl_domain should be non-empty text, got int" in _reset_error(generated, 3)
    path.write_text('{"grammar": ', encoding="utf-8")
    assert "not valid JSON (line 1, column 13)" in _reset_error(generated, 3)


def test_corrupt_official_pddl_is_reported_when_the_folder_is_read(tmp_path) -> None:
    root = tmp_path / "json_2.1.1"
    shutil.copytree(FIXTURE, root)
    _corrupt(root / TRAIN_GAME, "pddl_domain", lambda text: text[: len(text) // 2])
    with pytest.raises(GameFileError, match=re.escape(str(root / TRAIN_GAME)) + ": pddl_domain"):
        OfficialGames(root, "train").records()
    (root / TRAIN_GAME).parent.joinpath("traj_data.json").write_text("[1, 2", encoding="utf-8")
    with pytest.raises(GameFileError, match=r"traj_data.json: not valid JSON"):
        ALFWorldEnv(data=root, split="train").reset(seed=0)


def test_a_single_task_type_string_is_one_type() -> None:
    env = ALFWorldEnv(split="valid_seen", num_games=12, task_types="look_at_obj_in_light")
    assert env.task_types == ("look_at_obj_in_light",) and len(env.games) == 2
    games = OfficialGames(FIXTURE, "valid_unseen", task_types="pick_clean_then_place_in_recep")
    assert len(games) == 1


@pytest.mark.parametrize("task_types", ["pick", ["pick_and_place_simple", "sliced"], [], 3])
def test_unknown_task_types_list_the_six(task_types) -> None:
    with pytest.raises(ValueError, match=r"task_types=.*unknown task types") as caught:
        ALFWorldEnv(task_types=task_types)
    assert all(t in str(caught.value) for t in TASK_TYPES)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_games": "ten"}, "num_games must be a whole number or None, got 'ten' (str)"),
        ({"num_games": 2.5}, "num_games must be a whole number or None, got 2.5 (float)"),
        ({"num_games": True}, "num_games must be a whole number or None, got True (bool)"),
        ({"num_games": 0}, "num_games must be >= 1, got 0"),
        ({"generator_seed": "s"}, "generator_seed must be a whole number or None, got 's'"),
        ({"data": 3}, "data must be 'generated' or the path of a json_2.1.1 folder, got 3"),
        ({"split": ["train"]}, "unknown split ['train']"),
        (
            {"expert_replanner": "handcoded"},
            "expert_replanner='handcoded' is not one of task_planner, fast_downward",
        ),
        # Arguments are checked before the data path is looked at.
        ({"data": "/nonexistent", "num_games": "ten"}, "num_games must be a whole number"),
        ({"data": str(FIXTURE), "num_games": "ten"}, "num_games must be a whole number"),
    ],
)
def test_bad_arguments_are_named_at_construction(kwargs, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        ALFWorldEnv(**kwargs)
