"""WebShop's default prompt renders for every action format, with Agent-R1's sections."""

from __future__ import annotations

import jinja2
import pytest

from agent_gym.envs.webshop.env import WebShopEnv


def _render(template: str, **ctx) -> str:
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(template).render(**ctx)


@pytest.mark.parametrize("fmt", ["tag", "tool_call", "plain"])
def test_prompt_sections_and_formats(fmt):
    t = WebShopEnv.prompt_templates
    history = [{"observation": f"obs {i} " + "y" * 3000, "action": f"act {i}"} for i in range(4)]
    user = _render(
        t.user, task="buy a lamp", observation="WebShop [SEP] Search", history=history,
        admissible_actions=["search[<your query>]"], step=4, max_steps=15, action_format=fmt,
    )  # fmt: skip
    system = _render(t.system, action_format=fmt)
    for section in ("### Shopping Instruction\nbuy a lamp", "### Current Observation",
                    "### Recent History", "### Available Actions\n- search[<your query>]",
                    "### Instructions", "Step 5 of 15."):  # fmt: skip
        assert section in user
    # Only the last two steps, numbered as in the episode, observations cut to 1,800 chars.
    assert "[Observation 3]" in user and "[Action 4]\nact 3" in user and "act 1" not in user
    assert ("obs 3 " + "y" * 3000)[:1800] + "\n[Action 4]" in user
    expected = {"tag": "<action>", "tool_call": "<tool_call>", "plain": "action only"}[fmt]
    assert expected in user and expected in system


def test_prompt_without_history_or_actions():
    t = WebShopEnv.prompt_templates
    user = _render(
        t.user, task="t", observation="o", history=[], admissible_actions=[], step=0,
        max_steps=None, action_format="plain",
    )  # fmt: skip
    assert "### Recent History\nNone" in user and "### Available Actions\nNone" in user
    assert "Step 1." in user
