"""AgentR1/ALFWorld-v0 behaviour: ALFWorld's text, actions, rewards, expert and prompts."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import gymnasium as gym
import jinja2
import pytest

import agent_gym
from agent_gym.envs.alfworld.env import ALFWorldEnv
from agent_gym.envs.alfworld.scenes import TASK_TYPES

gym.register_envs(agent_gym)


@pytest.fixture(scope="module")
def env() -> ALFWorldEnv:
    # The first 12 games of valid_unseen: two of each task type, in bathrooms, bedrooms, ...
    e = ALFWorldEnv(split="valid_unseen", num_games=12)
    yield e
    e.close()


def _solve_with_expert(env: ALFWorldEnv, task_id: str) -> tuple[float, dict, int]:
    obs, info = env.reset(options={"task_id": task_id})
    total, steps = 0.0, 0
    while (action := env.expert_action()) is not None:
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["is_action_valid"], (action, info["admissible_actions"])
        total += reward
        steps += 1
        assert steps < 30
    return total, info, steps


def test_intro_admissible_and_names_follow_alfworld(env: ALFWorldEnv) -> None:
    obs, info = env.reset(seed=0)
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room.")
    assert f"\n\nYour task is to: {info['task']}" in obs and info["task"].endswith(".")
    assert info["admissible_actions"] == sorted(info["admissible_actions"])
    assert {"look", "inventory", "help"} <= set(info["admissible_actions"])
    for command in info["admissible_actions"]:
        assert "_bar_" not in command and "|" not in command
        assert re.fullmatch(r"(go to [a-z]+ \d+|look|inventory|help)", command), command
    assert info["task_type"] in TASK_TYPES
    assert info["data_source"] == "generated:alfworld-layouts"
    assert info["anchor_obs"] == obs and info["won"] is False and info["score"] == 0.0


@pytest.mark.parametrize("action", ["go to the moon", "GO TO " + "x", "look around", "take"])
def test_not_admissible_is_nothing_happens_and_changes_nothing(
    env: ALFWorldEnv, action: str
) -> None:
    obs0, info0 = env.reset(seed=1)
    go = next(a for a in info0["admissible_actions"] if a.startswith("go to"))
    obs1, *_, info1 = env.step(go)
    obs, reward, terminated, truncated, info = env.step(action)
    assert (obs, reward, terminated, truncated) == ("Nothing happens.", 0.0, False, False)
    assert info["is_action_valid"] is False
    assert info["anchor_obs"] == obs1 == info1["anchor_obs"]
    assert info["admissible_actions"] == info1["admissible_actions"]
    # The engine state did not move: "look" still describes the receptacle we went to.
    obs_look, *_ = env.step("look")
    assert go.removeprefix("go to ") in obs_look


def test_surrounding_spaces_are_stripped_as_textworld_does(env: ALFWorldEnv) -> None:
    env.reset(seed=2)
    obs, *_, info = env.step("  inventory ")
    assert info["is_action_valid"] and obs == "You are not carrying anything."


@pytest.mark.parametrize("k", range(6))
def test_walkthrough_expert_solves_every_task_type(env: ALFWorldEnv, k: int) -> None:
    record = env.games.record(k)
    total, info, steps = _solve_with_expert(env, record.task_id)
    assert record.task_type == TASK_TYPES[k]
    assert info["won"] is True and info["score"] == 1.0 and total == 1.0


def test_task_id_for_a_seed_is_the_task_its_reset_starts(env: ALFWorldEnv) -> None:
    # What held-out evaluation reads instead of resetting (a TextWorld load) per seed.
    seeds = range(40, 60)
    peeked = [env.task_id_for(s) for s in seeds]
    assert peeked == [env.reset(seed=s)[1]["task_id"] for s in seeds]
    assert len(set(peeked)) > 1  # seeds start different games


def test_win_gives_reward_one_once_and_terminates(env: ALFWorldEnv) -> None:
    obs, info = env.reset(options={"task_id": env.games.record(0).task_id})
    rewards = []
    while (action := env.expert_action()) is not None:
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append((reward, terminated, truncated))
    assert rewards[-1] == (1.0, True, False)
    assert all(r == (0.0, False, False) for r in rewards[:-1])


def test_a_step_before_reset_is_gymnasiums_reset_needed() -> None:
    fresh = ALFWorldEnv(split="valid_unseen", num_games=1)
    with pytest.raises(gym.error.ResetNeeded, match="call reset"):  # as every env here raises
        fresh.step("look")
    fresh.close()


def test_a_reset_that_fails_after_close_leaves_no_game_to_step() -> None:
    env = ALFWorldEnv(split="valid_unseen", num_games=1)
    env.reset(seed=0)
    env.close()  # releases the TextWorld engine
    with pytest.raises(TypeError, match="options"):
        env.reset(seed=0, options="task_id")
    with pytest.raises(gym.error.ResetNeeded, match="call reset"):
        env.step("look")
    env.close()


def test_after_the_win_the_episode_is_over(env: ALFWorldEnv) -> None:
    # The game itself plays on: taking the object back and putting it down again used to
    # un-win the episode (terminated False) and pay the win's reward again.
    env.reset(options={"task_id": env.games.record(0).task_id})
    while (action := env.expert_action()) is not None:
        last = action
        *_, info = env.step(action)
    assert info["won"] and info["admissible_actions"] == []
    obj, recep = last.removeprefix("move ").split(" to ")  # pick_and_place_simple's last step
    for command in [f"take {obj} from {recep}", last, "look"]:
        obs, reward, terminated, truncated, after = env.step(command)
        assert (obs, reward, terminated, truncated) == ("Nothing happens.", 0.0, True, False)
        assert after["is_action_valid"] is False and after["won"] is True
        assert after["anchor_obs"] == info["anchor_obs"] and after["admissible_actions"] == []


def test_task_planner_expert_after_leaving_the_walkthrough(env: ALFWorldEnv) -> None:
    obs, info = env.reset(options={"task_id": env.games.record(0).task_id})
    assert env.expert_source == "walkthrough"
    detour = next(a for a in reversed(info["admissible_actions"]) if a.startswith("go to"))
    env.step(detour)
    env.step("examine " + detour.removeprefix("go to "))
    assert env._plan is None  # off the walkthrough: replan when asked
    total = 0.0
    while (action := env.expert_action()) is not None:
        assert env.expert_source == "task_planner"
        _, reward, _, _, info = env.step(action)
        total += reward
    assert info["won"] is True and total == 1.0


def test_expert_plan_info_is_opt_in() -> None:
    e = ALFWorldEnv(split="valid_unseen", num_games=6, expert_plan=True)
    obs, info = e.reset(seed=0)
    plan = info["expert_plan"]
    assert plan and plan[0] in info["admissible_actions"]
    *_, info = e.step(plan[0])
    assert info["expert_plan"] == plan[1:]
    e.close()
    plain = ALFWorldEnv(split="valid_unseen", num_games=6)
    assert "expert_plan" not in plain.reset(seed=0)[1]
    plain.close()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


@pytest.mark.parametrize("action", ["x" * 100_000, "\ud800", "go to \udfff cabinet 1 " * 50])
def test_long_and_unencodable_actions_give_bounded_encodable_output(
    env: ALFWorldEnv, action: str
) -> None:
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert (obs, reward, info["is_action_valid"]) == ("Nothing happens.", 0.0, False)
    assert env.observation_space.contains(obs)
    for text in _strings(list(info.values())):
        text.encode("utf-8")


def test_unencodable_text_in_a_game_file_is_removed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    env = ALFWorldEnv(split="valid_unseen", num_games=6)
    path = env.games.record(0).path
    data = json.loads(path.read_text(encoding="utf-8"))
    data["grammar"] = data["grammar"].replace("ALFRED! =-", "ALFRED! \ud800=-")
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON's "\ud800" escape: legal JSON
    obs, info = env.reset(options={"task_id": env.games.record(0).task_id})
    assert obs.startswith("-= Welcome to TextWorld, ALFRED! =-")
    obs.encode("utf-8")
    for text in _strings(list(info.values())):
        text.encode("utf-8")
    env.close()


def test_step_limit_truncates_at_50() -> None:
    env = gym.make("AgentR1/ALFWorld-v0", split="valid_unseen", num_games=6)
    env.reset(seed=0)
    for step in range(1, 51):
        *_, terminated, truncated, info = env.step("look")
        assert terminated is False and truncated is (step == 50)
    env.close()


def test_task_types_filter_and_bad_arguments() -> None:
    env = ALFWorldEnv(split="valid_seen", num_games=12, task_types=["look_at_obj_in_light"])
    assert len(env.games) == 2
    assert env.reset(seed=0)[1]["task_type"] == "look_at_obj_in_light"
    with pytest.raises(ValueError, match="not in this env's game set"):
        env.reset(options={"task_id": "train/x/trial_gen_00001"})
    env.close()
    with pytest.raises(ValueError, match="unknown split"):
        ALFWorldEnv(split="test")
    with pytest.raises(ValueError, match="unknown task types"):
        ALFWorldEnv(task_types=["pick_and_place_with_movable_recep"])


def test_construction_is_lazy() -> None:
    code = (
        "import sys, gymnasium as gym, agent_gym; gym.register_envs(agent_gym); "
        "env = gym.make('AgentR1/ALFWorld-v0'); "
        "print('textworld' in sys.modules, 'fast_downward' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("fmt", ["tag", "tool_call", "plain"])
def test_prompt_templates_render_for_each_action_format(fmt: str) -> None:
    t = ALFWorldEnv.prompt_templates
    values = {
        "task": "put a clean mug in coffeemachine.",
        "observation": "You arrive at cabinet 1. The cabinet 1 is closed.",
        "history": [
            {"observation": "You are in the middle of a room.", "action": "go to cabinet 1"}
        ],
        "admissible_actions": ["go to cabinet 1", "help", "open cabinet 1"],
        "step": 1,
        "max_steps": 50,
        "action_format": fmt,
    }
    system = jinja2.Template(t.system).render(**values)
    user = jinja2.Template(t.user).render(**values)
    for section in (
        "### Task",
        "### Current Observation",
        "### History Actions",
        "### Admissible Commands",
        "### Instructions",
        "### Output Format",
    ):
        assert section in user
    assert "- open cabinet 1" in user and "- help" not in user
    assert "Step 2 of 50" in user and "{%" not in user + system
    assert ("<action>" in user) is (fmt == "tag")
    assert ("<tool_call>" in user) is (fmt == "tool_call") and ("env_step" in system) is (
        fmt == "tool_call"
    )


def test_prepare_is_idempotent(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_GYM_HOME", str(tmp_path))
    first = ALFWorldEnv.prepare(progress=False, split="valid_unseen", num_games=6)
    again = ALFWorldEnv.prepare(progress=False, split="valid_unseen", num_games=6)
    assert "6 new" in first and "0 new" in again and "not the official" in first
    assert len(list(tmp_path.rglob("game.tw-pddl"))) == 6
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize("split", ["train", "valid_seen", "valid_unseen"])
def test_broad_sweep_every_walkthrough_wins(split: str) -> None:
    # 8 games of every task type per split, solved by the generator's walkthrough.
    env = ALFWorldEnv(split=split, num_games=48)
    for k in range(len(env.games)):
        total, info, _ = _solve_with_expert(env, env.games.record(k).task_id)
        assert info["won"] and total == 1.0, info["task_id"]
    env.close()
