"""Default chat prompt of ``AgentR1/ALFWorld-v0``, after Agent-R1's ALFWorld recipe.

Agent-R1 (``recipes/alfworld/prompts.py``) gives the model a system prompt about acting in
ALFWorld with one admissible command per turn, and a user message with the sections
``### Task``, ``### Current Observation``, ``### History Actions``, ``### Admissible Commands``
(without ``help``), ``### Instructions`` and ``### Output Format``. The templates below keep
those sections and render the output format for each action format agent-gym supports
(``tag``, ``tool_call``, ``plain``; see :class:`agent_gym.core.PromptTemplates`). History entries
show the observation the agent saw and the command it sent, oldest first.
"""

from __future__ import annotations

from agent_gym.core import PromptTemplates

SYSTEM = (
    "You are an agent in ALFWorld, a text-based household simulator. Each turn you read the "
    "task, the current observation and the admissible commands, and you send exactly one "
    "command, copied exactly from the admissible commands."
    "{% if action_format == 'tag' %} You may reason briefly inside <think></think>; then write "
    "the command inside <action></action>."
    "{% elif action_format == 'tool_call' %} You may reason briefly inside <think></think>; "
    "then call the env_step tool with the command. Do not give a final answer in natural "
    "language: the episode ends when the task is done."
    "{% else %} Reply with the command only, nothing else.{% endif %}"
)

USER = """### Task
{{ task }}

### Current Observation
{{ observation }}
{% if history %}
### History Actions
{% for h in history %}[Observation {{ loop.index }}] {{ h.observation }}
[Action {{ loop.index }}] {{ h.action }}
{% endfor %}{% endif %}
### Admissible Commands
{% for a in admissible_actions if a != 'help' %}- {{ a }}
{% endfor %}
### Instructions
Step {{ step + 1 }}{% if max_steps %} of {{ max_steps }}{% endif %}. Choose the one command that \
best advances the task. Write it exactly as listed; anything else does nothing.

### Output Format
{% if action_format == 'tag' %}<think>brief reasoning</think>
<action>one admissible command</action>\
{% elif action_format == 'tool_call' %}<think>brief reasoning</think>
<tool_call>{"name": "env_step", "arguments": {"command": "one admissible command"}}</tool_call>\
{% else %}one admissible command, on a single line{% endif %}"""

ALFWORLD_PROMPTS = PromptTemplates(system=SYSTEM, user=USER)

#: Jinja macro shared by the terse prompts: an observation without the TextWorld banner, the
#: "Your task is to" line and the first room description (its places are the "Go to" list).
_CLEAN = (
    "{% macro clean(o) %}{{ o.split('Your task is to:')[0].split(' Looking quickly around you')[0]"
    " | replace('-= Welcome to TextWorld, ALFRED! =-', '') | trim }}{% endmacro %}"
)

