"""The default chat prompt of Paper Search, after PaperScout / Agent-R1's ``prompts.py``.

The env's observation already holds upstream's state sections (``### User Query``,
``### History Actions``, ``### Paper List``, plus ``### Last Step`` feedback), rebuilt every
step, so the user template adds only the instructions and the output format. Templates are
Jinja2, rendered by the prompt wrapper with these variables:

* ``task``: the user query; ``observation``: the env's observation (the sections above);
* ``history``: earlier ``{"observation", "action"}`` pairs (unused: the observation already
  lists every past call);
* ``admissible_actions``, ``step`` (0-based), ``max_steps``;
* ``action_format``: ``"tag"`` (``<action>`` with one call per line), ``"tool_call"``
  (Hermes ``<tool_call>`` blocks, upstream's format) or ``"plain"`` (calls only, one per line).
"""

from __future__ import annotations

from agent_gym.core import PromptTemplates

SYSTEM = (
    "You are a research assistant that finds every academic paper relevant to a user's "
    "query. Your tools: search(query) returns the 10 papers whose title and abstract "
    "best match a keyword query, and expand(paper_id) adds a paper's references and the "
    "papers citing it, and finish() ends the search. New papers join your paper list with a relevance score between 0 and "
    "1. Each step you may make up to 5 tool calls. Repeating a search, or expanding a "
    "paper that is not in your list or was already expanded, costs 0.5; the calls of a "
    "step run together, so a paper found in this step can be expanded from the next one."
    "{% if action_format == 'tool_call' %} Think inside <analysis></analysis>, then call the "
    'tools with <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks, one per '
    "call. Call finish when the list is complete."
    "{% elif action_format == 'tag' %} Think inside <think></think>, then write your calls "
    "inside <action></action>, one per line: search[query], expand[paper_id] or finish[]."
    "{% else %} Reply with your calls only, one per line: search[query], expand[paper_id] or "
    "finish[].{% endif %}"
)

USER = """{{ observation }}

### Instructions
Find all papers that satisfy the user query. Search with varied keywords (synonyms, the method, the task, the dataset), and expand relevant papers (high scores) because related work cites them. Do not repeat a search or an expansion. You may make up to 5 calls in this step{% if max_steps %} (step {{ step + 1 }} of {{ max_steps }}){% endif %}.

### Output Format
{% if action_format == 'tool_call' -%}
<analysis>what you found, what is missing, and what to do next</analysis>
<tool_call>{"name": "search", "arguments": {"query": "keywords"}}</tool_call>
<tool_call>{"name": "expand", "arguments": {"paper_id": "an id from the paper list"}}</tool_call>
Call {"name": "finish", "arguments": {}} as the only call when you are done.
{%- elif action_format == 'tag' -%}
<think>what you found, what is missing, and what to do next</think>
<action>
search[keywords]
expand[an id from the paper list]
</action>
Write finish[] as the only call when you are done.
{%- else -%}
search[keywords]
expand[an id from the paper list]
One call per line; write finish[] when you are done.
{%- endif %}"""

PROMPTS = PromptTemplates(system=SYSTEM, user=USER)
