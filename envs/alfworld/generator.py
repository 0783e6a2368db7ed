"""Seeded generator of ALFWorld-format games (``game.tw-pddl``) from the wheel's scene layouts.

Upstream builds its games from AI2-THOR runs (``alfworld/gen/scripts/augment_pddl_states.py``,
not in the wheel, needs the simulator). This generator writes the same file format from what the
wheel does ship (:mod:`.scenes`): for game ``index`` of a split it picks a task type (cycling
through the six), a floor plan of a kind upstream allows for that type (``GOALS_VALID``), a goal
(object, receptacle, lamp) that the constraints allow, and a placement of the scene's objects;
then it writes the PDDL problem, the grammar with the goal sentence, and a walkthrough.

Rules followed from upstream:

* an object only ever lies in a receptacle that can hold it (``VAL_RECEPTACLE_OBJECTS``), and
  the goal receptacle must be able to hold the goal object;
* no task whose goal receptacle is its own tool (no "clean X and put it in the sinkbasin", no
  "heat X and put it in the microwave", no "cool X and put it in the fridge");
* movable receptacles (bowl, mug, pot, ...) are objects, never goal receptacles, and sliced
  objects are left out, as ALFWorld's text env skips ``movable`` and ``Sliced`` games;
* no goal holds at the start: no object of the goal type starts in a receptacle of the goal
  type;
* every receptacle gets its own location (the layouts give some the same pose).

Everything is drawn from ``random.Random`` seeded with a string of (seed, split, index), and
only sorted sequences are sampled from, so a game file is byte-identical across runs and
machines.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agent_gym.envs.alfworld import scenes
from agent_gym.envs.alfworld.problem import TOOLS, build_problem
from agent_gym.envs.alfworld.scenes import TASK_TYPES, Receptacle, Scene
from agent_gym.paths import atomic_write_text

#: Bump when the same (seed, split, index) would give a different game; it keys the cache.
GENERATOR_VERSION = 1

#: Upstream's caps: at most 3 instances of a scene object type (``MAX_NUM_OF_OBJ_INSTANCES``).
MAX_INSTANCES = 3


@dataclass(frozen=True)
class Goal:
    """What a game asks, in upstream's ``traj_data.json["pddl_params"]`` terms.

    Attributes:
        task_type: One of :data:`TASK_TYPES`.
        object_target: Object type to move or look at, e.g. ``"Mug"``.
        parent_target: Goal receptacle type (``""`` for ``look_at_obj_in_light``).
        toggle_target: Lamp type for ``look_at_obj_in_light`` (``""`` otherwise).
    """

    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""


@dataclass
class Game:
    """One generated game, ready to be written in the official layout.

    Attributes:
        split: ``train``, ``valid_seen`` or ``valid_unseen``.
        index: Index of the game in its split.
        scene: Floor plan number.
        goal: The task parameters.
        task_desc: Goal sentence, e.g. ``"put a clean mug in coffeemachine"``.
        pddl_problem: PDDL problem text.
        walkthrough: Commands that solve the game from its start.
        seed: Base seed of the game set.
    """

    split: str
    index: int
    scene: int
    goal: Goal
    task_desc: str
    pddl_problem: str
    walkthrough: list[str] = field(default_factory=list)
    seed: int = 0

    @property
    def task_dir(self) -> str:
        """Upstream's task folder name: ``<type>-<object>-<mrecep>-<receptacle or lamp>-<scene>``."""
        g = self.goal
        last = g.toggle_target or g.parent_target
        return f"{g.task_type}-{g.object_target}-None-{last}-{self.scene}"

    @property
    def task_id(self) -> str:
        """``<split>/<task_dir>/trial_gen_<index>``: the game's path in the official layout."""
        return f"{self.split}/{self.task_dir}/{trial_name(self.index)}"

    def game_json(self, domain: str, grammar: str) -> str:
        """The ``game.tw-pddl`` text (upstream keys plus ``walkthrough``, read by TextWorld)."""
        data = {
            "pddl_domain": domain,
            "grammar": grammar.replace("UNKNOWN GOAL", self.task_desc),
            "pddl_problem": self.pddl_problem,
            "solvable": True,
            "walkthrough": self.walkthrough,
        }
        return json.dumps(data)

    def traj_data(self) -> dict:
        """Sidecar ``traj_data.json`` with the keys upstream's loaders read, marked generated."""
        return {
            "task_type": self.goal.task_type,
            "pddl_params": {
                "object_target": self.goal.object_target,
                "parent_target": self.goal.parent_target,
                "toggle_target": self.goal.toggle_target,
                "mrecep_target": "",
                "object_sliced": False,
            },
            "scene": {"floor_plan": f"FloorPlan{self.scene}", "scene_num": self.scene},
            "task_id": self.task_id,
            "turk_annotations": {"anns": [{"task_desc": self.task_desc}]},
            "generated": {
                "by": "agent-gym",
                "generator_version": GENERATOR_VERSION,
                "seed": self.seed,
                "split": self.split,
                "index": self.index,
                "note": "procedurally generated from alfworld's scene layouts; "
                "not an official ALFWorld game",
            },
        }


