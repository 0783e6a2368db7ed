"""Loader of the official json_2.1.1 layout, on a small fixture folder written by us."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import agent_gym
from agent_gym.envs.alfworld.official import OfficialGames

gym.register_envs(agent_gym)

FIXTURE = Path(__file__).parent / "fixtures" / "json_2.1.1"


def test_walks_like_upstream_skipping_movable_sliced_unsolvable_and_missing() -> None:
    games = OfficialGames(FIXTURE, "valid_unseen")
    assert [r.task_id for r in games.records()] == [
        "valid_unseen/pick_and_place_simple-Apple-None-DiningTable-1/trial_T20190000_000001",
        "valid_unseen/pick_clean_then_place_in_recep-Mug-None-CoffeeMachine-1/trial_T20190000_000002",
    ]
    assert {r.data_source for r in games.records()} == {"official:json_2.1.1"}
    assert len(OfficialGames(FIXTURE.parent, "train")) == 1  # the parent folder works too
    only = OfficialGames(FIXTURE, "valid_unseen", task_types=["pick_clean_then_place_in_recep"])
    assert len(only) == 1


def test_env_plays_official_games_to_a_win() -> None:
    env = gym.make("AgentR1/ALFWorld-v0", data=str(FIXTURE), split="valid_unseen")
    obs, info = env.reset(seed=0)
    assert info["data_source"] == "official:json_2.1.1"
    assert env.unwrapped.task_id_for(0) == info["task_id"]  # the same draw, without a load
    task_id = "valid_unseen/pick_clean_then_place_in_recep-Mug-None-CoffeeMachine-1/trial_T20190000_000002"
    obs, info = env.reset(options={"task_id": task_id})
    assert info["task"] == "clean some mug and put it in coffeemachine."
    # Official games carry no walkthrough: the expert is TextWorld's planner.
    while (action := env.unwrapped.expert_action()) is not None:
        obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, info["won"]) == (1.0, True, True)
    env.close()


def test_missing_path_names_it_and_says_how_to_get_the_data(tmp_path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError, match="nowhere.*alfworld-download"):
        gym.make("AgentR1/ALFWorld-v0", data=str(missing))
    with pytest.raises(
        FileNotFoundError, match="no train/valid_seen/valid_unseen.*alfworld-download"
    ):
        OfficialGames(tmp_path, "train")


def test_malformed_files_are_named(tmp_path) -> None:
    trial = tmp_path / "json_2.1.1" / "train" / "pick_and_place_simple-A-None-B-1" / "trial_1"
    trial.mkdir(parents=True)
    (trial / "traj_data.json").write_text('{"task_type": "pick_and_place_simple"}')
    (trial / "game.tw-pddl").write_text("{not json")
    with pytest.raises(ValueError, match="game.tw-pddl.*not valid JSON"):
        OfficialGames(tmp_path, "train").records()
    (trial / "game.tw-pddl").write_text(json.dumps({"solvable": True}))
    with pytest.raises(ValueError, match="lacks"):
        OfficialGames(tmp_path, "train").records()
    (trial / "game.tw-pddl").write_text(json.dumps({"solvable": False}))
    with pytest.raises(FileNotFoundError, match="no solvable ALFWorld game"):
        OfficialGames(tmp_path, "train").records()


def test_generated_games_read_through_the_official_loader_stay_labelled_generated(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    from agent_gym.envs.alfworld.games import GeneratedGames

    games = GeneratedGames("valid_seen", num_games=6)
    games.build(progress=False)
    loaded = OfficialGames(games.root, "valid_seen")
    assert len(loaded) == 6
    assert {r.data_source for r in loaded.records()} == {"generated:alfworld-layouts"}


def test_unknown_task_id_is_an_error() -> None:
    games = OfficialGames(FIXTURE, "valid_unseen")
    with pytest.raises(ValueError, match="not a solvable game"):
        games.position("valid_unseen/nothing/trial_0")
