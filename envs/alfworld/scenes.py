"""The 120 AI2-THOR scene layouts and the object rules that the ``alfworld`` wheel ships.

The wheel holds, for every ALFRED floor plan, ``gen/layouts/FloorPlanN-objects.json`` (the object
and receptacle types present in the scene) and ``FloorPlanN-openable.json`` (receptacle instance
ids such as ``"Cabinet|+00.06|+00.40|-01.35"`` with a navigation pose ``[x, z, rotation,
horizon]``), plus ``gen/constants.py`` (which receptacle type can hold which object type, which
objects can be heated, cooled, cleaned, toggled, sliced, and the train/test scene numbers). This
module reads them into plain Python values; :mod:`.generator` turns them into games.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The six ALFWorld task types, in upstream's numbering (``alfred_tw_env.TASK_TYPES`` 1..6).
TASK_TYPES: tuple[str, ...] = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)

#: Lamps that a ``look_at_obj_in_light`` task switches on.
TOGGLE_TYPES: tuple[str, ...] = ("DeskLamp", "FloorLamp")

#: Receptacle types a lamp may stand on (it must be visible, so none of these opens).
LAMP_SURFACES: tuple[str, ...] = (
    "Desk",
    "SideTable",
    "Dresser",
    "CoffeeTable",
    "DiningTable",
    "TVStand",
    "Shelf",
    "CounterTop",
)


@dataclass(frozen=True)
class Receptacle:
    """One receptacle instance of a scene.

    Attributes:
        id: AI2-THOR style id, e.g. ``"Sink|+00.71|+00.82|-01.77|SinkBasin"``.
        type: Receptacle type, e.g. ``"SinkBasin"`` (the last ``|`` field of a 5-field id).
        pose: Navigation pose ``(x, z, rotation, horizon)``; x and z in metres.
    """

    id: str
    type: str
    pose: tuple[float, float, int, int]

    @property
    def position(self) -> tuple[float, float, float]:
        """The ``(x, y, z)`` coordinates written in the id."""
        x, y, z = (float(v) for v in self.id.split("|")[1:4])
        return x, y, z


@dataclass(frozen=True)
class Scene:
    """What one floor plan offers to the generator.

    Attributes:
        num: Floor plan number (1-30 kitchens, 201-230 living rooms, 301-330 bedrooms, 401-430
            bathrooms).
        kind: ``"Kitchen"``, ``"LivingRoom"``, ``"Bedroom"`` or ``"Bathroom"``.
        receptacles: Receptacle instances listed in ``-openable.json`` whose type is a static
            ALFWorld receptacle, sorted by id.
        missing_receptacle_types: Static receptacle types listed in ``-objects.json`` but without
            an instance in ``-openable.json`` (coffee machines, stove burners, toasters...);
            the generator gives them synthetic instances.
        object_types: Pickable object types present in the scene (sliced variants excluded).
        toggle_types: Lamp types present in the scene.
    """

    num: int
    kind: str
    receptacles: tuple[Receptacle, ...]
    missing_receptacle_types: tuple[str, ...]
    object_types: tuple[str, ...]
    toggle_types: tuple[str, ...]

    @property
    def receptacle_types(self) -> frozenset[str]:
        """Receptacle types the scene has once the missing ones are added."""
        return frozenset(r.type for r in self.receptacles) | set(self.missing_receptacle_types)


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, Any]:
    """Object rules from ``alfworld.gen.constants`` (read once).

    Returns:
        A dict with ``can_contain`` (receptacle type -> frozenset of object types),
        ``static_receptacles`` (types that never move), ``movable_receptacles`` (bowls, mugs...,
        which the text env treats as objects), ``pickable`` (object types that some receptacle
        can hold, sliced variants excluded), ``openable``, ``heatable``, ``coolable``,
        ``cleanable``, ``sliceable``, ``goals_valid`` (task type -> scene kinds) and
        ``train_scenes`` / ``test_scenes``.
    """
    from alfworld.gen import constants as c

    can_contain = {k: frozenset(v) for k, v in c.VAL_RECEPTACLE_OBJECTS.items()}
    movable = frozenset(c.MOVABLE_RECEPTACLES)
    pickable = frozenset(
        o for held in can_contain.values() for o in held if not o.endswith("Sliced")
    )
    return {
        "can_contain": can_contain,
        "static_receptacles": frozenset(can_contain) - movable,
        "movable_receptacles": movable,
        "pickable": pickable,
        "openable": frozenset(c.OPENABLE_CLASS_LIST),
        "heatable": frozenset(c.VAL_ACTION_OBJECTS["Heatable"]),
        "coolable": frozenset(c.VAL_ACTION_OBJECTS["Coolable"]),
        "cleanable": frozenset(c.VAL_ACTION_OBJECTS["Cleanable"]),
        "sliceable": frozenset(c.VAL_ACTION_OBJECTS["Sliceable"]),
        "goals_valid": {k: frozenset(v) for k, v in c.GOALS_VALID.items()},
        "train_scenes": tuple(c.TRAIN_SCENE_NUMBERS),
        "test_scenes": tuple(c.TEST_SCENE_NUMBERS),
    }


def _layouts_dir() -> Path:
    import alfworld.gen

    return Path(alfworld.gen.__file__).resolve().parent / "layouts"


def scene_kind(num: int) -> str:
    """Scene kind of a floor plan number, e.g. ``scene_kind(11) == "Kitchen"``."""
    kinds = {0: "Kitchen", 2: "LivingRoom", 3: "Bedroom", 4: "Bathroom"}
    if num < 1 or num // 100 not in kinds or not 1 <= num % 100 <= 30:
        raise ValueError(f"no ALFRED floor plan {num}; valid: 1-30, 201-230, 301-330, 401-430")
    return kinds[num // 100]


def receptacle_type(receptacle_id: str) -> str:
    """Type of a receptacle id: ``"Sink|...|SinkBasin"`` -> ``"SinkBasin"``, else the first field."""
    parts = receptacle_id.split("|")
    return parts[-1] if len(parts) == 5 else parts[0]


@functools.cache
def load_scene(num: int) -> Scene:
    """Read one floor plan's layout files from the installed ``alfworld`` wheel.

    Args:
        num: Floor plan number.

    Raises:
        FileNotFoundError: The layout files are missing (the ``alfworld`` install is broken).
    """
    r = rules()
    root = _layouts_dir()
    objects_path = root / f"FloorPlan{num}-objects.json"
    openable_path = root / f"FloorPlan{num}-openable.json"
    if not objects_path.is_file() or not openable_path.is_file():
        raise FileNotFoundError(
            f"scene layout {objects_path.name} / {openable_path.name} not found in {root}; "
            "reinstall the alfworld package: pip install --force-reinstall alfworld==0.4.2"
        )
    present = set(json.loads(objects_path.read_text()))
    openable = json.loads(openable_path.read_text())
    receptacles = tuple(
        Receptacle(rid, receptacle_type(rid), tuple(pose))  # type: ignore[arg-type]
        for rid, pose in sorted(openable.items())
        if receptacle_type(rid) in r["static_receptacles"]
    )
    listed = {rec.type for rec in receptacles}
    missing = tuple(sorted((present & r["static_receptacles"]) - listed))
    return Scene(
        num=num,
        kind=scene_kind(num),
        receptacles=receptacles,
        missing_receptacle_types=missing,
        object_types=tuple(sorted(present & r["pickable"])),
        toggle_types=tuple(t for t in TOGGLE_TYPES if t in present),
    )


def split_scenes(split: str) -> tuple[int, ...]:
    """Floor plans a split draws from.

    ``train`` and ``valid_seen`` use ALFRED's training scenes (24 of each 30); ``valid_unseen``
    uses the other 6 of each kind, which training never sees (ALFWorld's seen/unseen split).
    """
    r = rules()
    if split in ("train", "valid_seen"):
        return r["train_scenes"]
    if split == "valid_unseen":
        return r["test_scenes"]
    raise ValueError(f"unknown split {split!r}; use 'train', 'valid_seen' or 'valid_unseen'")
