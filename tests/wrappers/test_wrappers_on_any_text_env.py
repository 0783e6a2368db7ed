"""The wrappers on envs that are not agent-gym's: a plain Gymnasium text env and TextWorld's.

Neither env has ``prompt_templates``, ``tools`` or agent-gym's info keys, so these tests pin
the defaults: the generic prompt, the task taken from the first observation, the single
``env_step`` tool, and absent info keys read as absent.

TextWorld 1.7.0's own gym env (``textworld.gym.make``) still speaks the old ``gym`` API:
``reset()`` takes no seed and ``step`` returns ``(obs, score, done, infos)`` with a cumulative
score. :class:`OldGymToGymnasium` below adapts exactly that (reward = score increase,
``terminated = done``), and nothing else, so the wrappers see TextWorld's own observations and
infos (``admissible_commands``, ``objective``, ``won``).
"""

from __future__ import annotations

import json
import string

import gymnasium as gym
import pytest
from gymnasium import spaces

from agent_gym.core import ENV_STEP_TOOL
from agent_gym.wrappers import ChatPrompt, ParseAction, RecordEpisodes, ShapeReward
from agent_gym.wrappers.chat_prompt import DEFAULT_PROMPTS


class DoorEnv(gym.Env):
    """A room with a door, written against plain Gymnasium: ``open door`` wins.

    Infos are empty except where ``admissible`` is set; no agent-gym base class or info keys.
    """

    def __init__(self, admissible: bool = False) -> None:
        self.observation_space = spaces.Text(200, charset=string.printable)
        self.action_space = spaces.Text(200, charset=string.printable)
        self.admissible = admissible
        self.received: list[str] = []

    def _info(self) -> dict:
        return {"admissible_actions": ["open door", "look"]} if self.admissible else {}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.received = []
        return "You are in a room with a door.", self._info()

    def step(self, action):
        self.received.append(action)
        if action == "open door":
            return "The door opens. You are free.", 1.0, True, False, self._info()
        return f"Nothing happens when you {action}.", 0.0, False, False, self._info()


def door(admissible: bool = False, max_episode_steps: int | None = 4) -> gym.Env:
    env = DoorEnv(admissible)
    return gym.wrappers.TimeLimit(env, max_episode_steps) if max_episode_steps else env


TOOL_OPEN = '<tool_call>{"name": "env_step", "arguments": {"command": "open door"}}</tool_call>'


def test_parse_action_tag_format_on_a_plain_env() -> None:
    env = ParseAction(door())
    obs, info = env.reset(seed=0)
    assert info == {}
    obs, reward, terminated, truncated, info = env.step(
        "I should leave. <action>open door</action>"
    )
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert env.unwrapped.received == ["open door"]
    assert info == {
        "raw_action": info["raw_action"],
        "parsed_action": "open door",
        "parse_error": "",
    }


def test_parse_action_tool_call_defaults_to_the_env_step_tool() -> None:
    env = ParseAction(door(), format="tool_call")
    assert env.tools == (ENV_STEP_TOOL,)
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step(TOOL_OPEN)
    assert (reward, terminated, env.unwrapped.received) == (1.0, True, ["open door"])


def test_parse_action_failure_on_an_env_without_info_keys() -> None:
    env = ParseAction(door(max_episode_steps=2), format="tool_call")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("no tool call here")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["is_action_valid"] is False and "no <tool_call>" in info["parse_error"]
    assert obs.endswith("You are in a room with a door.")
    assert env.unwrapped.received == []  # never reached the env
    # The hand-applied TimeLimit's limit (no spec holds it) counts unparsed responses too.
    assert env.max_episode_steps == 2
    assert env.step("still nothing")[3] is True


def test_parse_action_admissible_matching_with_textworld_key() -> None:
    class Commands(DoorEnv):
        def _info(self):
            return {"admissible_commands": ["open door", "look"]}

    env = ParseAction(Commands(), format="plain", match="admissible")
    env.reset(seed=0)
    env.step('"Open door."')
    assert env.unwrapped.received == ["open door"]


def test_chat_prompt_default_template_task_is_the_first_observation() -> None:
    env = ChatPrompt(door(), history_length=1)
    messages, _ = env.reset(seed=0)
    rendered = DEFAULT_PROMPTS.user.replace("{{ task }}", "")  # sanity: the generic template
    assert "### Task" in rendered
    user = messages[1]["content"]
    assert user.startswith("### Task\nYou are in a room with a door.\n")
    assert "### Current observation\nYou are in a room with a door." in user
    assert "Admissible actions" not in user
    assert "Step 1 of 4." in user
    messages, *_ = env.step("look")
    user = messages[1]["content"]
    assert user.startswith("### Task\nYou are in a room with a door.\n")  # still the first obs
    assert "[Action 1] look" in user and "Nothing happens when you look." in user


def test_chat_prompt_lists_admissible_actions_when_the_env_has_them() -> None:
    messages, _ = ChatPrompt(door(admissible=True)).reset(seed=0)
    assert "### Admissible actions\n- open door\n- look\n" in messages[1]["content"]


