"""Default chat prompt of WebShop, after Agent-R1's WebShop recipe.

Agent-R1's user message has the sections Shopping Instruction, Current Observation, Recent
History (the last two observation/action pairs, each observation cut to 1,800 characters),
Available Actions and Instructions; its system prompt asks for exactly one action per turn
through the ``env_step`` tool. The templates below keep those sections and phrase the answer
format for each ``action_format``: ``"tag"`` (``<action>...</action>``), ``"tool_call"``
(Hermes ``<tool_call>``) and ``"plain"`` (the bare action).

Template variables (see :class:`agent_gym.core.PromptTemplates`): ``task``, ``observation``,
``history`` (``[{"observation", "action"}]``, oldest first), ``admissible_actions``, ``step``,
``max_steps`` and ``action_format``.
"""

from __future__ import annotations

from agent_gym.core import PromptTemplates

#: Observations in the history are cut to this many characters (Agent-R1's limit).
HISTORY_OBSERVATION_CHARS = 1800

SYSTEM = (
    "You are acting in the WebShop text environment. Your goal is to find and buy the product "
    "that best satisfies the shopping instruction. Take exactly one action each turn."
    "{% if action_format == 'tool_call' %} Call the env_step tool once with the action as its "
    'command, e.g. <tool_call>{"name": "env_step", "arguments": {"command": '
    '"search[wireless headphones]"}}</tool_call>. Do not explain.'
    "{% elif action_format == 'tag' %} You may think briefly inside <think></think>; then "
    "write the action inside <action></action>, e.g. <action>click[buy now]</action>."
    "{% else %} Reply with the action only, e.g. click[buy now]. Do not explain.{% endif %}"
)

USER = (
    """### Shopping Instruction
{{ task }}

### Current Observation
{{ observation }}

### Recent History
{% for h in history[-2:] %}[Observation {{ history | length - (history[-2:] | length) + loop.index }}]
{{ h.observation[:"""
    + str(HISTORY_OBSERVATION_CHARS)
    + """] }}
[Action {{ history | length - (history[-2:] | length) + loop.index }}]
{{ h.action }}
{% else %}None
{% endfor %}
### Available Actions
{% for a in admissible_actions %}- {{ a }}
{% else %}None
{% endfor %}
### Instructions
- Take exactly one action{% if action_format == 'tool_call' %} through the `env_step` tool{% endif %}.
- Write the action exactly as listed above, except that in `search[<your query>]` you replace `<your query>` with concise product keywords.
- Click product ids, option values, `description`, `features`, `reviews`, `< prev`, `back to search` or `buy now` only when they are listed.
- Buy only when the selected product and options satisfy the shopping instruction.
Step {{ step + 1 }}{% if max_steps %} of {{ max_steps }}{% endif %}.{% if action_format == 'tag' %} Answer as <think>...</think><action>your action</action>.{% elif action_format == 'tool_call' %} Answer with one <tool_call>.{% else %} Answer with the action only.{% endif %}"""
)

#: WebShop's default prompt.
WEBSHOP_PROMPTS = PromptTemplates(system=SYSTEM, user=USER)
