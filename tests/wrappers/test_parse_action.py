import json
import time

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testing_env import CountingEnv, GenericTextEnv, assert_info_contract, counting_spec

from agent_gym.core import ENV_STEP_TOOL, ToolSpec
from agent_gym.wrappers import ActionParseError, ChatPrompt, ParseAction, parse_command
from agent_gym.wrappers.action_formats import (
    match_admissible,
    match_number,
    parse_calls,
    strip_think,
)

SEARCH = ToolSpec("search", "Search.", {"query": "the query"}, "search[{query}]")
EXPAND = ToolSpec("expand", "Expand.", {"paper_id": "the id"}, "expand[{paper_id}]")


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


# (response, expected command) for the tag format with multiple="first".
TAG_OK = [
    ("<action>look</action>", "look"),
    ("<think>the desk first</think><action>go to desk 1</action>", "go to desk 1"),
    ("<think>\nhmm\n</think>\n\n<action>\n  go to desk 1 \n</action>\n", "go to desk 1"),
    ("I will look around. <action>look</action> That should help.", "look"),  # prose around
    ("<thinking>plan</thinking><action>look</action>", "look"),  # <thinking> reads as <think>
    ("<ACTION>look</ACTION>", "look"),
    ("<action >look</ action>", "look"),
    ("reasoning the template opened</think><action>look</action>", "look"),  # Qwen3/R1 style
    ("<think>maybe <action>open drawer</action>?</think><action>look</action>", "look"),
    ("<action>look</action><action>inventory</action>", "look"),  # doubled: first wins
    ("<action>search[red\nshoes]</action>", "search[red shoes]"),  # one call = one line
    ("<action>a \r\n\u2028 b</action>", "a b"),
    ("<action>点击[购买] ✓</action>", "点击[购买] ✓"),
    ("<action>click[<b>Buy</b>]</action>", "click[<b>Buy</b>]"),
]

# (response, words the parse error must contain) for the tag format.
TAG_BAD = [
    ("", "no <action>"),
    ("look", "no <action>"),
    ("<action>look", "never closed"),
    ("look</action>", "no matching"),
    ("<action><action>look</action></action>", "opened again"),
    ("<action>look</action><action>", "never closed"),
    ("<action>   </action>", "empty"),
    ("<action></action><action>look</action>", "empty"),
    ("<think>unfinished reasoning <action>look</action>", "'<think>' is never closed"),
    ("<think>a</think></think><action>look</action>", "no matching"),
    ("<thinking>only thoughts</thinking>", "no <action>"),
    ("<act>look</act>", "no <action>"),
    ("<actions>look</actions>", "no <action>"),
]


@pytest.mark.parametrize(("text", "expected"), TAG_OK)
def test_tag_format_reads_the_action(text: str, expected: str) -> None:
    assert parse_command(text, "tag") == expected


@pytest.mark.parametrize(("text", "why"), TAG_BAD)
def test_tag_format_rejects_malformed_responses(text: str, why: str) -> None:
    with pytest.raises(ActionParseError, match=why.replace("[", r"\[")):
        parse_command(text, "tag")


TOOL_OK = [
    (call("env_step", command="go to desk 1"), "go to desk 1"),
    (
        "<think>x</think>\n<tool_call>\n"
        + '{"name": "env_step", "arguments": {"command": "look"}}'
        + "\n</tool_call>",
        "look",
    ),
    (
        '<tool_call>{"name": "env_step", "arguments": "{\\"command\\": \\"look\\"}"}</tool_call>',
        "look",
    ),  # OpenAI string args
    (
        '<tool_call>{"name": "env_step", "arguments": {"command": "look", "why": "x"}}</tool_call>',
        "look",
    ),
    ('<tool_call>{"name": "env_step", "arguments": {"command": 7}}</tool_call>', "7"),
    ("Sure! " + call("env_step", command="look") + " done", "look"),
    (call("env_step", command="look") + call("env_step", command="inventory"), "look"),  # first
    (call("env_step", command="look") + "<tool_call>{broken</tool_call>", "look"),  # rest ignored
]