#: A terse prompt for small models on a CPU budget (``env.prompt =
#: "agent_gym.envs.alfworld.prompts:TERSE_PROMPTS"``): the task once, the observation without
#: the TextWorld banner, the repeated task line and the first room description (its places are
#: the "Go to" list), the places to go to as one list and the
#: other commands as another, leaving out the ones that only look (``look``, ``inventory``,
#: ``examine``, ``help``). About 60% of the compact prompt's tokens on later steps. The
#: commands are those the env lists; ``go to`` targets are shown without the verb.
TERSE_PROMPTS = PromptTemplates(
    system="You act in a house. Reply with one command.",
    user=(
        _CLEAN + "Task: {{ task }}\n"
        "{% for h in history %}{{ clean(h.observation) }}\n> {{ h.action }}\n{% endfor %}"
        "{{ clean(observation) }}\n"
        "Go to: {% for a in admissible_actions if a.startswith('go to ') %}{{ a[6:] }}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "Other: {% for a in admissible_actions if not a.startswith(('go to ', 'examine ')) "
        "and a not in ('help', 'look', 'inventory') %}{{ a }}{% if not loop.last %}; {% endif %}"
        "{% endfor %}"
    ),
)

#: Jinja: ``obj`` and ``dest``, the object and receptacle of a "put a/some X in/on Y." task
#: ('' for any other task sentence).
_TASK_WORDS = (
    "{% set w = task.rstrip('.').split(' ') %}"
    "{% set obj = w[2] if w | length == 5 and w[0] == 'put' and w[3] in ('in', 'on') else '' %}"
    "{% set dest = w[4] if obj else '' %}"
)

#: Jinja: the "Other" line of the focused prompts: every command but the places, the looking
#: ones and take/put commands for anything but ``obj`` and ``dest``.
_FOCUSED_OTHER = (
    "Other: {% for a in admissible_actions if not a.startswith(('go to ', 'examine ')) "
    "and a not in ('help', 'look', 'inventory') and (not obj "
    "or not a.startswith(('take ', 'move ')) or a.startswith('take ' ~ obj ~ ' ') "
    "or (a.startswith('move ' ~ obj ~ ' ') and (' to ' ~ dest ~ ' ') in a ~ ' ')) %}"
    "{{ a }}{% if not loop.last %}; {% endif %}{% endfor %}"
)

#: :data:`TERSE_PROMPTS` with the pick-up and put-down commands narrowed to the task's own object
#: and receptacle (``env.prompt = "agent_gym.envs.alfworld.prompts:FOCUSED_PROMPTS"``): for "put
#: a pen in coffeetable." only ``take pen ...`` and ``move ... to coffeetable ...`` are listed
#: (every ``go to``, ``open`` and ``close`` still is). What is left to the policy is the search:
#: where the object is. The narrowing reads the task sentence only, never the game's state; a
#: task that is not of the form "put a/some X in/on Y." gets every command. The env still
#: accepts any command, and the random agent picks among all of them.
FOCUSED_PROMPTS = PromptTemplates(
    system=TERSE_PROMPTS.system,
    user=(
        _CLEAN + _TASK_WORDS + "Task: {{ task }}\n"
        "{% for h in history %}{{ clean(h.observation) }}\n> {{ h.action }}\n{% endfor %}"
        "{{ clean(observation) }}\n"
        "Go to: {% for a in admissible_actions if a.startswith('go to ') %}{{ a[6:] }}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n" + _FOCUSED_OTHER
    ),
)

#: Jinja: ``ns.searched``, the places the agent's own earlier commands have shown the inside of
#: (a ``go to X`` or ``open X`` whose result lists what is there: "... you see ..."). It reads
#: the history's commands and their results only, never the game's state.
_SEARCHED = (
    "{% set ns = namespace(searched=[]) %}"
    "{% for h in history %}"
    "{% set result = observation if loop.last else history[loop.index0 + 1].observation %}"
    "{% if 'you see' in result and h.action.startswith(('go to ', 'open ')) %}"
    "{% set ns.searched = ns.searched + [h.action.split(' ', 2)[-1] if h.action.startswith('go to ')"
    " else h.action[5:]] %}"
    "{% endif %}{% endfor %}"
)

#: :data:`FOCUSED_PROMPTS` for a policy without memory: instead of showing the history, it marks
#: each place the agent has already looked into as ``(searched)`` in the "Go to" list
#: (``env.prompt = "agent_gym.envs.alfworld.prompts:SEARCH_PROMPTS"``, with ``env.history_length``
#: at least the episode's step limit, so that the whole episode is remembered; the history
#: itself is not shown). A search task is then nearly Markov in the prompt: where the agent is,
#: what is here and where it has looked (what it carries shows only in the step that picked it
#: up). Like FOCUSED_PROMPTS, it reads only what the agent saw, never the game's state.
SEARCH_PROMPTS = PromptTemplates(
    system=TERSE_PROMPTS.system,
    user=(
        _CLEAN + _SEARCHED + _TASK_WORDS + "Task: {{ task }}\n"
        "{{ clean(observation) }}\n"
        "Go to: {% for a in admissible_actions if a.startswith('go to ') %}{{ a[6:] }}"
        "{% if a[6:] in ns.searched %} (searched){% endif %}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n" + _FOCUSED_OTHER
    ),
)
