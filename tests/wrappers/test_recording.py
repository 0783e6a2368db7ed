import json
import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import pytest
from testing_env import GenericTextEnv, counting_spec

from agent_gym.wrappers import ChatPrompt, ParseAction, RecordEpisodes
from agent_gym.wrappers.recording import json_line, to_jsonable


def read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").splitlines()]


def play(env, seed, actions):
    env.reset(seed=seed)
    for action in actions:
        if any(env.step(action)[2:4]):
            break


def test_one_line_per_finished_episode(tmp_path) -> None:
    path = tmp_path / "runs" / "episodes.jsonl"
    env = RecordEpisodes(gym.make(counting_spec(max_episode_steps=3)), path)
    env.reset(options={"task_id": "count-to-2"})
    env.step("add 2")
    env.step("submit")
    play(env, 7, ["add 1"] * 5)  # truncated by the step limit after 3
    env.close()
    first, second = read(path)
    assert first["env_id"] == "AgentGymTest/Counting-v0"
    assert (first["task"], first["task_id"], first["seed"]) == (
        "Make the counter equal 2, then submit.",
        "count-to-2",
        None,
    )
    assert first["options"] == {"task_id": "count-to-2"}
    assert (first["return"], first["length"], first["won"], first["score"]) == (1.0, 2, True, 1.0)
    assert (first["terminated"], first["truncated"]) == (True, False)
    assert [s["prompt"] for s in first["steps"]] == ["The counter is 0.", "The counter is 2."]
    assert [s["action"] for s in first["steps"]] == ["add 2", "submit"]
    assert [s["reward"] for s in first["steps"]] == [0.0, 1.0]
    assert first["steps"][1]["info"]["anchor_obs"] == "counter=2"
    assert first["final_observation"] == "The counter is 2."
    assert first["reset_info"]["data_source"] == "generated:test-counting"
    assert (second["seed"], second["length"], second["truncated"], second["won"]) == (
        7,
        3,
        True,
        False,
    )


def test_unfinished_episodes_are_not_written(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    env = RecordEpisodes(gym.make(counting_spec()), path)
    env.reset(seed=0)
    env.step("add 1")
    env.reset(seed=1)  # abandons the first episode
    env.step("add 1")
    env.close()  # and the second
    assert not path.exists()


def test_chat_prompts_and_parse_infos_are_recorded(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    env = RecordEpisodes(ChatPrompt(ParseAction(gym.make(counting_spec()))), path)
    play(env, 0, ["nonsense", "<action>submit</action>"])
    env.close()
    (episode,) = read(path)
    assert episode["steps"][0]["prompt"][0]["role"] == "system"
    assert episode["steps"][0]["info"]["parse_error"] == "no <action>...</action> found"
    assert episode["steps"][1]["info"]["parsed_action"] == "submit"


HOSTILE = [
    "\ud800",
    "a\udfffb",
    "\x00\x1b[31m",
    "点击 ✓ 🛒",
    '"quote" \\ back',
    "\u2028 \u2029 \x85 \x0b \x1c",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_any_string_round_trips_as_valid_utf8_json(text: str) -> None:
    line = json_line({"action": text, text: [text]})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    line.decode("utf-8")  # strict: no surrogates leak into the file
    assert json.loads(line) == {"action": text, text: [text]}


def test_to_jsonable_handles_numpy_sets_bytes_and_nan() -> None:
    import numpy as np

    value = {
        1: np.float32(0.5),
        "a": np.arange(3),
        "s": {"b", "a"},
        "b": b"\xff",
        "n": float("nan"),
        "t": (np.bool_(True),),
        "o": object,
    }
    assert to_jsonable(value) == {
        "1": 0.5,
        "a": [0, 1, 2],
        "s": ["a", "b"],
        "b": "\\xff",
        "n": "nan",
        "t": [True],
        "o": "<class 'object'>",
    }


def test_hostile_actions_are_recorded(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    env = RecordEpisodes(GenericTextEnv(step_func=lambda env, a: (a, 0.0, True, False, {})), path)
    for text in HOSTILE:
        play(env, 0, [text])
    env.close()
    assert [e["steps"][0]["action"] for e in read(path)] == HOSTILE


def test_a_killed_run_leaves_only_complete_lines(tmp_path) -> None:
    path = tmp_path / "e.jsonl"
    code = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(__file__) + "/.."!r})
        from testing_env import GenericTextEnv
        from agent_gym.wrappers import RecordEpisodes
        big = "x" * 200_000  # lines far bigger than any pipe or page buffer
        env = RecordEpisodes(GenericTextEnv(step_func=lambda e, a: (big, 0.0, True, False, {{}})), {str(path)!r})
        for i in range(3):
            env.reset(seed=i)
            env.step(big)
        env.reset(seed=3)  # an episode in progress when the process dies
        os._exit(1)  # no close(), no atexit: as if the process were killed
    """)
    subprocess.run([sys.executable, "-c", code], check=False, timeout=120)
    data = path.read_bytes()
    assert data.endswith(b"\n")
    assert [e["seed"] for e in read(path)] == [0, 1, 2]
