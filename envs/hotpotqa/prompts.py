"""The default chat prompt of HotpotQA-v0, after Agent-R1's HotpotQA recipe.

Agent-R1 rebuilds a ``[system, user]`` prompt every step: a research-agent system prompt, then
the user query, the searches so far, the retrieved passages, recent format issues and
instructions (parallel searches allowed, do not repeat queries, give a short final answer).
The env's observation already holds the question, searches and passages (and the feedback on
an invalid action), so the user template adds only the instructions for the chosen
``action_format``. The history is not repeated: the state in the observation replaces it.

Template variables (see :class:`agent_gym.core.PromptTemplates`): ``observation``,
``action_format`` (``"tag"``, ``"tool_call"`` or ``"plain"``), ``step`` (0-based),
``max_steps``; ``task``, ``history`` and ``admissible_actions`` are accepted but unused.
"""

from __future__ import annotations

from agent_gym.core import PromptTemplates, ToolSpec

SEARCH_TOOL = ToolSpec(
    name="search",
    description="Search the Wikipedia-style corpus; returns the top passages for the query.",
    arguments={"query": "a short search query, e.g. an entity name"},
    command="search[{query}]",
)

ANSWER_TOOL = ToolSpec(
    name="answer",
    description="Give the final answer and end the episode.",
    arguments={"answer": "the short final answer: a name, a code, yes or no"},
    command="answer[{answer}]",
)

SYSTEM = (
    "You are a research agent answering multi-hop questions with evidence from a "
    "Wikipedia-style search engine. Each search returns the top passages for its query. The "
    "answer usually needs two passages: first find the entity the question describes, then "
    "look up the fact about it, or look up both entities being compared."
    "{% if action_format == 'tag' %} Think briefly inside <think></think>, then write your "
    "action inside <action></action>."
    "{% elif action_format == 'tool_call' %} Act by calling the search or answer tool with "
    '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
    "{% else %} Reply with the action only.{% endif %}"
)

USER = """{{ observation }}

### Instructions
Search for what you still need; up to 4 searches may run at once and repeating a query finds nothing new. When the passages are enough, give a short answer (a name, a code, or yes/no), not a sentence.
{% if action_format == 'tag' -%}
Write <think>...</think> then <action>...</action>, where the action is either up to 4 lines of search[your query] or a single answer[your answer].
{%- elif action_format == 'tool_call' -%}
Call the search tool (one <tool_call> per query, at most 4), or, when you know the answer, call the answer tool: <tool_call>{"name": "answer", "arguments": {"answer": "..."}}</tool_call>.
{%- else -%}
Reply with up to 4 lines of search[your query], or with a single answer[your answer].
{%- endif %}
Step {{ step + 1 }}{% if max_steps %} of {{ max_steps }}{% endif %}."""

PROMPTS = PromptTemplates(system=SYSTEM, user=USER)