def trial_name(index: int) -> str:
    """Folder name of generated game ``index``: ``trial_gen_00042``."""
    return f"trial_gen_{index:05d}"


def parse_task_id(task_id: str) -> tuple[str, int]:
    """Split and index of a generated game's task id.

    Raises:
        ValueError: ``task_id`` is not of the form ``<split>/<task_dir>/trial_gen_<index>``.
    """
    parts = task_id.split("/")
    if len(parts) == 3 and parts[2].startswith("trial_gen_") and parts[2][10:].isdigit():
        return parts[0], int(parts[2][10:])
    raise ValueError(
        f"task_id {task_id!r} is not a generated ALFWorld game id; expected "
        "'<split>/<task folder>/trial_gen_<index>' as returned in info['task_id']"
    )


# ------------------------------------------------------------------------------------------
# Sampling


def _candidate_goals(task_type: str, scene: Scene) -> list[Goal]:
    """Every goal the rules allow in ``scene`` (sorted, so sampling is reproducible)."""
    r = scenes.rules()
    if scene.kind not in r["goals_valid"][task_type]:
        return []
    recep_types = sorted(scene.receptacle_types)
    objects = scene.object_types
    if task_type == "look_at_obj_in_light":
        return [
            Goal(task_type, o, toggle_target=t)
            for o in objects
            for t in scene.toggle_types
            if _holders(o, scene, exclude="")
        ]
    required = {
        "pick_clean_then_place_in_recep": "cleanable",
        "pick_heat_then_place_in_recep": "heatable",
        "pick_cool_then_place_in_recep": "coolable",
    }.get(task_type)
    tool = TOOLS.get(task_type, ("", ""))[0]
    if tool and tool not in recep_types:
        return []
    goals = []
    for o in objects:
        if required and o not in r[required]:
            continue
        for rt in recep_types:
            # The goal receptacle must hold the object, must not be the task's own tool, and
            # some other receptacle must hold the object at the start.
            if rt != tool and o in r["can_contain"][rt] and _holders(o, scene, exclude=rt):
                goals.append(Goal(task_type, o, parent_target=rt))
    return goals


def _holders(obj: str, scene: Scene, exclude: str) -> bool:
    can = scenes.rules()["can_contain"]
    return any(obj in can[rt] for rt in scene.receptacle_types if rt != exclude)


def _fmt(v: float) -> str:
    return f"{v:+06.2f}"


