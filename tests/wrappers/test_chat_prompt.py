import json

import gymnasium as gym
import jinja2
import pytest
from testing_env import GenericTextEnv, counting_spec

from agent_gym.core import PromptTemplates
from agent_gym.spaces import Messages
from agent_gym.wrappers import ChatPrompt, ParseAction
from agent_gym.wrappers.chat_prompt import COMPACT_PROMPTS

# A template that prints every variable, so tests can compare whole strings.
PLAIN = PromptTemplates(
    system="fmt={{ action_format }}",
    user=(
        "T={{ task }}|O={{ observation }}|"
        "H={% for h in history %}({{ h.observation }}->{{ h.action }}){% endfor %}|"
        "A={{ admissible_actions | join(',') }}|S={{ step }}/{{ max_steps }}"
    ),
)


def make(history_length: int = 2, format: str = "tag", max_steps: int = 6, **kwargs) -> ChatPrompt:
    env = ParseAction(gym.make(counting_spec(max_episode_steps=max_steps)), format=format)
    return ChatPrompt(env, history_length=history_length, **kwargs)


def user(messages: list[dict]) -> str:
    return messages[1]["content"]


def test_reset_renders_system_and_user_messages() -> None:
    env = make(templates=PLAIN)
    messages, info = env.reset(options={"task_id": "count-to-3"})
    assert messages == [
        {"role": "system", "content": "fmt=tag"},
        {
            "role": "user",
            "content": "T=Make the counter equal 3, then submit.|O=The counter is 0.|H=|"
            "A=add 1,add 2,submit|S=0/6",
        },
    ]
    assert env.observation_space.contains(messages)
    assert isinstance(env.observation_space, Messages)
    assert info["anchor_obs"] == "counter=0"


def test_history_keeps_the_last_k_pairs_oldest_first() -> None:
    env = make(history_length=2, templates=PLAIN)
    env.reset(options={"task_id": "count-to-5"})
    env.step("<action>add 1</action>")
    env.step("oops")
    messages = env.step("<think>go</think><action>add 2</action>")[0]
    invalid = (
        "Invalid response: no <action>...</action> found. Write your action as "
        "<action>command</action>. Nothing happened.\n\nThe counter is 1."
    )
    assert user(messages) == (
        "T=Make the counter equal 5, then submit.|O=The counter is 3.|"
        f"H=(The counter is 1.->(invalid: no <action>...</action> found))({invalid}->add 2)|"
        "A=add 1,add 2,submit|S=3/6"
    )


def test_history_length_zero_shows_no_history() -> None:
    env = make(history_length=0, templates=PLAIN)
    env.reset(seed=0)
    env.step("<action>add 1</action>")
    assert "|H=|" in user(env.step("<action>add 1</action>")[0])


def test_reset_clears_the_history() -> None:
    env = make(templates=PLAIN)
    env.reset(seed=0)
    env.step("<action>add 1</action>")
    assert "|H=|" in user(env.reset(seed=0)[0])


def test_info_and_rewards_pass_through_unchanged() -> None:
    inner = ParseAction(gym.make(counting_spec()))
    inner.reset(options={"task_id": "count-to-1"})
    expected = inner.step("<action>add 1</action>")
    env = make()
    env.reset(options={"task_id": "count-to-1"})
    got = env.step("<action>add 1</action>")
    assert got[1:] == expected[1:]
    assert got[4]["anchor_obs"] == "counter=1"


def test_generic_template_lists_task_history_and_admissible_actions() -> None:
    env = make()
    env.reset(options={"task_id": "count-to-2"})
    messages = env.step("<action>add 1</action>")[0]
    text = user(messages)
    assert "### Task\nMake the counter equal 2, then submit." in text
    assert "[Observation 1] The counter is 0.\n[Action 1] add 1" in text
    assert "### Current observation\nThe counter is 1." in text
    assert "### Admissible actions\n- add 1\n- add 2\n- submit" in text
    assert "Step 2 of 6." in text
    assert "<action>" in messages[0]["content"]


def test_tool_call_format_lists_tool_schemas_in_the_system_prompt() -> None:
    env = make(format="tool_call")
    system = env.reset(seed=0)[0][0]["content"]
    schemas = [tool.schema() for tool in env.unwrapped.tools]
    block = system[system.index("<tools>\n") + 8 : system.index("\n</tools>")]
    assert [json.loads(line) for line in block.split("\n")] == schemas
    assert (
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
        in system
    )
    assert env.tool_schemas == schemas


def test_tools_can_be_left_to_the_chat_template() -> None:
    env = make(format="tool_call", tools_in_system=False)
    assert "<tools>" not in env.reset(seed=0)[0][0]["content"]
    assert env.get_wrapper_attr("tool_schemas")[0]["function"]["name"] == "add"


