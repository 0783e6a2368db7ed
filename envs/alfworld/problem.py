"""PDDL problem text and walkthrough of one generated ALFWorld game.

The problem mirrors what upstream's ``augment_pddl_states.py`` writes into ``game.tw-pddl``
(object/receptacle/location constants with mangled AI2-THOR ids, ``receptacleType``,
``objectType``, ``canContain``, ability facts, ``inReceptacle``, locations, and the goal from
``goal_library``), minus the unused legacy constants (bare type names declared as objects).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from agent_gym.envs.alfworld import scenes

if TYPE_CHECKING:
    from agent_gym.envs.alfworld.generator import Goal
    from agent_gym.envs.alfworld.scenes import Receptacle

#: Constants the wheel's ``alfred.pddl`` names in its actions; every problem declares them.
DOMAIN_OTYPES = ("ButterKnife", "Knife")
DOMAIN_RTYPES = ("Fridge", "Microwave", "SinkBasin")

#: Tool receptacle type and verb of each state-change task.
TOOLS = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "clean"),
    "pick_heat_then_place_in_recep": ("Microwave", "heat"),
    "pick_cool_then_place_in_recep": ("Fridge", "cool"),
}


def mangle(entity_id: str) -> str:
    """Upstream's PDDL-safe id: ``"Cup|+00.10|-01.35"`` -> ``"Cup_bar__plus_00_dot_10_bar__minus_01_dot_35"``."""
    for a, b in (("|", "_bar_"), ("-", "_minus_"), ("+", "_plus_"), (".", "_dot_")):
        entity_id = entity_id.replace(a, b)
    return entity_id


def demangled_names(ids: list[str]) -> dict[str, str]:
    """Names the agent sees, keyed by lower-cased mangled id (``"cabinet 3"``).

    Uses ALFWorld's own ``Demangler`` (numbering by sorted id), which is also what the env
    applies to TextWorld's entities, so walkthrough commands match admissible commands exactly.
    """
    from types import SimpleNamespace

    from alfworld.agents.utils.misc import Demangler

    lowered = sorted({mangle(i).lower() for i in ids})
    infos = {i: SimpleNamespace(id=i) for i in lowered}
    demangler = Demangler(game_infos=infos)
    return {i: demangler.demangle_alfred_name(i) for i in lowered}


