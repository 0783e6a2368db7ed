"""Build-once directories in agent-gym's cache, safe against concurrent builders."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

_DONE = "COMPLETE"


def is_built(directory: Path) -> bool:
    """True once :func:`build_once` has finished ``directory``."""
    return (directory / _DONE).is_file()


def build_once(directory: Path, build: Callable[[Path], None]) -> Path:
    """Create ``directory`` by calling ``build(tmp)`` on a private folder, then renaming it.

    Readers never see a half-built directory: the rename is atomic, and a directory without
    its completion marker is never used. When two processes build the same directory at once,
    the first rename wins and the other copy is discarded.

    Args:
        directory: The final location.
        build: Writes the files into the folder it is given.

    Returns:
        ``directory``.
    """
    if is_built(directory):
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.with_name(f".{directory.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.mkdir()
    try:
        build(tmp)
        (tmp / _DONE).write_text("ok\n", encoding="utf-8")
        if directory.exists() and not is_built(directory):
            # Left over from a crashed build (no marker): safe to replace.
            shutil.rmtree(directory, ignore_errors=True)
        try:
            os.replace(tmp, directory)
        except OSError:
            if not is_built(directory):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return directory
