"""A task-structured planner for ALFWorld's six task types, from any state of a game.

fast-downward (TextWorld's ``PddlState.replan``) solves a game from any state but takes from
0.1 s to minutes on a large kitchen (216 s was seen on a pick-two game). The six task types
have a fixed structure, though: fetch an object of the goal type (open its receptacle if it is
closed), treat it at the sink basin / microwave / fridge if the task says so, and put it in a
receptacle of the goal type (twice, into the same one, for pick-two); or, for look-at-in-light,
fetch the object and switch on a lamp of the goal type where it stands. This module reads the
current PDDL facts (where each object is, which receptacles are open, what the agent holds,
which objects are clean/hot/cool, which lamps were switched on), tries every choice of objects
(the cheapest few to reach), goal receptacle and lamp, and keeps the plan with the fewest
commands. That takes milliseconds.

The result is checked, not trusted: the env takes a plan's first command only if it is
admissible, and otherwise (or when :func:`plan` returns ``None``) asks fast-downward.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Tool receptacle type, TextWorld action and resulting fact of the three state-change tasks.
TOOLS = {
    "pick_clean_then_place_in_recep": ("sinkbasintype", "cleanobject", "isclean"),
    "pick_heat_then_place_in_recep": ("microwavetype", "heatobject", "ishot"),
    "pick_cool_then_place_in_recep": ("fridgetype", "coolobject", "iscool"),
}
PLACE_TASKS = ("pick_and_place_simple", "pick_two_obj_and_place", *TOOLS)
LOOK_TASK = "look_at_obj_in_light"

# Object orders tried for pick-two (pairs) are drawn from the cheapest few candidates only.
_MAX_CANDIDATES = 6

# Goal clauses of ALFWorld's goal_library: "(objectType ?o MugType)" (``?o1`` in pick-two),
# "(receptacleType ?r CoffeeMachineType)", "(objectType ?ot DeskLampType)" (look-at's lamp).
_GOAL_OBJECT = re.compile(r"\(\s*objecttype\s+\?o1?\s+(\w+)\s*\)", re.IGNORECASE)
_GOAL_RECEP = re.compile(r"\(\s*receptacletype\s+\?r\s+(\w+)\s*\)", re.IGNORECASE)
_GOAL_TOGGLE = re.compile(r"\(\s*objecttype\s+\?ot\s+(\w+)\s*\)", re.IGNORECASE)


@dataclass(frozen=True)
class Goal:
    """What a game asks for, with types as TextWorld's facts spell them (``"mugtype"``).

    Attributes:
        task_type: One of the six ALFWorld task types.
        obj: Type of the object to fetch.
        recep: Type of the receptacle to put it in (``None`` for look-at-in-light).
        toggle: Type of the lamp (look-at-in-light only).
    """

    task_type: str
    obj: str
    recep: str | None = None
    toggle: str | None = None


def parse_goal(task_type: str, pddl_problem: str) -> Goal | None:
    """Read the goal types from a game's PDDL problem (``None`` if it is not one of the six).

    Example:
        >>> parse_goal("pick_and_place_simple",
        ...            "(:goal (and (objectType ?o MugType) (receptacleType ?r DeskType)))")
        Goal(task_type='pick_and_place_simple', obj='mugtype', recep='desktype', toggle=None)
    """
    head, sep, text = pddl_problem.partition("(:goal")
    if not sep:
        return None
    obj = _GOAL_OBJECT.search(text)
    if obj is None:
        return None
    if task_type == LOOK_TASK:
        toggle = _GOAL_TOGGLE.search(text)
        return (
            Goal(task_type, obj.group(1).lower(), toggle=toggle.group(1).lower())
            if toggle
            else None
        )
    recep = _GOAL_RECEP.search(text)
    if task_type not in PLACE_TASKS or recep is None:
        return None
    return Goal(task_type, obj.group(1).lower(), recep=recep.group(1).lower())


@dataclass
class World:
    """The facts of a PDDL state that the six task types depend on (ids as in the facts)."""

    at: str | None = None
    held: str | None = None
    obj_type: dict[str, str] = field(default_factory=dict)
    rec_type: dict[str, str] = field(default_factory=dict)
    rec_loc: dict[str, str] = field(default_factory=dict)
    inside: dict[str, str] = field(default_factory=dict)  # object -> receptacle
    openable: set[str] = field(default_factory=set)
    opened: set[str] = field(default_factory=set)
    pickupable: set[str] = field(default_factory=set)
    can_contain: set[tuple[str, str]] = field(default_factory=set)  # (rtype, otype)
    marks: dict[str, set[str]] = field(default_factory=dict)  # "isclean" -> objects, ...

    @classmethod
    def from_facts(cls, facts: Iterable[Any]) -> World:
        """Build from ``textworld.logic.Proposition`` facts (``PddlState.facts``)."""
        w = cls()
        for fact in facts:
            args = [v.name for v in fact.arguments]
            name = fact.name
            if name == "atlocation":
                w.at = args[1]
            elif name == "holds":
                w.held = args[1]
            elif name == "objecttype":
                w.obj_type[args[0]] = args[1]
            elif name == "receptacletype":
                w.rec_type[args[0]] = args[1]
            elif name == "receptacleatlocation":
                w.rec_loc[args[0]] = args[1]
            elif name == "inreceptacle":
                w.inside[args[0]] = args[1]
            elif name == "openable":
                w.openable.add(args[0])
            elif name == "opened":
                w.opened.add(args[0])
            elif name == "pickupable":
                w.pickupable.add(args[0])
            elif name == "cancontain":
                w.can_contain.add((args[0], args[1]))
            elif name in ("isclean", "ishot", "iscool", "istoggled"):
                w.marks.setdefault(name, set()).add(args[0])
        return w

    def objects_of(self, otype: str) -> list[str]:
        """Objects of a type, sorted (so plans are deterministic)."""
        return sorted(o for o, t in self.obj_type.items() if t == otype)

    def receptacles_of(self, rtype: str) -> list[str]:
        """Receptacles of a type that stand somewhere, sorted."""
        return sorted(r for r, t in self.rec_type.items() if t == rtype and r in self.rec_loc)

    def has(self, mark: str, obj: str) -> bool:
        """Whether ``obj`` carries ``mark`` (``"isclean"``, ``"ishot"``, ...)."""
        return obj in self.marks.get(mark, ())


class _Sim:
    """Writes commands while tracking the few facts they change (location, hand, doors, marks)."""

    def __init__(self, world: World, names: Mapping[str, str], templates: Mapping[str, str]):
        self.w = world
        self.names = names
        self.templates = templates
        self.at = world.at
        self.held = world.held
        self.inside = dict(world.inside)
        self.opened = set(world.opened)
        self.marks = {k: set(v) for k, v in world.marks.items()}
        self.commands: list[str] = []
        self.ok = True

    def _say(self, action: str, **args: str) -> None:
        template = self.templates.get(action)
        if template is None or any(v not in self.names for v in args.values()):
            self.ok = False  # a grammar without this action: leave it to the general planner
            return
        self.commands.append(template.format(**{k: self.names[v] for k, v in args.items()}))

    def go(self, rec: str) -> None:
        if self.at != self.w.rec_loc[rec]:
            if rec not in self.names:
                self.ok = False
                return
            self.commands.append(f"go to {self.names[rec]}")  # as TextWorld's replan writes it
            self.at = self.w.rec_loc[rec]

    def open(self, rec: str) -> None:
        if rec in self.w.openable and rec not in self.opened:
            self._say("openobject", r=rec)
            self.opened.add(rec)

    def take(self, obj: str) -> None:
        rec = self.inside.get(obj)
        if rec is None or rec not in self.w.rec_loc or obj not in self.w.pickupable:
            self.ok = False
            return
        self.go(rec)
        self.open(rec)
        self._say("pickupobject", o=obj, r=rec)
        del self.inside[obj]
        self.held = obj

    def put(self, obj: str, rec: str) -> None:
        if (self.w.rec_type[rec], self.w.obj_type.get(obj)) not in self.w.can_contain:
            self.ok = False
            return
        self.go(rec)
        self.open(rec)
        self._say("putobject", o=obj, r=rec)
        self.inside[obj] = rec
        self.held = None

    def stow(self, obj: str) -> None:
        """Put down a held object that the task does not need, where that costs least."""
        places = [
            r
            for r in sorted(self.w.rec_loc)
            if (self.w.rec_type[r], self.w.obj_type.get(obj)) in self.w.can_contain
        ]
        if not places:
            self.ok = False
            return
        here = [r for r in places if self.w.rec_loc[r] == self.at]
        pool = here or places
        best = min(pool, key=lambda r: r in self.w.openable and r not in self.opened)
        self.put(obj, best)

    def treat(self, obj: str, task_type: str) -> None:
        tool_type, action, mark = TOOLS[task_type]
        if obj in self.marks.get(mark, ()):
            return
        tools = self.w.receptacles_of(tool_type)
        if not tools:
            self.ok = False
            return
        tool = min(tools, key=lambda r: self.w.rec_loc[r] != self.at)
        self.go(tool)
        self._say(action, o=obj, r=tool)
        self.marks.setdefault(mark, set()).add(obj)
        # Heating un-cools and cooling un-heats (alfred.pddl); nothing else reads the other mark.

    def use(self, lamp: str) -> None:
        rec = self.inside.get(lamp)
        if rec is None or rec not in self.w.rec_loc:
            self.ok = False
            return
        self.go(rec)
        if lamp not in self.marks.get("istoggled", ()):
            self._say("toggleobject", o=lamp)
            self.marks.setdefault("istoggled", set()).add(lamp)


def plan(
    goal: Goal, world: World, names: Mapping[str, str], templates: Mapping[str, str]
) -> list[str] | None:
    """Shortest plan over the task's choices, or ``None`` if the structure does not fit.

    Args:
        goal: The game's goal (:func:`parse_goal`).
        world: The current state (:meth:`World.from_facts`).
        names: Entity id -> the name the agent sees (``"mug 2"``).
        templates: TextWorld action name (``"pickupobject"``) -> command template.

    Returns:
        The commands, ``[]`` if the goal already holds, ``None`` if no plan of the task's
        structure exists here (the caller then asks a general planner).
    """
    search = _look_plans if goal.task_type == LOOK_TASK else _place_plans
    best: list[str] | None = None
    for commands in search(goal, world, names, templates):
        if best is None or len(commands) < len(best):
            best = commands
    return best


def _candidates(goal: Goal, world: World, exclude: Iterable[str] = ()) -> list[str]:
    skip = set(exclude)
    return [
        o
        for o in world.objects_of(goal.obj)
        if o not in skip and (o == world.held or (o in world.pickupable and o in world.inside))
    ]


def _place_plans(
    goal: Goal, world: World, names: Mapping[str, str], templates: Mapping[str, str]
) -> Iterable[list[str]]:
    if goal.task_type not in PLACE_TASKS or goal.recep is None:
        return
    mark = TOOLS[goal.task_type][2] if goal.task_type in TOOLS else None
    need = 2 if goal.task_type == "pick_two_obj_and_place" else 1
    for dest in world.receptacles_of(goal.recep):
        done = [
            o
            for o in world.objects_of(goal.obj)
            if world.inside.get(o) == dest and (mark is None or world.has(mark, o))
        ]
        if len(done) >= need:
            yield []
            return
        pool = _cheapest(_candidates(goal, world, done), goal, world, names, templates)
        for order in itertools.permutations(pool, need - len(done)):
            if world.held in pool and order[0] != world.held:
                continue  # the hand is full: the held object goes first
            sim = _Sim(world, names, templates)
            if sim.held is not None and sim.held not in order:
                sim.stow(sim.held)
            for obj in order:
                if sim.held != obj:
                    sim.take(obj)
                if mark is not None:
                    sim.treat(obj, goal.task_type)
                sim.put(obj, dest)
            if sim.ok:
                yield sim.commands


def _cheapest(
    pool: list[str],
    goal: Goal,
    world: World,
    names: Mapping[str, str],
    templates: Mapping[str, str],
) -> list[str]:
    """The candidates that cost least to pick up (at most ``_MAX_CANDIDATES``)."""
    if len(pool) <= _MAX_CANDIDATES:
        return pool

    def cost(obj: str) -> int:
        if obj == world.held:
            return 0
        sim = _Sim(world, names, templates)
        sim.held = None
        sim.take(obj)
        return len(sim.commands)

    return sorted(pool, key=lambda o: (cost(o), o))[:_MAX_CANDIDATES]


def _look_plans(
    goal: Goal, world: World, names: Mapping[str, str], templates: Mapping[str, str]
) -> Iterable[list[str]]:
    if goal.toggle is None:
        return
    lamps = world.objects_of(goal.toggle)
    for obj in _candidates(goal, world):
        for lamp in lamps:
            sim = _Sim(world, names, templates)
            if sim.held is not None and sim.held != obj:
                sim.stow(sim.held)
            if sim.held != obj:
                sim.take(obj)
            sim.use(lamp)
            if sim.ok:
                yield sim.commands