def test_action_format_follows_the_parser_and_must_match_it() -> None:
    assert make(format="tool_call").action_format == "tool_call"
    with pytest.raises(ValueError, match="does not read"):
        make(format="tag", action_format="tool_call")
    with pytest.raises(ValueError, match="unknown action_format"):
        ChatPrompt(GenericTextEnv(), action_format="json")
    with pytest.raises(ValueError, match="history_length"):
        ChatPrompt(GenericTextEnv(), history_length=-1)


def test_lone_surrogates_from_a_tool_call_become_replacement_characters() -> None:
    # The JSON escape decodes to a lone surrogate in the command, which the history shows; a
    # tokenizer refuses a prompt that holds one (it does not encode as UTF-8).
    env = make(format="tool_call", templates=PLAIN)
    env.reset(options={"task_id": "count-to-3"})
    call = '<tool_call>{"name": "add", "arguments": {"amount": "\\ud800"}}</tool_call>'
    messages, *_, info = env.step(call)
    assert info["parsed_action"] == "add \ud800"
    assert "->add \ufffd)" in user(messages)
    for message in messages:
        message["content"].encode("utf-8")


def test_without_parse_action_history_shows_the_raw_action() -> None:
    env = ChatPrompt(GenericTextEnv(), templates=PLAIN)
    env.reset(seed=0)
    assert "(start->look)" in user(env.step("look")[0])
    assert env.action_format == "tag" and env.max_steps is None


def test_max_observation_chars_cuts_current_and_past_observations() -> None:
    long_obs = GenericTextEnv(
        reset_func=lambda env, seed, options: ("x" * 50, {}),
        step_func=lambda env, action: ("y" * 50, 0.0, False, False, {}),
    )
    env = ChatPrompt(long_obs, templates=PLAIN, max_observation_chars=10)
    env.reset(seed=0)
    text = user(env.step("go")[0])
    assert "O=yyyyyyyyyy [...]|" in text
    assert "(xxxxxxxxxx [...]->go)" in text


def test_max_action_chars_cuts_the_actions_the_history_shows() -> None:
    env = ChatPrompt(
        GenericTextEnv(),
        templates=PLAIN,
        history_length=2,
        max_action_chars=4,
        max_observation_chars=20,
    )  # fmt: skip (this env echoes the action too)
    env.reset(seed=0)
    env.step("z" * 1_000_000)
    text = user(env.step("look")[0])
    assert "->zzzz [...])" in text and "->look)" in text and len(text) < 200


def test_templates_see_the_env_info() -> None:
    templates = PromptTemplates(system="s", user="{{ info.task_id }} {{ tools | length }}")
    env = make(templates=templates)
    assert user(env.reset(options={"task_id": "count-to-4"})[0]) == "count-to-4 2"


def test_template_typos_fail_loudly() -> None:
    env = make(templates=PromptTemplates(system="s", user="{{ taks }}"))
    with pytest.raises(jinja2.UndefinedError, match="taks"):
        env.reset(seed=0)


def test_env_default_templates_are_used() -> None:
    custom = PromptTemplates(system="custom system", user="obs: {{ observation }}")
    env = ChatPrompt(GenericTextEnv(prompt_templates=custom))
    assert env.reset(seed=0)[0] == [
        {"role": "system", "content": "custom system"},
        {"role": "user", "content": "obs: start"},
    ]


def test_messages_can_be_rendered_with_less_history() -> None:
    env = make(history_length=2, templates=PLAIN)
    env.reset(options={"task_id": "count-to-5"})
    env.step("<action>add 1</action>")
    env.step("<action>add 1</action>")
    assert "H=(The counter is 1.->add 1)|" in user(env.messages(history_length=1))
    assert "|H=|" in user(env.messages(history_length=0))
    assert env.messages() == env.messages(history_length=5)


def test_history_property_is_a_copy_of_the_kept_pairs() -> None:
    env = make(history_length=2, templates=PLAIN)
    env.reset(options={"task_id": "count-to-5"})
    env.step("<action>add 1</action>")
    env.step("<action>add 2</action>")
    env.step("<action>add 1</action>")
    assert [h["action"] for h in env.history] == ["add 2", "add 1"]
    env.history.clear()  # a copy: the wrapper's own history is untouched
    assert len(env.history) == 2


def test_compact_prompt_lists_the_commands_last() -> None:
    env = make(history_length=1, format="plain", templates=COMPACT_PROMPTS)
    env.reset(options={"task_id": "count-to-3"})
    messages, *_ = env.step("add 1")
    assert messages[0]["content"] == (
        "You act in a text environment. Reply with one command copied from the list."
    )
    assert user(messages) == (
        "Task: Make the counter equal 3, then submit.\n\n"
        "The counter is 0.\n> add 1\n\n"  # the observation, then the command sent on it
        "The counter is 1.\n\n"
        "Commands:\nadd 1\nadd 2\nsubmit\n\n"
        "Copy the one command that best advances the task:"
    )
