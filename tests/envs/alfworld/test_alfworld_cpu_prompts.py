"""The terse and focused ALFWorld prompts for small models: what they show and leave out."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agent_gym  # noqa: F401
from agent_gym.envs.alfworld.prompts import FOCUSED_PROMPTS, SEARCH_PROMPTS, TERSE_PROMPTS
from agent_gym.wrappers import ChatPrompt, ParseAction


def _play(templates, steps: int):
    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    wrapped = ChatPrompt(ParseAction(env, format="plain"), history_length=0,
                         action_format="plain", templates=templates)  # fmt: skip
    obs, info = wrapped.reset(seed=0)
    seen = [(obs[1]["content"], info)]
    for _ in range(steps):
        obs, _, term, trunc, info = wrapped.step(env.unwrapped.expert_action())
        seen.append((obs[1]["content"], info))
        if term or trunc:
            break
    wrapped.close()
    return seen


@pytest.mark.parametrize("templates", [TERSE_PROMPTS, FOCUSED_PROMPTS])
def test_the_task_once_places_as_a_list_and_no_banner(templates):
    for text, info in _play(templates, 5):
        assert text.count(info["task"]) == 1 and "Welcome to TextWorld" not in text
        places = [a[6:] for a in info["admissible_actions"] if a.startswith("go to ")]
        assert "Go to: " + ", ".join(places) in text
        assert "inventory" not in text and "examine" not in text


def test_focused_lists_only_the_tasks_object_and_receptacle():
    task = None
    for text, info in _play(FOCUSED_PROMPTS, 5):
        task = info["task"]  # "put some handtowel on sinkbasin."
        obj, dest = task.rstrip(".").split()[2], task.rstrip(".").split()[4]
        other = text.split("Other: ")[1]
        for a in info["admissible_actions"]:
            if a.startswith("take "):
                assert (a in other) == a.startswith(f"take {obj} ")
            if a.startswith("move "):
                assert (a in other) == (a.startswith(f"move {obj} ") and f" to {dest} " in a + " ")
            if a.startswith(("open ", "close ")):
                assert a in other
    assert task is not None


def _shown(observation: str) -> str:
    """An observation as the terse prompts show it (no banner, task line or room list)."""
    text = observation.split("Your task is to:")[0].split(" Looking quickly around you")[0]
    return text.replace("-= Welcome to TextWorld, ALFRED! =-", "").strip()


@pytest.mark.parametrize("templates", [TERSE_PROMPTS, FOCUSED_PROMPTS])
def test_history_shows_each_command_after_the_observation_it_answered(templates):
    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    wrapped = ChatPrompt(ParseAction(env, format="plain"), history_length=2,
                         action_format="plain", templates=templates)  # fmt: skip
    wrapped.reset(seed=0)
    for _ in range(3):
        obs, *_ = wrapped.step(env.unwrapped.expert_action())
    text = obs[1]["content"]
    (o1, a1), (o2, a2) = ((h["observation"], h["action"]) for h in wrapped.history)
    wrapped.close()
    assert "Welcome to TextWorld" not in text and text.count("Your task is to") == 0
    # Reading order: observation, > the command sent on it, its result, > the next command, ...
    order = [text.index(_shown(o1)), text.index("> " + a1), text.index(_shown(o2)),
             text.index("> " + a2)]  # fmt: skip
    assert order == sorted(order), text


class _LastText(gym.Wrapper):
    """Keeps the raw text of the last observation."""

    def step(self, action):
        out = super().step(action)
        self.text = out[0]
        return out


def test_search_prompt_marks_the_places_looked_into_and_shows_no_history():
    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    last = _LastText(ParseAction(env, format="plain"))
    wrapped = ChatPrompt(last, history_length=10, action_format="plain", templates=SEARCH_PROMPTS)
    _, info = wrapped.reset(seed=5)
    looked, closed = [], []  # places whose inside was shown / that were closed
    for _ in range(6):
        place = next(a[6:] for a in info["admissible_actions"] if a.startswith("go to ")
                     and a[6:] not in looked + closed)  # fmt: skip
        obs, _, _, _, info = wrapped.step("go to " + place)
        (looked if "you see" in last.text else closed).append(place)
    text = obs[1]["content"]
    wrapped.close()
    assert "> " not in text and text.count(info["task"]) == 1
    for place in text.split("Go to: ")[1].split("\n")[0].split(", "):
        name = place.removesuffix(" (searched)")
        assert place.endswith(" (searched)") == (name in looked), (place, text)
    assert len(looked) > 1 and closed, "seed 5 shows open and closed places"


def _choice_env(templates=None, choices=None):
    from agent_gym.envs.alfworld.prompts import CHOICE_PROMPTS, focused_choices

    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    parser = ParseAction(env, format="plain", match="number", choices=choices or focused_choices)
    return env, ChatPrompt(parser, history_length=0, templates=templates or CHOICE_PROMPTS)


def test_the_agents_own_notes_are_what_it_was_shown():
    """info's places, location, carrying and searched follow the agent's own valid commands."""
    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    _, info = env.reset(seed=3)
    assert info["places"] == [a[6:] for a in info["admissible_actions"] if a.startswith("go to ")]
    assert (info["location"], info["carrying"], info["searched"]) == ("", "", [])
    places = info["places"]
    _, _, _, _, info = env.step("go to nowhere 7")  # invalid: nothing changes
    assert (info["location"], info["searched"]) == ("", [])
    while True:
        command = env.unwrapped.expert_action()
        _, _, won, _, info = env.step(command)
        if command.startswith("go to "):
            assert info["location"] == command[6:]
        if command.startswith("take "):
            assert info["carrying"] == command[5:].split(" from ")[0]
        if won:
            break
    assert info["carrying"] == "" and info["places"] == places  # put down; the room is fixed
    assert set(info["searched"]) <= set(places) and info["searched"]
    env.close()


def test_choice_prompt_numbers_the_places_once_and_shows_what_matters_now():
    env, wrapped = _choice_env()
    obs, info = wrapped.reset(seed=3)
    places = info["places"]
    listing = "Go to: " + "; ".join(f"{i} {p}" for i, p in enumerate(places, 1))
    task = info["task"].rstrip(".").split()
    carried = False
    for _ in range(10):
        text = obs[1]["content"]
        assert text.count(info["task"]) == 1 and listing in text  # the same numbers every step
        if info["carrying"]:
            carried = True
            kind = [str(i) for i, p in enumerate(places, 1) if p.split()[0] == task[4]]
            assert f"{task[4]}: {', '.join(kind)}\n" in text and "Not searched" not in text
        else:
            left = [
                str(i)
                for i, p in enumerate(places, 1)
                if p not in info["searched"] and p != info["location"]
            ]
            assert f"Not searched: {', '.join(left)}\n" in text
        for k, c in enumerate(info["choices"][len(places) :], len(places) + 1):
            assert f"{k}. {c}\n" in text and not c.startswith("close ")
        command = env.unwrapped.expert_action()
        obs, _, won, _, info = wrapped.step(str(info["choices"].index(command) + 1))
        assert info["parsed_action"] == command and info["is_action_valid"]
        if won:
            break
    assert won and carried
    wrapped.close()


def test_choice_prompt_says_when_a_command_did_nothing():
    _, wrapped = _choice_env()
    obs, info = wrapped.reset(seed=3)
    assert "did nothing" not in obs[1]["content"]
    obs, _, _, _, info = wrapped.step("99")  # no such number
    assert not info["is_action_valid"] and "Your last command did nothing." in obs[1]["content"]
    obs, _, _, _, info = wrapped.step("1")
    assert info["is_action_valid"] and "did nothing" not in obs[1]["content"]
    wrapped.close()


def test_choice_prompt_leaves_the_closed_place_the_agent_stands_at_out_of_not_searched():
    _, wrapped = _choice_env()
    obs, info = wrapped.reset(seed=3)
    places = info["places"]
    for n, place in enumerate(places, 1):
        obs, _, _, _, info = wrapped.step(str(n))  # go to each place until one is closed
        if f"The {place} is closed." in obs[1]["content"]:
            break
    else:
        raise AssertionError("seed 3's room has no closed place")
    text = obs[1]["content"]
    shown = text.split("Not searched: ")[1].split("\n")[0].split(", ")
    assert info["location"] == place and place not in info["searched"]
    assert str(n) not in shown and f"open {place}" in info["choices"]
    wrapped.close()


def test_typed_choice_prompt_lists_one_place_of_each_type_first_as_its_searcher_looks():
    # The typed prompt's "Not searched" line is type_rounds' order of the same numbers, and the
    # typed searcher, while searching, answers that line's first number (or opens where it
    # stands): what its clone has to copy is the same rule as the listed-order one's.
    from agent_gym.envs.alfworld.prompts import TYPED_CHOICE_PROMPTS, type_rounds

    env, wrapped = _choice_env(TYPED_CHOICE_PROMPTS)
    for seed in (3, 5):
        obs, info = wrapped.reset(seed=seed)
        places = info["places"]
        assert type_rounds(places) != places  # a room with several places of one type
        for _ in range(30):
            text = obs[1]["content"]
            command = env.unwrapped.typed_search_expert_action()
            if "Not searched: " in text:
                left = [
                    str(places.index(p) + 1)
                    for p in type_rounds(places)
                    if p not in info["searched"] and p != info["location"]
                ]
                assert f"Not searched: {', '.join(left)}\n" in text
                if command.startswith("go to ") and left:
                    assert command == f"go to {places[int(left[0]) - 1]}"
            obs, _, won, _, info = wrapped.step(str(info["choices"].index(command) + 1))
            assert info["is_action_valid"]
            if won:
                break
        assert won, info["task_id"]
    wrapped.close()


def test_kind_prompt_gives_each_kind_of_place_one_number_in_every_room():
    # 13 is the fridge in every room: the "Go to" line numbers the room's kinds of place by
    # KINDS, the typed searcher's command is always on offer, and while it searches it is the
    # first number of the "Not searched" line; answering numbers only, it wins.
    from agent_gym.envs.alfworld import scenes
    from agent_gym.envs.alfworld.prompts import KIND_CHOICE_PROMPTS, KINDS, kind_choices

    assert KINDS == tuple(sorted(t.lower() for t in scenes.rules()["static_receptacles"]))
    env, wrapped = _choice_env(KIND_CHOICE_PROMPTS, kind_choices)
    for seed in (3, 5, 8):
        obs, info = wrapped.reset(seed=seed)
        kinds = sorted({p.rsplit(" ", 1)[0] for p in info["places"]}, key=KINDS.index)
        go_to = "; ".join(f"{KINDS.index(k) + 1} {k}" for k in kinds)
        for _ in range(30):
            text = obs[1]["content"]
            assert f"Go to: {go_to}\n" in text  # the same line on every step
            command = env.unwrapped.typed_search_expert_action()
            n = info["choices"].index(command) + 1
            if n <= len(KINDS):
                assert command.rsplit(" ", 1)[0] == f"go to {KINDS[n - 1]}"
            if command.startswith("go to ") and "Not searched: " in text:
                assert text.split("Not searched: ")[1].startswith(f"{n} ")
            obs, _, won, _, info = wrapped.step(str(n))
            assert info["is_action_valid"]
            if won:
                break
        assert won, info["task_id"]
    wrapped.close()
    # With a step of history kept, a command that did nothing is named (one the room lacks).
    env = gym.make("AgentR1/ALFWorld-v0", task_types=["pick_and_place_simple"])
    parser = ParseAction(env, format="plain", match="number", choices=kind_choices)
    wrapped = ChatPrompt(parser, history_length=1, templates=KIND_CHOICE_PROMPTS)
    obs, info = wrapped.reset(seed=3)
    assert "fridge" not in " ".join(info["places"])
    obs, *_ = wrapped.step(str(KINDS.index("fridge") + 1))
    assert "Your last command (go to fridge) did nothing.\n" in obs[1]["content"]
    wrapped.close()
