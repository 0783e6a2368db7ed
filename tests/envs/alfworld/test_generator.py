"""The seeded game generator: determinism, upstream's rules, disjoint scenes per split."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from agent_gym.envs.alfworld import generator, scenes
from agent_gym.envs.alfworld.games import _logic_texts
from agent_gym.envs.alfworld.problem import TOOLS, mangle

SAMPLE = [(split, i) for split in ("train", "valid_unseen") for i in range(24)]


def _facts(problem: str, name: str) -> list[list[str]]:
    init = problem.split("(:init", 1)[1].split("(:goal", 1)[0]
    return [m.split() for m in re.findall(rf"\({name} ([^()]*)\)", init)]


def test_same_seed_gives_byte_identical_file_and_other_index_differs() -> None:
    domain, grammar = _logic_texts()
    a = generator.generate("train", 7).game_json(domain, grammar)
    b = generator.generate("train", 7).game_json(domain, grammar)
    assert a == b
    assert a != generator.generate("train", 8).game_json(domain, grammar)
    assert a != generator.generate("train", 7, seed=1).game_json(domain, grammar)


def test_byte_identical_across_processes_and_hash_seeds() -> None:
    code = (
        "import hashlib; from agent_gym.envs.alfworld import generator as g; "
        "from agent_gym.envs.alfworld.games import _logic_texts; "
        "print(hashlib.sha256(g.generate('valid_seen', 5).game_json(*_logic_texts()).encode()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    local = hashlib.sha256(
        generator.generate("valid_seen", 5).game_json(*_logic_texts()).encode()
    ).hexdigest()
    assert digests == {local}


def test_task_types_cycle_in_upstream_order() -> None:
    types = [generator.generate("train", i).goal.task_type for i in range(6)]
    assert types == list(scenes.TASK_TYPES)


@pytest.mark.parametrize(("split", "index"), SAMPLE)
def test_game_follows_upstream_rules(split: str, index: int) -> None:
    rules = scenes.rules()
    game = generator.generate(split, index)
    goal, problem = game.goal, game.pddl_problem
    assert game.scene in scenes.split_scenes(split)
    assert scenes.scene_kind(game.scene) in rules["goals_valid"][goal.task_type]
    assert goal.object_target in rules["pickable"] and "Sliced" not in goal.object_target
    if goal.task_type == "look_at_obj_in_light":
        assert goal.parent_target == "" and goal.toggle_target in scenes.TOGGLE_TYPES
    else:
        assert goal.object_target in rules["can_contain"][goal.parent_target]
        assert goal.parent_target not in rules["movable_receptacles"]
        assert goal.parent_target != TOOLS.get(goal.task_type, ("",))[0]

    rtype = {r: t[: -len("Type")] for r, t in _facts(problem, "receptacleType")}
    otype = {o: t[: -len("Type")] for o, t in _facts(problem, "objectType")}
    can = {(r[: -len("Type")], o[: -len("Type")]) for r, o in _facts(problem, "canContain")}
    for o, r in _facts(problem, "inReceptacle"):
        if otype[o] in rules["pickable"]:  # lamps stand on surfaces, they are not put there
            assert (rtype[r], otype[o]) in can, (o, r)
        # No goal holds at the start.
        if otype[o] == goal.object_target:
            assert rtype[r] != goal.parent_target
    locations = [loc for _, loc in _facts(problem, "receptacleAtLocation")]
    assert len(locations) == len(set(locations)) == len(rtype)
    start = _facts(problem, "atLocation")[0][1]
    assert start not in locations
    assert "_bar_" in mangle("A|+0.1") and all("|" not in r for r in rtype)


def test_splits_use_disjoint_scenes() -> None:
    train = set(scenes.split_scenes("train"))
    assert train == set(scenes.split_scenes("valid_seen"))
    assert not train & set(scenes.split_scenes("valid_unseen"))
    assert len(train) == 96 and len(scenes.split_scenes("valid_unseen")) == 24


def test_game_file_has_the_official_keys_and_generated_marker(tmp_path) -> None:
    game = generator.generate("valid_unseen", 2)
    path = generator.write_game(game, tmp_path, *_logic_texts())
    data = json.loads(path.read_text())
    assert set(data) == {"pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"}
    assert data["solvable"] is True
    assert f"Your task is to: {game.task_desc}." in data["grammar"]
    traj = json.loads((path.parent / "traj_data.json").read_text())
    assert traj["task_type"] == game.goal.task_type and "generated" in traj
    assert path.parent.relative_to(tmp_path).as_posix() == game.task_id


@pytest.mark.parametrize("bad", ["train/x", "train/a/trial_T2019", "x"])
def test_parse_task_id_rejects_other_ids(bad: str) -> None:
    with pytest.raises(ValueError, match="not a generated ALFWorld game id"):
        generator.parse_task_id(bad)
