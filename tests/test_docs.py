"""The repository is self-contained: every document it points to is in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Documents that live outside the repository and must never be cited from it.
# (Spelled in pieces so that this file does not itself cite them.)
_SHARED = "sha" + "red"
OUTSIDE = re.compile(
    "|".join(["ALGOS" + "_SPEC", "DES" + r"IGN\.md", "STY" + r"LE\.md", r"\.\./" + _SHARED,
              r"\b" + _SHARED + "/notes", "no" + r"tes/[\w-]+\.md"])
)  # fmt: skip
DOC_REF = re.compile(r"\bdocs/[\w./-]+\.md")
MD_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    suffixes = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".jinja", ".html"}
    return [
        ROOT / p for p in out.stdout.splitlines() if Path(p).suffix in suffixes or p == ".ci/run"
    ]


def test_no_file_cites_a_document_outside_the_repository():
    this = Path(__file__).resolve()
    bad = []
    for path in _tracked_text_files():
        if path == this or not path.is_file():
            continue
        for n, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
        ):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def test_every_referenced_doc_exists():
    missing = []
    for path in _tracked_text_files():
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for ref in DOC_REF.findall(text):
            if not (ROOT / ref).is_file():
                missing.append(f"{path.relative_to(ROOT)} -> {ref}")
        if path.suffix == ".md":
            for link in MD_LINK.findall(text):
                if "://" not in link and not (path.parent / link).resolve().is_file():
                    missing.append(f"{path.relative_to(ROOT)} -> {link}")
    assert not missing, "\n".join(missing)


def test_the_checks_can_fail():
    assert OUTSIDE.search("see ALGOS" + "_SPEC §3") and OUTSIDE.search(
        f"../{_SHARED}/DES" + "IGN.md"
    )
    assert DOC_REF.findall("mirrored in ``docs/env_contract.md``") == ["docs/env_contract.md"]
    assert MD_LINK.findall("[the page](datasets.md#webshop)") == ["datasets.md"]
