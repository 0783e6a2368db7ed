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

from typing import Any

from agent_gym.core import PromptTemplates
from agent_gym.wrappers.action_formats import admissible_actions

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

#: :data:`FOCUSED_PROMPTS` for a policy without memory, with the agent's own notes instead of
#: the history (``env.prompt = "agent_gym.envs.alfworld.prompts:STATE_PROMPTS"``): where it
#: stands and what it carries (``info["location"]``, ``info["carrying"]``: what ``look`` and
#: ``inventory`` would say), the last place it was shown (``info["anchor_obs"]``: a command that
#: did nothing leaves it on screen, with a line saying so) and every place it has looked into
#: marked ``(searched)`` (``info["searched"]``). The task is then Markov in the prompt, so a
#: policy without history can search without going in circles. It reads nothing the agent has
#: not been shown: never where the object is.
STATE_PROMPTS = PromptTemplates(
    system=TERSE_PROMPTS.system,
    user=(
        _CLEAN + _TASK_WORDS + "Task: {{ task }}\n"
        "You are {% if info.location %}at {{ info.location }}{% else %}in the middle of the room"
        "{% endif %}, carrying {{ info.carrying or 'nothing' }}.\n"
        "{% if info.location %}{{ clean(info.anchor_obs) }}\n{% endif %}"
        "{% if observation != info.anchor_obs %}Your last command did nothing.\n{% endif %}"
        "Go to: {% for a in admissible_actions if a.startswith('go to ') %}{{ a[6:] }}"
        "{% if a[6:] in info.searched %} (searched){% endif %}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n" + _FOCUSED_OTHER
    ),
)


def focused_choices(info: dict[str, Any]) -> list[str]:
    """The commands :data:`CHOICE_PROMPTS` numbers: every place of the room, then the rest.

    First ``go to`` every place the room has (``info["places"]``, in the env's order: the
    same numbers for the whole episode; going to the place the agent stands at does nothing),
    then the other admissible commands but the looking ones (``look``, ``inventory``,
    ``examine``, ``help``), ``close`` (no task needs it, and a policy choosing by position
    can open and close the same place forever) and take/put commands for anything but the
    task's object and receptacle, read from the task sentence as :data:`FOCUSED_PROMPTS`
    does. The ``env.choices`` of ``env.action_match = "number"``
    (:class:`agent_gym.wrappers.ParseAction`).

    >>> focused_choices({"task": "put a pen in drawer.", "places": ["desk 1", "drawer 1"],
    ...     "admissible_actions": ["close drawer 1", "examine desk 1", "go to drawer 1", "look",
    ...                            "take pen 1 from desk 1", "take pencil 2 from desk 1"]})
    ['go to desk 1', 'go to drawer 1', 'take pen 1 from desk 1']
    """
    words = str(info.get("task", "")).rstrip(".").split(" ")
    obj = dest = ""
    if len(words) == 5 and words[0] == "put" and words[3] in ("in", "on"):
        obj, dest = words[2], words[4]

    def offered(a: str) -> bool:
        if a.startswith(("go to ", "examine ", "close ")) or a in ("help", "look", "inventory"):
            return False
        if not obj or not a.startswith(("take ", "move ")):
            return True
        return a.startswith(f"take {obj} ") or (
            a.startswith(f"move {obj} ") and f" to {dest} " in f"{a} "
        )

    places = [f"go to {p}" for p in info.get("places", [])]
    return places + [a for a in admissible_actions(info) if offered(a)]


def place_kind(place: str) -> str:
    """A place's kind: its name without the number (``"cabinet 3"``: ``cabinet``)."""
    return place.rsplit(" ", 1)[0]


def type_rounds(places: list[str]) -> list[str]:
    """``places`` in rounds by type: the first place of each type, then the second, and so on.

    A place's type is its name without the number (``"cabinet 3"``: ``cabinet``); within a
    round, places keep the order of ``places``. The search order of
    ``typed_search_expert_action`` and of the "Not searched" line of
    :data:`TYPED_CHOICE_PROMPTS`.

    >>> type_rounds(["cabinet 1", "cabinet 2", "countertop 1", "drawer 1", "drawer 2", "fridge 1"])
    ['cabinet 1', 'countertop 1', 'drawer 1', 'fridge 1', 'cabinet 2', 'drawer 2']
    """
    seen: dict[str, int] = {}
    rank = []
    for p in places:
        kind = place_kind(p)
        rank.append(seen.get(kind, 0))
        seen[kind] = rank[-1] + 1
    return [p for _, _, p in sorted(zip(rank, range(len(places)), places))]


