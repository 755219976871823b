"""Run the installed ``solar`` console script in a subprocess, as a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the console script pip installed beside this interpreter (a venv's bin/, or Scripts\ on Windows)
SCRIPT = Path(sys.executable).with_name("solar")


def run_solar(*argv, cwd: str | Path = ROOT, timeout: float = 600) -> tuple[int, str, str]:
    """``solar ARGV...`` -> (exit status, stdout, stderr)."""
    if not SCRIPT.exists():
        raise FileNotFoundError(
            f"{SCRIPT}: the solar console script is not installed (pip install -e .)"
        )
    env = {**os.environ, "COLUMNS": "140"}
    r = subprocess.run(
        [str(SCRIPT), *map(str, argv)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return r.returncode, r.stdout, r.stderr


def run_bench_script(name: str, *argv, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python bench/NAME ARGV...`` with the checkout on the path, as the GPU scripts' CPU
    smoke tests run them; asserts it succeeded."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r
