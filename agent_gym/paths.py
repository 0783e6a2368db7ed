"""Where agent-gym keeps data it builds (generated games, catalogues, search indexes)."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any


def home() -> Path:
    """Root of agent-gym's on-disk cache: ``$AGENT_GYM_HOME`` or ``~/.cache/agent_gym``."""
    root = os.environ.get("AGENT_GYM_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache", "agent_gym"
    )
    return Path(root)


def cache_dir(*parts: str, create: bool = True) -> Path:
    """Return ``home()/part/...``, created unless ``create`` is False."""
    path = home().joinpath(*parts)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def params_key(params: dict[str, Any]) -> str:
    """A short stable hash of build parameters, used to name cached builds.

    Example:
        >>> params_key({"seed": 0, "n": 10}) == params_key({"n": 10, "seed": 0})
        True
    """
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    Readers (other processes building the same cache) never see a half-written file, and a
    write the disk refuses leaves none behind.

    Raises:
        OSError: The write failed; its ``filename`` is ``path``.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    os.replace(tmp, path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))