#: The focused prompt with numbered commands and the agent's own notes instead of history
#: (``env.prompt = "agent_gym.envs.alfworld.prompts:CHOICE_PROMPTS"``, with ``env.action_match
#: = "number"`` and ``env.choices = "agent_gym.envs.alfworld.prompts:focused_choices"``): the
#: policy answers with a number, so it can choose a wrong command but never misspell one. The
#: room's places come first, numbered the same on every step (a prefix that every step of an
#: episode shares). Then where the agent stands and what it carries (``info["location"]``,
#: ``info["carrying"]``: what ``look`` and ``inventory`` would say), the last thing it was
#: shown (a command that did nothing leaves it on screen, with a line saying so), the places
#: that matter now: while its hands are empty, those it has not looked into yet
#: (``info["searched"]``) but the one it stands at (going there again does nothing); while it
#: carries something, those of the task's receptacle type (read from the task sentence);
#: last, the other commands on offer. It reads nothing the agent has not been shown: never
#: where the object is. Not upstream's interface (there the model writes the command).
CHOICE_PROMPTS = PromptTemplates(
    system="You act in a house. Reply with the number of one command.",
    user=(
        _CLEAN + _TASK_WORDS + "Task: {{ task }}\n"
        "Go to: {% for p in info.places %}{{ loop.index }} {{ p }}"
        "{% if not loop.last %}; {% endif %}{% endfor %}\n"
        "You are {% if info.location %}at {{ info.location }}{% else %}in the middle of the room"
        "{% endif %}, carrying {{ info.carrying or 'nothing' }}.\n"
        "{% if info.location %}{{ clean(info.anchor_obs) }}\n{% endif %}"
        "{% if observation != info.anchor_obs %}Your last command did nothing.\n{% endif %}"
        "{% if info.carrying and dest %}{{ dest }}: "
        "{% for p in info.places if p.split(' ')[0] == dest %}"
        "{{ info.places.index(p) + 1 }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{% else %}Not searched: {% for p in info.places if p not in info.searched"
        " and p != info.location %}"
        "{{ info.places.index(p) + 1 }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{% endif %}"
        "{% for c in info.choices[info.places | length:] %}"
        "{{ loop.index + info.places | length }}. {{ c }}\n{% endfor %}"
    ),
)

#: Jinja: the "Not searched" line of :data:`CHOICE_PROMPTS` (numbers in the listed order) and
#: of :data:`TYPED_CHOICE_PROMPTS` (the same numbers in :func:`type_rounds`' order).
_NOT_SEARCHED = (
    "Not searched: {% for p in info.places if p not in info.searched"
    " and p != info.location %}"
    "{{ info.places.index(p) + 1 }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
)
_NOT_SEARCHED_TYPED = (
    "{% set ns = namespace(count={}, order=[]) %}"
    "{% for p in info.places %}{% set kind = p.rsplit(' ', 1)[0] %}"
    "{% set k = ns.count.get(kind, 0) %}{% set _ = ns.count.update({kind: k + 1}) %}"
    "{% set ns.order = ns.order + [(k, loop.index, p)] %}{% endfor %}"
    "Not searched: {% for k, i, p in ns.order | sort if p not in info.searched"
    " and p != info.location %}"
    "{{ i }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
)
assert _NOT_SEARCHED in CHOICE_PROMPTS.user

#: :data:`CHOICE_PROMPTS` listing the places not searched yet one of each type first
#: (:func:`type_rounds`; ``env.prompt = "agent_gym.envs.alfworld.prompts:TYPED_CHOICE_PROMPTS"``):
#: the same numbers, in the order ``typed_search_expert_action`` looks into them, so that its
#: clone, like the listed-order searcher's, answers the first number of that line. The order
#: reads only the places' names, never where the object is. Not upstream's interface.
TYPED_CHOICE_PROMPTS = PromptTemplates(
    system=CHOICE_PROMPTS.system,
    user=CHOICE_PROMPTS.user.replace(_NOT_SEARCHED, _NOT_SEARCHED_TYPED),
)

#: Every kind of place an ALFWorld room can list (its static receptacle types, as the text
#: names them), in a fixed order: :func:`kind_choices` numbers them 1-29 in every room, so an
#: answer means the same kind of place in every game. (Equal to the types of
#: ``alfworld.gen.constants.STATIC_RECEPTACLES``, lowercased; tested.)
KINDS: tuple[str, ...] = (
    "armchair", "bathtubbasin", "bed", "cabinet", "cart", "coffeemachine", "coffeetable",
    "countertop", "desk", "diningtable", "drawer", "dresser", "fridge", "garbagecan",
    "handtowelholder", "laundryhamper", "microwave", "ottoman", "safe", "shelf", "sidetable",
    "sinkbasin", "sofa", "stoveburner", "toaster", "toilet", "toiletpaperhanger", "towelholder",
    "tvstand",
)  # fmt: skip