TOOL_BAD = [
    ("", "no <tool_call>"),
    ('{"name": "env_step", "arguments": {"command": "look"}}', "no <tool_call>"),  # no tags
    ("<tool_call>{not json</tool_call>", "invalid JSON"),
    (call("env_step", command="look") + "<tool_call>", "never closed"),  # tags must balance
    ("<tool_call></tool_call>", "invalid JSON"),
    ('<tool_call>{"name": "env_step", "arguments": {"command": "look"}}', "never closed"),
    ('<tool_call>["env_step", "look"]</tool_call>', "JSON object"),
    ('<tool_call>{"arguments": {"command": "look"}}</tool_call>', "JSON object"),
    (call("go", command="look"), "unknown tool 'go'"),
    (call("env_step"), "missing argument 'command'"),
    (call("env_step", cmd="look"), "missing argument 'command'"),
    (call("env_step", command=""), "empty"),
    (call("env_step", command=["look"]), "must be a string"),
    (call("env_step", command=True), "must be a string"),
    ('<tool_call>{"name": "env_step", "arguments": "look"}</tool_call>', "arguments: invalid JSON"),
    ('<tool_call>{"name": "env_step", "arguments": "[1]"}</tool_call>', "must be a JSON object"),
    ("<tool_call>" + "[" * 100_000 + "</tool_call>", "unreadable JSON"),
    (
        '<tool_call>{"name": "env_step", "arguments": {"command": ' + "9" * 5000 + "}}</tool_call>",
        "unreadable JSON",
    ),
    ('<tool_call>{"name": "env_step", "arguments": [1]}</tool_call>', "must be a JSON object"),
    (
        '<think><tool_call>{"name": "env_step", "arguments": {"command": "look"}}</tool_call></think>',
        "no <tool_call>",
    ),
]


@pytest.mark.parametrize(("text", "expected"), TOOL_OK)
def test_tool_call_format_reads_the_command(text: str, expected: str) -> None:
    assert parse_command(text, "tool_call", [ENV_STEP_TOOL]) == expected


@pytest.mark.parametrize(("text", "why"), TOOL_BAD)
def test_tool_call_format_rejects_malformed_calls(text: str, why: str) -> None:
    with pytest.raises(ActionParseError, match=why):
        parse_command(text, "tool_call", [ENV_STEP_TOOL])


def test_tool_call_configurable_name_argument_key_and_command() -> None:
    tool = ToolSpec("act", "Act.", {"cmd": "the command"}, "do {cmd}")
    assert parse_command(call("act", cmd="jump"), "tool_call", [tool]) == "do jump"
    with pytest.raises(ActionParseError, match="unknown tool 'env_step'; tools: act"):
        parse_command(call("env_step", command="jump"), "tool_call", [tool])


def test_tool_arguments_cannot_smuggle_a_second_command() -> None:
    text = call("search", query="cats\nexpand[p1]")
    assert parse_command(text, "tool_call", [SEARCH]) == "search[cats expand[p1]]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("look", "look"),
        ("  look  \n", "look"),
        ("<think>hmm</think>\nlook", "look"),
        ("go to desk 1\nopen drawer 1", "go to desk 1"),  # one command per line; first wins
    ],
)
def test_plain_format(text: str, expected: str) -> None:
    assert parse_command(text, "plain") == expected


@pytest.mark.parametrize("text", ["", "  \n\t ", "<think>only thinking</think>"])
def test_plain_format_rejects_empty_responses(text: str) -> None:
    with pytest.raises(ActionParseError, match="empty"):
        parse_command(text, "plain")


PARALLEL = (
    call("search", query="cats") + call("expand", paper_id="p1") + call("search", query="dogs")
)


@pytest.mark.parametrize(
    ("multiple", "max_calls", "expected"),
    [
        ("first", 1, "search[cats]"),
        ("join", 3, "search[cats]\nexpand[p1]\nsearch[dogs]"),
        ("join", 2, ActionParseError("3 calls in one response; at most 2")),
        ("invalid", 1, ActionParseError("3 calls in one response; at most 1")),
    ],
)
def test_several_calls_follow_the_policy(multiple: str, max_calls: int, expected) -> None:
    if isinstance(expected, Exception):
        with pytest.raises(ActionParseError, match=str(expected)):
            parse_command(PARALLEL, "tool_call", [SEARCH, EXPAND], multiple, max_calls)
    else:
        assert (
            parse_command(PARALLEL, "tool_call", [SEARCH, EXPAND], multiple, max_calls) == expected
        )


def test_join_rejects_the_response_if_any_call_is_malformed() -> None:
    text = call("search", query="cats") + "<tool_call>{oops</tool_call>"
    with pytest.raises(ActionParseError, match="tool call 2: invalid JSON"):
        parse_command(text, "tool_call", [SEARCH], "join", 4)