def _loc_name(pose: tuple[float, float, int, int]) -> str:
    # Upstream's location names: grid cell (0.25 m), rotation / 90, camera horizon.
    x, z, rot, hor = pose
    fields = [round(x / 0.25), round(z / 0.25), int(rot) // 90 % 4, int(hor)]
    return "loc_bar_" + "_bar_".join(str(f).replace("-", "_minus_") for f in fields)


def _synthetic_receptacles(scene: Scene, rng: random.Random) -> list[Receptacle]:
    """Instances for receptacle types the scene lists without a pose (stove burners...)."""
    out = []
    taken = {r.id for r in scene.receptacles}
    for rtype in scene.missing_receptacle_types:
        count = rng.randint(2, 4) if rtype == "StoveBurner" else 1
        for _ in range(count):
            while True:
                x, y, z = (round(rng.uniform(-3.0, 3.0), 2) for _ in range(3))
                rid = f"{rtype}|{_fmt(x)}|{_fmt(abs(y))}|{_fmt(z)}"
                if rtype in ("SinkBasin", "BathtubBasin"):
                    rid = f"{rtype[:-5]}|{_fmt(x)}|{_fmt(abs(y))}|{_fmt(z)}|{rtype}"
                if rid not in taken:
                    break
            taken.add(rid)
            pose = (round(x * 4) / 4, round(z * 4) / 4, rng.choice((0, 90, 180, 270)), 30)
            out.append(Receptacle(rid, rtype, pose))
    return out


def _locations(receptacles: list[Receptacle], rng: random.Random) -> tuple[dict[str, str], str]:
    """A distinct location per receptacle, plus a start location that holds no receptacle."""
    used: set[str] = set()
    locs = {}
    for rec in receptacles:
        x, z, rot, hor = rec.pose
        name = _loc_name((x, z, rot, hor))
        while name in used:  # poses shared in the layout: nudge the camera horizon
            hor += 5
            name = _loc_name((x, z, rot, hor))
        used.add(name)
        locs[rec.id] = name
    while True:
        start = _loc_name((rng.randint(-20, 20) / 4, rng.randint(-20, 20) / 4, 0, 30))
        if start not in used:
            return locs, start


def _place_objects(
    goal: Goal, scene: Scene, receptacles: list[Receptacle], rng: random.Random
) -> list[tuple[str, str, Receptacle]] | None:
    """Draw object instances and their receptacles: ``[(object id, type, receptacle)]``.

    Returns None when the goal object cannot be placed (the caller draws another goal).
    """
    can = scenes.rules()["can_contain"]
    taken: set[str] = {r.id for r in receptacles}
    placed: list[tuple[str, str, Receptacle]] = []
    surfaces = [r for r in receptacles if r.type in scenes.LAMP_SURFACES]
    for otype in scene.object_types:
        if otype == goal.object_target:
            low = 2 if goal.task_type == "pick_two_obj_and_place" else 1
            count = rng.randint(low, MAX_INSTANCES)
        else:
            count = rng.randint(1, MAX_INSTANCES)
        exclude = goal.parent_target if otype == goal.object_target else None
        holders = [r for r in receptacles if otype in can[r.type] and r.type != exclude]
        if not holders:
            if otype == goal.object_target:
                return None
            continue
        for _ in range(count):
            rec = rng.choice(holders)
            placed.append((_object_id(otype, rec, rng, taken), otype, rec))
    if goal.toggle_target:
        if not surfaces:
            return None
        lamp = rng.choice(surfaces)
        placed.append((_object_id(goal.toggle_target, lamp, rng, taken), goal.toggle_target, lamp))
    return placed


def _object_id(otype: str, rec: Receptacle, rng: random.Random, taken: set[str]) -> str:
    x0, y0, z0 = rec.position
    while True:
        x, y, z = (v + rng.uniform(-0.3, 0.3) for v in (x0, y0, z0))
        oid = f"{otype}|{_fmt(x)}|{_fmt(abs(y))}|{_fmt(z)}"
        if oid not in taken:
            taken.add(oid)
            return oid


def generate(split: str, index: int, seed: int = 0) -> Game:
    """Generate game ``index`` of ``split`` (deterministic in ``(seed, split, index)``).

    Args:
        split: ``train``, ``valid_seen`` or ``valid_unseen`` (see :func:`scenes.split_scenes`).
        index: Game index, ``>= 0``; its task type is ``TASK_TYPES[index % 6]``.
        seed: Base seed of the game set.

    Returns:
        The game; write it with :func:`write_game`.

    Example:
        >>> game = generate("train", 3)
        >>> game.goal.task_type
        'pick_heat_then_place_in_recep'
    """
    if index < 0:
        raise ValueError(f"game index must be >= 0, got {index}")
    rng = random.Random(f"agent-gym/alfworld/v{GENERATOR_VERSION}/{seed}/{split}/{index}")
    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    pool = [scenes.load_scene(n) for n in scenes.split_scenes(split)]
    pool = [s for s in pool if s.kind in scenes.rules()["goals_valid"][task_type]]
    for _ in range(100):
        scene = rng.choice(pool)
        goals = _candidate_goals(task_type, scene)
        if not goals:
            continue
        goal = rng.choice(goals)
        receptacles = sorted(
            list(scene.receptacles) + _synthetic_receptacles(scene, rng), key=lambda r: r.id
        )
        placement = _place_objects(goal, scene, receptacles, rng)
        if placement is None:
            continue
        problem, walkthrough = build_problem(
            goal, receptacles, placement, _locations(receptacles, rng), rng, name=f"{split}_{index}"
        )
        return Game(
            split=split,
            index=index,
            scene=scene.num,
            goal=goal,
            task_desc=_task_desc(goal, rng),
            pddl_problem=problem,
            walkthrough=walkthrough,
            seed=seed,
        )
    raise RuntimeError(f"no valid {task_type} game found for {split}/{index} after 100 draws")


def _task_desc(goal: Goal, rng: random.Random) -> str:
    # upstream's get_templated_task_desc: a goal_library template with lower-cased type names
    from alfworld.gen import goal_library

    template = rng.choice(goal_library.gdict[goal.task_type]["templates"])
    return template.format(
        obj=goal.object_target.lower(),
        recep=goal.parent_target.lower(),
        toggle=goal.toggle_target.lower(),
    )


def write_game(game: Game, root: Path, domain: str, grammar: str) -> Path:
    """Write ``game.tw-pddl`` and ``traj_data.json`` under ``root/<task_id>/``, atomically.

    Returns:
        Path of the ``game.tw-pddl`` file.
    """
    folder = Path(root) / game.task_id
    atomic_write_text(folder / "traj_data.json", json.dumps(game.traj_data(), indent=2))
    # The game file last: a reader that finds it also finds traj_data.json.
    atomic_write_text(folder / "game.tw-pddl", game.game_json(domain, grammar))
    return folder / "game.tw-pddl"


def goal_dict(goal: Goal) -> dict[str, str]:
    """The goal as a plain dict (for infos and logs)."""
    return asdict(goal)