def kind_choices(info: dict[str, Any]) -> list[str]:
    """The commands :data:`KIND_CHOICE_PROMPTS` numbers: one ``go to`` per kind, then the rest.

    Entry ``k`` (1-based) of the first ``len(KINDS)`` goes to a place of kind ``KINDS[k-1]``:
    while the agent carries nothing, the first place of that kind (in the env's order) it has
    not looked into and does not stand at, else the first it does not stand at; while it
    carries something, the first it does not stand at (where to put it). A kind the room
    lacks gets ``go to <kind>``, which names no place and does nothing. A room with a kind
    :data:`KINDS` lacks gets it appended after them. Then the commands
    :func:`focused_choices` offers besides the places.

    >>> info = {"task": "put a pen in drawer.", "places": ["desk 1", "drawer 1", "drawer 2"],
    ...     "location": "drawer 1", "carrying": "", "searched": ["drawer 1"],
    ...     "admissible_actions": ["go to desk 1", "go to drawer 2", "take pen 1 from drawer 1"]}
    >>> c = kind_choices(info)
    >>> c[KINDS.index("desk")], c[KINDS.index("drawer")], c[KINDS.index("fridge")], c[29:]
    ('go to desk 1', 'go to drawer 2', 'go to fridge', ['take pen 1 from drawer 1'])
    """
    places = list(info.get("places", []))
    here, searched = info.get("location", ""), set(info.get("searched", []))
    by_kind: dict[str, list[str]] = {}
    for p in places:
        by_kind.setdefault(place_kind(p), []).append(p)
    carrying = bool(info.get("carrying"))
    goes = []
    for kind in [*KINDS, *sorted(set(by_kind) - set(KINDS))]:
        away = [p for p in by_kind.get(kind, []) if p != here]
        fresh = [] if carrying else [p for p in away if p not in searched]
        goes.append(f"go to {(fresh or away or [kind])[0]}")
    return goes + focused_choices(info)[len(places) :]


#: The numbered prompt with one fixed number per kind of place (:func:`kind_choices`;
#: ``env.prompt = "agent_gym.envs.alfworld.prompts:KIND_CHOICE_PROMPTS"``, ``env.choices =
#: "agent_gym.envs.alfworld.prompts:kind_choices"``, ``env.action_match = "number"``). As
#: :data:`TYPED_CHOICE_PROMPTS`, but the answer names a kind of place, not a place: 13 is the
#: fridge in every room (the next fridge not looked into), so what an answer is worth (where
#: apples usually are) carries over from one game to the next. "Go to" lists the room's
#: kinds with their numbers; "Not searched" the kinds with a place not looked into yet, in
#: the order ``typed_search_expert_action`` looks (the kinds with the fewest places looked
#: into first, then by number), so that its clone answers the first number of the line.
#: With ``env.history_length = 1`` a command that did nothing is named ("Your last command
#: (go to fridge) did nothing."). Reads nothing the agent has not been shown. Not upstream's
#: interface.
KIND_CHOICE_PROMPTS = PromptTemplates(
    system=CHOICE_PROMPTS.system,
    user=(
        _CLEAN + _TASK_WORDS + "{% set ns = namespace(k=0, kinds=[], go=[], rows=[]) %}"
        "{% for p in info.places %}{% set ns.kinds = ns.kinds + [p.rsplit(' ', 1)[0]] %}{% endfor %}"
        "{% for c in info.choices if c.startswith('go to ') %}{% set ns.k = ns.k + 1 %}{% endfor %}"
        "{% for c in info.choices[:ns.k] if c[6:].rsplit(' ', 1)[0] in ns.kinds %}"
        "{% set kind = c[6:].rsplit(' ', 1)[0] %}{% set i = info.choices.index(c) + 1 %}"
        "{% set ns.go = ns.go + [i ~ ' ' ~ kind] %}"
        "{% if c[6:] != kind and c[6:] not in info.searched and c[6:] != info.location %}"
        "{% set m = namespace(n=0) %}{% for p in info.searched if p.rsplit(' ', 1)[0] == kind %}"
        "{% set m.n = m.n + 1 %}{% endfor %}{% set ns.rows = ns.rows + [(m.n, i, kind)] %}"
        "{% endif %}{% endfor %}"
        "Task: {{ task }}\n"
        "Go to: {{ ns.go | join('; ') }}\n"
        "You are {% if info.location %}at {{ info.location }}{% else %}in the middle of the room"
        "{% endif %}, carrying {{ info.carrying or 'nothing' }}.\n"
        "{% if info.location %}{{ clean(info.anchor_obs) }}\n{% endif %}"
        "{% if observation != info.anchor_obs %}Your last command"
        "{% if history %} ({{ history[-1].action }}){% endif %} did nothing.\n{% endif %}"
        "{% if info.carrying and dest %}{{ dest }}: "
        "{% for c in info.choices[:ns.k] if c[6:].rsplit(' ', 1)[0] == dest and dest in ns.kinds %}"
        "{{ info.choices.index(c) + 1 }}{% endfor %}\n"
        "{% else %}Not searched: {% for _, i, kind in ns.rows | sort %}{{ i }} {{ kind }}"
        "{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{% endif %}"
        "{% for c in info.choices[ns.k:] %}"
        "{{ loop.index + ns.k }}. {{ c }}\n{% endfor %}"
    ),
)
