"""README.md is run: every ``solar`` command and every Python block in it, so the README
cannot drift from the product.

The rule (stated in the README): fenced blocks tagged ``bash``/``sh``/``shell`` (or untagged
blocks of ``solar`` commands) are shell, ``python`` blocks are Python, anything else (``text``)
is output. A block whose first line is ``# needs a CUDA GPU`` is not run. In shell blocks,
commands are split at ``&&`` and line ends; the environment setup commands (``python3 -m
venv``, ``. .venv/bin/activate``, ``pip install``, ``ruff``, ``python -m pytest``) are not run:
this test runs inside exactly that setup. Every other command runs: ``solar ...`` through the
installed console script, the rest with ``bash``.

Everything runs once, in one fresh interpreter (a module-scoped fixture, so the ``torch``
import is paid once), in a scratch folder that links the repository's ``examples/`` (commands
that write files write there, never into the repository). A sample output block introduced by
"`solar ...` prints:" must agree with what that command prints: every number with a unit in
the sample appears in the real output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from console import SCRIPT

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GPU_MARK = "# needs a CUDA GPU"
SETUP = ("python3 -m venv", ". .venv/bin/activate", "source .venv/bin/activate", "pip install",
         "ruff ", "python -m pytest", "pytest")  # fmt: skip
SHELL_TAGS = ("bash", "sh", "shell", "console")


@dataclass(frozen=True)
class Block:
    tag: str
    code: str
    line: int  # of the opening fence
    before: str  # the paragraph before the block

    @property
    def gpu(self) -> bool:
        first = next((x.strip() for x in self.code.splitlines() if x.strip()), "")
        return first.startswith(GPU_MARK)

    @property
    def kind(self) -> str:
        if self.tag == "python":
            return "python"
        if self.tag in SHELL_TAGS:
            return "shell"
        if not self.tag and any(x.strip().startswith("solar ") for x in self.code.splitlines()):
            return "shell"
        return "output"


def blocks(text: str) -> list[Block]:
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)", lines[i])
        if not m:
            i += 1
            continue
        start, tag = i, m.group(1)
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        para = []
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        while k >= 0 and lines[k].strip():
            para.insert(0, lines[k])
            k -= 1
        out.append(Block(tag, "\n".join(lines[i + 1 : j]) + "\n", start + 1, " ".join(para)))
        i = j + 1
    return out


def commands(block: Block) -> list[str]:
    """The shell commands of a block, comments and continuations resolved."""
    text = block.code.replace("\\\n", " ")
    out = []
    for raw in text.splitlines():
        line = re.sub(r"\s+#.*$", "", raw).strip()
        if not line or line.startswith("#"):
            continue
        out += [c.strip() for c in line.split("&&") if c.strip()]
    return out


ALL = blocks(README.read_text())
RUN = [b for b in ALL if b.kind != "output" and not b.gpu]
JOBS: list[dict] = []
for b in RUN:
    if b.kind == "python":
        JOBS.append({"kind": "python", "code": b.code, "where": f"README.md:{b.line}"})
        continue
    for cmd in commands(b):
        if cmd.startswith(SETUP):
            continue
        kind = "solar" if cmd.startswith("solar ") else "shell"
        job = {"kind": kind, "cmd": cmd, "where": f"README.md:{b.line}"}
        if job["cmd"] not in [j.get("cmd") for j in JOBS]:
            JOBS.append(job)

DRIVER = r"""
import contextlib, io, json, runpy, shlex, subprocess, sys, traceback
jobs = json.loads(sys.stdin.read())
script = sys.argv[1]
results = []
for job in jobs:
    out, err, code = io.StringIO(), io.StringIO(), 0
    try:
        if job["kind"] == "shell":
            r = subprocess.run(job["cmd"], shell=True, capture_output=True, text=True)
            out.write(r.stdout), err.write(r.stderr)
            code = r.returncode
        else:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                if job["kind"] == "solar":
                    sys.argv = [script, *shlex.split(job["cmd"])[1:]]
                    runpy.run_path(script, run_name="__main__")
                else:
                    exec(compile(job["code"], job["where"], "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        err.write(traceback.format_exc())
        code = 1
    results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
print("\n@@RESULTS@@" + json.dumps(results))
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """Every job, run once in one fresh interpreter inside a scratch folder."""
    scratch = tmp_path_factory.mktemp("readme")
    (scratch / "examples").symlink_to(ROOT / "examples")
    (scratch / "docs" / "img").mkdir(parents=True)
    env_cols = {"COLUMNS": "140", "MPLBACKEND": "Agg"}
    r = subprocess.run(
        [sys.executable, "-c", DRIVER, str(SCRIPT)],
        input=json.dumps(JOBS),
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env_cols},
    )
    assert "@@RESULTS@@" in r.stdout, r.stderr[-3000:]
    results = json.loads(r.stdout.split("@@RESULTS@@")[-1])
    return scratch, results


def test_readme_blocks_are_classified():
    """Commands and Python are run, GPU blocks are marked, outputs are tagged ``text``."""
    kinds = {b.kind for b in ALL}
    assert {"python", "shell", "output"} <= kinds
    assert any(b.gpu for b in ALL), "the GPU block must carry the visible marker"
    for b in ALL:
        assert b.kind != "output" or b.tag == "text", f"README.md:{b.line}: tag output `text`"
    assert any(j["kind"] == "solar" for j in JOBS) and any(j["kind"] == "python" for j in JOBS)


@pytest.mark.parametrize("i", range(len(JOBS)), ids=[j.get("cmd", j["where"]) for j in JOBS])
def test_readme_job_runs(ran, i):
    scratch, results = ran
    job, res = JOBS[i], results[i]
    assert res["code"] == 0, (
        f"{job['where']}: {job.get('cmd', 'python block')}\n{res['err'][-3000:]}"
    )
    cmd = job.get("cmd", "")
    if job["kind"] == "solar":
        assert res["out"].strip(), f"{cmd} printed nothing"
    if " --json" in cmd:
        json.loads(res["out"])
    for flag in ("--dot", "--out"):
        m = re.search(rf"{flag} (\S+)", cmd)
        if m:
            assert (scratch / m.group(1)).exists(), f"{cmd} wrote no {m.group(1)}"


def test_readme_sample_output_is_what_the_command_prints(ran):
    """A ``text`` block introduced by "`solar ...` prints:" agrees with the real output."""
    _, results = ran
    checked = 0
    for b in ALL:
        m = re.search(r"`(solar [^`]+)` prints:\s*$", b.before)
        if b.kind != "output" or not m:
            continue
        k = next(i for i, j in enumerate(JOBS) if j.get("cmd") == m.group(1))
        real = results[k]["out"]
        numbers = re.findall(r"\d+(?:\.\d+)? (?:ms|us|ns|MB|GB|TB/s|MHz)\b", b.code)
        assert numbers
        missing = [n for n in numbers if n not in real]
        assert not missing, f"README.md:{b.line}: not in `{m.group(1)}`'s output: {missing}"
        checked += 1
    assert checked >= 1