def test_unknown_format_and_policy_raise_value_error() -> None:
    with pytest.raises(ValueError, match="unknown action format 'xml'"):
        parse_calls("x", "xml")
    with pytest.raises(ValueError, match="unknown multiple"):
        parse_command("<action>x</action>", "tag", multiple="all")


@pytest.mark.parametrize(
    "text",
    [
        "<action>" * 30_000,
        "<think>" * 30_000,
        "<tool_call>" * 30_000,
        "</think>" + "<" * 100_000,
        "<action>a" + " " * 100_000 + "b</action>",
        "<action>" + " \n" * 50_000 + "</action>",
        '<tool_call>{"name": "env_step", "arguments": {"command": "a'
        + " " * 100_000
        + 'b"}}</tool_call>',
    ],
)
@pytest.mark.parametrize("format", ["tag", "tool_call", "plain"])
def test_pathological_responses_parse_in_linear_time(text: str, format: str) -> None:
    start = time.perf_counter()
    try:
        parse_command(text, format, [ENV_STEP_TOOL])
    except ActionParseError:
        pass
    # Generous bound: the regex scan of ~300 kB takes milliseconds; quadratic would take minutes.
    assert time.perf_counter() - start < 5.0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('<>/actionthinkg_ {}":[]x\n')) | st.characters()))
def test_any_text_parses_or_raises_action_parse_error(text: str) -> None:
    for format in ("tag", "tool_call", "plain"):
        try:
            command = parse_command(text, format, [ENV_STEP_TOOL], "join", 3)
        except ActionParseError:
            continue
        assert command.strip() and all(line.strip() for line in command.split("\n"))


def test_strip_think_keeps_text_outside_blocks() -> None:
    assert strip_think("a<think>b</think>c<thinking>d</thinking>e") == "ace"


# --- the wrapper -----------------------------------------------------------------------------


def make(max_steps: int | None = 4, **kwargs) -> gym.Env:
    return ParseAction(gym.make(counting_spec(max_episode_steps=max_steps)), **kwargs)


def test_valid_response_steps_the_env_with_the_command() -> None:
    env = make()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<think>up</think><action>add 2</action>")
    assert obs == "The counter is 2."
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["is_action_valid"] is True
    assert info["raw_action"] == "<think>up</think><action>add 2</action>"
    assert info["parsed_action"] == "add 2"
    assert info["parse_error"] == ""
    assert_info_contract(info)


def test_parse_failure_does_not_reach_the_env() -> None:
    env = make()
    _, reset_info = env.reset(seed=0)
    env.step("<action>add 1</action>")
    counting = env.unwrapped
    before = (counting.counter, counting.num_steps)
    obs, reward, terminated, truncated, info = env.step("add 1")  # no tags
    assert (counting.counter, counting.num_steps) == before
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert obs.startswith("Invalid response: no <action>...</action> found.")
    assert obs.endswith("\n\nThe counter is 1.")  # the current observation, repeated
    assert info["is_action_valid"] is False
    assert info["raw_action"] == "add 1"
    assert info["parsed_action"] == ""
    assert info["parse_error"] == "no <action>...</action> found"
    assert info["anchor_obs"] == "counter=1"  # the state did not change
    assert info["task_id"] == reset_info["task_id"]
    assert_info_contract(info)


def test_repeated_failures_do_not_nest_the_explanation() -> None:
    env = make(max_steps=10)
    env.reset(seed=0)
    env.step("x")
    obs = env.step("y")[0]
    assert obs.count("Invalid response") == 1


def test_failure_right_after_reset_reuses_the_reset_info() -> None:
    env = make()
    _, reset_info = env.reset(seed=3)
    info = env.step("")[4]
    assert {k: info[k] for k in reset_info} == reset_info
    assert info["is_action_valid"] is False


def test_a_run_of_parse_failures_is_truncated_at_the_step_limit() -> None:
    env = make(max_steps=4)
    env.reset(seed=0)
    flags = [env.step("no tags")[2:4] for _ in range(4)]
    assert flags == [(False, False)] * 3 + [(False, True)]
    assert env.unwrapped.num_steps == 0


def test_valid_and_invalid_steps_count_together() -> None:
    env = make(max_steps=3)
    env.reset(seed=0)
    assert env.step("junk")[3] is False
    assert env.step("<action>add 1</action>")[3] is False
    assert env.step("<action>add 1</action>")[3] is True  # 3rd response: the limit
    env.reset(seed=0)  # the count restarts
    assert env.step("junk")[3] is False


