r"""Reading the envs' data files: JSON and JSONL with errors that name the file and the line.

Every loader of official or user-supplied data goes through :func:`read_json` or
:func:`iter_jsonl`, so a file that is missing, not UTF-8, or not valid JSON fails the same way
in every env: one line naming the file (and the line for JSONL), never a bare
``UnicodeDecodeError`` or ``JSONDecodeError``.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "queries.jsonl"
>>> _ = p.write_text('{"q": 1}\n\n{"q": 2}\n')
>>> [(line, rec["q"]) for line, rec in iter_jsonl(p)]
[(1, 1), (3, 2)]
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DataFileError(ValueError):
    """A data file cannot be read as the format it should have; the message names it."""


def _decode_error(path: Path, exc: UnicodeDecodeError, line: int | None = None) -> str:
    where = f"{path}: line {line}" if line is not None else str(path)
    return (
        f"{where}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
        "re-encode the file as UTF-8"
    )


def read_json(path: str | Path, *, error: type[Exception] = DataFileError) -> Any:
    """Parse a whole JSON file.

    Args:
        path: The file.
        error: Exception class raised on a bad file (an env's own subclass of
            :class:`DataFileError`, say).

    Raises:
        error: The file is missing, unreadable, not UTF-8 or not valid JSON.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(_decode_error(path, exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
        ) from None


def iter_jsonl(
    path: str | Path, *, error: type[Exception] = DataFileError, objects: bool = True
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, record)`` for every non-blank line of a JSONL file.

    Args:
        path: The file.
        error: Exception class raised on a bad file or line.
        objects: Require every record to be a JSON object.

    Raises:
        error: The file is missing or unreadable, or a line is not UTF-8, not valid JSON, or
            (with ``objects``) not an object. The message names the file and line.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(_decode_error(path, exc, lineno)) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from None
            if objects and not isinstance(record, dict):
                raise error(
                    f"{path}: line {lineno}: expected a JSON object, got {type(record).__name__}"
                )
            yield lineno, record