def build_problem(
    goal: Goal,
    receptacles: list[Receptacle],
    placement: list[tuple[str, str, Receptacle]],
    locations: tuple[dict[str, str], str],
    rng: random.Random,
    name: str,
) -> tuple[str, list[str]]:
    """Write the PDDL problem and a walkthrough that solves it.

    Args:
        goal: Task parameters.
        receptacles: Receptacle instances, sorted by id.
        placement: ``(object id, object type, receptacle)`` for every object instance.
        locations: Receptacle id -> location name, and the agent's start location.
        rng: Generator's random stream (picks which instances the walkthrough uses).
        name: Problem name suffix.

    Returns:
        ``(problem text, walkthrough commands)``.
    """
    from alfworld.gen import goal_library

    r = scenes.rules()
    locs, start = locations
    objects = sorted(placement, key=lambda p: p[0])
    otypes = sorted({t for _, t, _ in objects} | set(DOMAIN_OTYPES))
    rtypes = sorted({rec.type for rec in receptacles} | set(DOMAIN_RTYPES))

    decl = ["agent1 - agent"]
    decl += [f"{t}Type - otype" for t in otypes]
    decl += [f"{t}Type - rtype" for t in rtypes]
    decl += [f"{mangle(oid)} - object" for oid, _, _ in objects]
    decl += [f"{mangle(rec.id)} - receptacle" for rec in receptacles]
    decl += [f"{loc} - location" for loc in sorted({*locs.values(), start})]

    present = {rec.type for rec in receptacles}
    facts = [f"(receptacleType {mangle(rec.id)} {rec.type}Type)" for rec in receptacles]
    facts += [f"(objectType {mangle(oid)} {t}Type)" for oid, t, _ in objects]
    facts += [
        f"(canContain {rt}Type {ot}Type)"
        for rt in sorted(present)
        for ot in otypes
        if ot in r["can_contain"][rt]
    ]
    for oid, t, _ in objects:
        m = mangle(oid)
        if t in r["pickable"]:
            facts.append(f"(pickupable {m})")
        if t in r["movable_receptacles"]:
            facts.append(f"(isReceptacleObject {m})")
        for ability in ("cleanable", "heatable", "coolable", "sliceable"):
            if t in r[ability]:
                facts.append(f"({ability} {m})")
        if t in scenes.TOGGLE_TYPES:
            facts.append(f"(toggleable {m})")
    facts += [f"(openable {mangle(rec.id)})" for rec in receptacles if rec.type in r["openable"]]
    facts.append(f"(atLocation agent1 {start})")
    facts += [f"(inReceptacle {mangle(oid)} {mangle(rec.id)})" for oid, _, rec in objects]
    facts += [f"(receptacleAtLocation {mangle(rec.id)} {locs[rec.id]})" for rec in receptacles]
    facts += [f"(objectAtLocation {mangle(oid)} {locs[rec.id]})" for oid, _, rec in objects]

    goal_pddl = goal_library.gdict[goal.task_type]["pddl"].format(
        obj=goal.object_target, recep=goal.parent_target, toggle=goal.toggle_target
    )
    problem = (
        f"(define (problem plan_{name})\n(:domain alfred)\n(:objects\n"
        + "\n".join(f"        {d}" for d in decl)
        + "\n        )\n\n(:init\n"
        + "\n".join(f"        {f}" for f in facts)
        + "\n        )\n"
        # goal_library writes '#' for '-' in its type annotations and closes the define.
        + goal_pddl.replace("#", "-")
    )
    ids = [oid for oid, _, _ in objects] + [rec.id for rec in receptacles]
    names = demangled_names(ids)
    return problem, _walkthrough(goal, receptacles, objects, names, rng)


def _walkthrough(
    goal: Goal,
    receptacles: list[Receptacle],
    objects: list[tuple[str, str, Receptacle]],
    names: dict[str, str],
    rng: random.Random,
) -> list[str]:
    """Commands that solve the game from its start (open, take, use tool, move)."""
    openable = scenes.rules()["openable"]
    plan: list[str] = []
    at: list[str] = [""]
    opened: set[str] = set()

    def nm(entity_id: str) -> str:
        return names[mangle(entity_id).lower()]

    def go(rec: Receptacle) -> None:
        if at[0] != rec.id:
            plan.append(f"go to {nm(rec.id)}")
            at[0] = rec.id

    def open_(rec: Receptacle) -> None:
        if rec.type in openable and rec.id not in opened:
            plan.append(f"open {nm(rec.id)}")
            opened.add(rec.id)

    def take(oid: str, src: Receptacle) -> None:
        go(src)
        open_(src)
        plan.append(f"take {nm(oid)} from {nm(src.id)}")

    def put(oid: str, dst: Receptacle) -> None:
        go(dst)
        open_(dst)
        plan.append(f"move {nm(oid)} to {nm(dst.id)}")

    targets = [(oid, rec) for oid, t, rec in objects if t == goal.object_target]
    if goal.task_type == "look_at_obj_in_light":
        oid, src = rng.choice(targets)
        lamp, lamp_rec = next((o, rec) for o, t, rec in objects if t == goal.toggle_target)
        take(oid, src)
        go(lamp_rec)
        plan.append(f"use {nm(lamp)}")
        return plan

    dst = rng.choice([rec for rec in receptacles if rec.type == goal.parent_target])
    count = 2 if goal.task_type == "pick_two_obj_and_place" else 1
    for oid, src in rng.sample(targets, count):
        take(oid, src)
        if goal.task_type in TOOLS:
            tool_type, verb = TOOLS[goal.task_type]
            tool = rng.choice([rec for rec in receptacles if rec.type == tool_type])
            go(tool)
            plan.append(f"{verb} {nm(oid)} with {nm(tool.id)}")
        put(oid, dst)
    return plan