def test_max_episode_steps_overrides_the_spec_and_none_means_no_limit() -> None:
    env = make(max_steps=None, max_episode_steps=2)
    env.reset(seed=0)
    assert [env.step("x")[3] for _ in range(2)] == [False, True]
    bare = ParseAction(GenericTextEnv())
    bare.reset(seed=0)
    assert not any(bare.step("x")[3] for _ in range(20))


def test_join_is_the_default_for_envs_that_take_several_commands() -> None:
    env = make(format="tool_call")  # CountingEnv.max_parallel_calls == 3
    assert (env.multiple, env.max_calls) == ("join", 3)
    env.reset(seed=0)
    text = call("add", amount="2") + call("add", amount="1") + call("submit")
    obs, reward, terminated, _, info = env.step(text)
    assert info["parsed_action"] == "add 2\nadd 1\nsubmit"
    assert env.unwrapped.counter == 3 and terminated


def test_first_is_the_default_for_single_command_envs() -> None:
    env = ParseAction(GenericTextEnv())
    assert (env.multiple, env.max_calls) == ("first", 1)
    assert env.tools == (ENV_STEP_TOOL,)


def test_wrapper_validates_its_arguments() -> None:
    with pytest.raises(ValueError, match="unknown action format"):
        make(format="json")
    with pytest.raises(ValueError, match="unknown multiple"):
        make(multiple="some")
    with pytest.raises(ValueError, match="max_calls"):
        make(max_calls=0)
    with pytest.raises(ValueError, match="needs tools"):
        make(format="tool_call", tools=[])
    with pytest.raises(ValueError, match=r"ChatPrompt\(ParseAction\(env\)\)"):
        ParseAction(ChatPrompt(GenericTextEnv()))


def test_non_str_actions_raise_type_error_and_step_needs_reset() -> None:
    env = make()
    with pytest.raises(gym.error.ResetNeeded):
        env.step("<action>add 1</action>")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="must be str"):
        env.step(b"<action>add 1</action>")


def test_records_constructor_args_for_the_spec() -> None:
    env = make(format="plain", multiple="invalid")
    wrapper_spec = env.spec.additional_wrappers[-1]
    assert wrapper_spec.name == "ParseAction"
    assert wrapper_spec.kwargs["format"] == "plain"
    assert wrapper_spec.kwargs["multiple"] == "invalid"


def test_counting_env_plays_to_a_win_through_the_parser() -> None:
    env = make(max_steps=6)
    _, info = env.reset(options={"task_id": "count-to-3"})
    for text in ["<action>add 2</action>", "<action>add 1</action>", "<action>submit</action>"]:
        _, reward, terminated, _, info = env.step(text)
    assert (reward, terminated, info["won"]) == (1.0, True, True)
    assert isinstance(env.unwrapped, CountingEnv)


# ---- match="admissible": the opt-in lenient reading --------------------------------------

ADMISSIBLE = ["go to desk 1", "take mug 2 from desk 1", "look"]

# (response, what match_admissible returns) against ADMISSIBLE.
LENIENT = [
    ("go to desk 1", "go to desk 1"),
    ("Go to desk 1", "go to desk 1"),  # case
    ("GO  TO   DESK 1", "go to desk 1"),  # runs of spaces
    ('"go to desk 1"', "go to desk 1"),  # quotes
    ("`look`", "look"),  # backticks
    ("go to desk 1.", "go to desk 1"),  # trailing punctuation
    ("'Look!'", "look"),
    ("- go to desk 1", "go to desk 1"),  # a list marker copied from the prompt
    ("2. take mug 2 from desk 1", "take mug 2 from desk 1"),
    ("\n\n  look  \nthen go to desk 1", "look"),  # first non-empty line only
    ('"`go to desk 1`."', "go to desk 1"),  # nested wrappers, stripped until stable
    ("go to desk", None),  # no prefix matching
    ("go to the desk 1", None),  # no fuzzy matching
    ("I will go to desk 1", None),  # prose around a command is not read
    ("look around", None),
    ("", None),
    ("   \n  ", None),
]


@pytest.mark.parametrize(("text", "expected"), LENIENT)
def test_match_admissible_is_lenient_about_spelling_only(text: str, expected: str | None) -> None:
    assert match_admissible(text, ADMISSIBLE) == expected


def test_match_admissible_without_admissible_actions_matches_nothing() -> None:
    assert match_admissible("look", []) is None