def test_chat_prompt_tool_call_format_shows_the_env_step_schema() -> None:
    env = ChatPrompt(ParseAction(door(), format="tool_call"))
    messages, _ = env.reset(seed=0)
    assert '"name": "env_step"' in messages[0]["content"]
    assert env.tool_schemas == [ENV_STEP_TOOL.schema()]
    # Without ParseAction the default tool is listed too.
    alone = ChatPrompt(door(), action_format="tool_call")
    assert alone.tool_schemas == [ENV_STEP_TOOL.schema()]


def test_chat_prompt_refuses_non_text_observations() -> None:
    class Numbers(DoorEnv):
        def reset(self, *, seed=None, options=None):
            return 3, {}

    with pytest.raises(TypeError, match="text observations.*int"):
        ChatPrompt(Numbers()).reset()


def test_shape_reward_reads_missing_keys_as_absent() -> None:
    env = ShapeReward(door(), reward_scale=2.0, success_bonus=10.0, invalid_penalty=0.5)
    env.reset(seed=0)
    _, reward, *_, info = env.step("look")
    assert reward == 0.0 and info["raw_reward"] == 0.0  # no is_action_valid: valid
    _, reward, *_ = env.step("open door")
    assert reward == 2.0  # no "won" key: no success bonus, only the scaled raw reward
    parsed = ShapeReward(ParseAction(door()), invalid_penalty=0.5)
    parsed.reset(seed=0)
    assert parsed.step("no tags")[1] == -0.5  # ParseAction's is_action_valid=False


def test_record_episodes_on_a_plain_env(tmp_path) -> None:
    path = tmp_path / "episodes.jsonl"
    env = RecordEpisodes(ChatPrompt(ParseAction(door())), path)
    env.reset(seed=3)
    env.step("<action>look</action>")
    env.step("<action>open door</action>")
    env.close()
    (episode,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert (episode["task"], episode["task_id"], episode["data_source"]) == (None, None, None)
    assert (episode["return"], episode["length"], episode["won"], episode["score"]) == (
        1.0,
        2,
        False,
        None,
    )
    assert episode["seed"] == 3 and episode["terminated"] is True
    assert [s["info"]["parsed_action"] for s in episode["steps"]] == ["look", "open door"]


# ---- TextWorld's own gym env on a generated game ---------------------------------------


class OldGymToGymnasium(gym.Env):
    """TextWorld 1.7.0's old-API gym env as a Gymnasium env (see the module docstring)."""

    def __init__(self, env) -> None:
        self.tw = env
        self.observation_space = spaces.Text(100_000, charset=string.printable)
        self.action_space = spaces.Text(1000, charset=string.printable)
        self._score = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, infos = self.tw.reset()
        self._score = 0
        return obs, infos

    def step(self, action):
        obs, score, done, infos = self.tw.step(action)
        reward, self._score = score - self._score, score
        return obs, float(reward), bool(done), False, infos

    def close(self):
        self.tw.close()


@pytest.fixture(scope="module")
def textworld_game(tmp_path_factory) -> str:
    pytest.importorskip("textworld")
    import textworld.generator

    options = textworld.GameOptions()
    options.seeds = 1
    options.nb_rooms, options.nb_objects, options.quest_length = 2, 2, 1
    options.path = str(tmp_path_factory.mktemp("tw") / "game.z8")
    game = textworld.generator.make_game(options)
    return textworld.generator.compile_game(game, options)


def textworld_env(gamefile: str) -> gym.Env:
    import textworld.gym
    from textworld import EnvInfos

    infos = EnvInfos(admissible_commands=True, objective=True, won=True, policy_commands=True)
    env_id = textworld.gym.register_game(gamefile, infos, max_episode_steps=20)
    return OldGymToGymnasium(textworld.gym.make(env_id))


def test_wrapper_stack_plays_a_textworld_game(textworld_game: str, tmp_path) -> None:
    path = tmp_path / "tw.jsonl"
    env = ParseAction(textworld_env(textworld_game), format="tool_call", match="admissible")
    env = ShapeReward(env, reward_scale=0.0, success_bonus=10.0, invalid_penalty=0.1)
    env = RecordEpisodes(ChatPrompt(env, history_length=1), path)
    try:
        messages, info = env.reset(seed=0)
        user = messages[1]["content"]
        # TextWorld has no info["task"]: the task is its first observation (the intro text),
        # and its admissible_commands are listed.
        assert info["objective"] in user
        assert "### Admissible actions\n" in user
        assert all(f"- {c}\n" in user for c in info["admissible_commands"])
        assert '"name": "env_step"' in messages[0]["content"]
        # An unparseable response is penalised and never reaches the game.
        _, reward, terminated, _, info = env.step("hmm")
        assert (reward, terminated, info["is_action_valid"]) == (-0.1, False, False)
        # The walkthrough, as tool calls in a sloppy spelling that match="admissible" fixes.
        plan = info["policy_commands"]
        for command in plan:
            call = json.dumps({"name": "env_step", "arguments": {"command": command.upper() + "."}})
            _, reward, terminated, truncated, info = env.step(f"<tool_call>{call}</tool_call>")
            assert info["parsed_action"] == command
        assert terminated and info["won"] is True and reward == 10.0
    finally:
        env.close()
    (episode,) = [json.loads(line) for line in path.read_text().splitlines()]
    assert episode["won"] is True and episode["length"] == 1 + len(plan)
    assert episode["return"] == pytest.approx(10.0 - 0.1)
