"""Every file the project's text names exists in the repository.

Docstrings, docs, README, examples, specs and tests cite files by path (``solar/ir/cost.py``,
``docs/bounds.md``, ``hw_specs/h100_sxm.yaml``); a citation of a file that is not in the
repository (a renamed module, a design note users do not have) points readers nowhere. Paths
under the project's top-level folders must exist; a bare ``NAME.md`` must be some file's name.
Templates (``<NAME>``, ``{x}``, globs, ``...``) are not paths and are skipped; a name with no
suffix is a path only when it ends in ``/`` (a folder; ``results/clk/SM`` is a unit). A line that
names a missing file on purpose (a bad-input test) says ``missing on purpose``.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("solar", "docs", "tests", "examples", "bench", "hw_specs", "results", ".ci")
SCANNED = ("solar", "docs", "tests", "examples", "bench", "README.md", "pyproject.toml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".ipynb", ".json", ".txt"}
PATH = re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, TOP)) + r")/[\w./*<>{}-]*")
BARE_MD = re.compile(r"(?<![\w./-])[\w-]+\.md\b")
TEMPLATE = re.compile(r"[*<>{}]|\.\.\.")


def scanned_files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = ROOT / name
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += [f for f in p.rglob("*") if f.is_file() and f.suffix in SUFFIXES]
    # results are records of runs (their error lines name files as the run saw them)
    return [f for f in out if "__pycache__" not in f.parts and "results" not in f.parts]


def dangling(text: str, md_names: set[str]) -> list[str]:
    """The cited paths of ``text`` that name nothing in the repository."""
    bad = []
    for m in PATH.finditer(text):
        ref = m.group(0).rstrip(".,:;)")
        is_file = "." in ref.rsplit("/", 1)[-1]
        if TEMPLATE.search(ref) or not (is_file or ref.endswith("/")):
            continue
        if not (ROOT / ref).exists():
            bad.append(ref.rstrip("/"))
    bad += [m.group(0) for m in BARE_MD.finditer(text) if m.group(0) not in md_names]
    return bad


def test_every_cited_file_exists():
    md_names = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts}
    problems = []
    for f in scanned_files():
        if f == Path(__file__).resolve():
            continue
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        text = "\n".join(line for line in lines if "missing on purpose" not in line)
        for ref in dangling(text, md_names):
            problems.append(f"{f.relative_to(ROOT)}: {ref}")
    assert not problems, "cited files that do not exist:\n" + "\n".join(sorted(set(problems)))


def test_a_missing_citation_is_caught():
    md_names = {"README.md"}
    assert dangling("see DESIGN.md §5 and solar/no_such_module.py", md_names) == [
        "solar/no_such_module.py",
        "DESIGN.md",
    ]
    assert dangling("see README.md and solar/ir/cost.py, hw_specs/*.yaml", md_names) == []