def test_admissible_mode_sends_the_admissible_spelling() -> None:
    env = ParseAction(
        gym.make(counting_spec()), format="plain", match="admissible", multiple="first"
    )
    env.reset(options={"task_id": "count-to-3"})
    obs, _, _, _, info = env.step('"Add 2."\nand then submit')
    assert info["is_action_valid"] and info["parsed_action"] == "add 2"
    assert obs == "The counter is 2."
    # No match: the parsed command goes to the env as written, and the env rejects it.
    _, _, _, _, info = env.step("Add three")
    assert not info["is_action_valid"] and info["parsed_action"] == "Add three"


def test_strict_mode_is_the_default_and_sends_the_text_as_written() -> None:
    env = ParseAction(gym.make(counting_spec()), format="plain")
    assert env.match == "strict"
    env.reset(options={"task_id": "count-to-3"})
    _, _, _, _, info = env.step('"Add 2."')
    assert not info["is_action_valid"] and info["parsed_action"] == '"Add 2."'


def test_admissible_mode_reads_inside_tags_too() -> None:
    env = ParseAction(gym.make(counting_spec()), format="tag", match="admissible")
    env.reset(options={"task_id": "count-to-3"})
    _, _, _, _, info = env.step("<action>ADD 1</action>")
    assert info["is_action_valid"] and info["parsed_action"] == "add 1"
    _, _, _, _, info = env.step("ADD 1")  # still no tag: a parse failure, as in strict mode
    assert not info["is_action_valid"] and info["parse_error"]


def test_admissible_mode_matches_each_joined_call() -> None:
    env = ParseAction(gym.make(counting_spec()), format="plain", match="admissible")
    assert env.multiple == "join"  # the counting env takes one command per line
    env.reset(options={"task_id": "count-to-3"})
    _, _, _, _, info = env.step("Add 1.\n- add 2")
    assert info["is_action_valid"] and info["parsed_action"] == "add 1\nadd 2"


def test_unknown_match_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown match='fuzzy'"):
        ParseAction(gym.make(counting_spec()), format="plain", match="fuzzy")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2", "b"), (" 2. ", "b"), ("(2)", "b"), ("[3]", "c"), ("#1", "a"), ('"2"', "b"),
     ("2)\nthen more", "b"), ("0", None), ("4", None), ("2 3", None), ("two", None),
     ("go to 2", None), ("", None), ("-1", None)],
)  # fmt: skip
def test_match_number_reads_a_number_alone_within_range(text: str, expected: str | None) -> None:
    assert match_number(text, ["a", "b", "c"]) == expected


def _first_two(info: dict) -> list[str]:
    return list(reversed(info["admissible_actions"]))[:2]


def test_number_mode_offers_choices_and_sends_the_numbered_command() -> None:
    env = ParseAction(gym.make(counting_spec()), format="plain", match="number")
    _, info = env.reset(options={"task_id": "count-to-3"})
    assert info["choices"] == info["admissible_actions"]  # default: every admissible command
    second = info["choices"][1]
    _, _, _, _, info = env.step("2")
    assert info["is_action_valid"] and info["parsed_action"] == second
    assert "choices" in info
    _, _, _, _, info = env.step("add 1")  # a command written out is still read leniently
    assert info["is_action_valid"] and info["parsed_action"] == "add 1"
    _, _, _, _, info = env.step("99")  # no such number: sent as written, and invalid
    assert not info["is_action_valid"] and info["parsed_action"] == "99"
    # A custom list: the numbers are its own.
    env = ParseAction(gym.make(counting_spec()), format="plain", match="number", choices=_first_two)
    _, info = env.reset(options={"task_id": "count-to-3"})
    assert info["choices"] == _first_two(info) and len(info["choices"]) == 2
    first = info["choices"][0]
    _, _, _, _, info = env.step("1")
    assert info["parsed_action"] == first


def test_choices_that_are_not_a_list_of_commands_are_named_at_reset() -> None:
    """A function giving a string or non-strings was a TypeError deep in a step, or numbered
    the string's characters."""
    for bad, gave in (
        (lambda info: "add 1", "str 'add 1'"),
        (lambda info: [1], "int 1"),
        (lambda info: ["add 1", None], "NoneType None"),
        (lambda info: None, "NoneType None"),
    ):
        env = ParseAction(gym.make(counting_spec()), format="plain", match="number", choices=bad)
        with pytest.raises(ValueError, match=f"must return the commands on offer.*gave {gave}"):
            env.reset(options={"task_id": "count-to-3"})


def test_choices_without_number_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="choices are read by match='number' only"):
        ParseAction(gym.make(counting_spec()), format="plain", choices=_first_two)
