"""``python -m solar.bench startup``: how long the commands that need no framework take to start.

Each command runs in a fresh process, ``--repeat`` times, the commands taking turns (so a slow
spell of a shared machine hits them alike); the median wall time is reported, and the same for
``python -c pass`` (the interpreter alone), so ``over python`` is what solar adds. The median
CPU time (user + system, of the child) is reported too: on a shared machine it moves far less
with the load than the wall time does. The commands:
``solar --help`` and ``solar specs`` (the console script beside the running interpreter, or
``python -m solar`` when there is none) and ``python -c "import solar"``. Each child also
reports whether torch or jax ended up imported.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: what each child prints after its command (appended through ``-X importtime``-free wrapper)
_PROBE = (
    "import sys, atexit; atexit.register(lambda: sys.stderr.write("
    "'\\nSOLAR_BENCH_MODULES ' + ' '.join(m for m in ('torch', 'jax') if m in sys.modules)"
    " + '\\n'))"
)


def _solar_cmd() -> list[str]:
    """The ``solar`` console script of this interpreter's environment (``python -m solar``
    when it has none)."""
    script = Path(sys.executable).with_name("solar")
    if script.is_file():
        return [str(script)]
    found = shutil.which("solar")
    return [found] if found else [sys.executable, "-m", "solar"]


def commands() -> dict[str, list[str]]:
    """label -> argv of every command measured."""
    solar = _solar_cmd()
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import solar"': [sys.executable, "-c", "import solar"],
        "solar --help": [*solar, "--help"],
        "solar specs": [*solar, "specs"],
    }


def _heavy_imports(argv: list[str], env: dict[str, str]) -> list[str]:
    """Which of torch/jax the command imports (one extra run with an exit hook)."""
    if argv[0] == sys.executable and argv[1] == "-c":
        code = f"{_PROBE}\n{argv[2]}"
        probe = [sys.executable, "-c", code]
    else:
        script = Path(argv[0])
        runner = (
            "import runpy, sys\n"
            f"{_PROBE}\n"
            f"sys.argv = {[str(script), *argv[1:]]!r}\n"
            "runpy.run_path(sys.argv[0], run_name='__main__')"
        )
        probe = [sys.executable, "-c", runner] if script.is_file() else argv
    out = subprocess.run(probe, capture_output=True, text=True, env=env)
    for line in out.stderr.splitlines():
        if line.startswith("SOLAR_BENCH_MODULES"):
            return line.split()[1:]
    return ["?"]


def _children_cpu_s() -> float:
    """CPU seconds (user + system) of the finished children of this process so far."""
    try:
        import resource
    except ImportError:  # not on this platform (Windows): no CPU column
        return float("nan")
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(repeat: int = 7) -> dict:
    """``{label: {"median_s", "cpu_s", "runs_s", "imports"}}`` for every command of
    :func:`commands`."""
    env = dict(os.environ)
    cmds = commands()
    runs: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(repeat):
        for label, argv in cmds.items():
            c0, t0 = _children_cpu_s(), time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, env=env)
            runs[label].append(time.perf_counter() - t0)
            cpu[label].append(_children_cpu_s() - c0)
            if proc.returncode != 0:
                err = proc.stderr.decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"{label} failed: {err[-1] if err else proc.returncode}")
    return {
        label: {
            "median_s": statistics.median(ts),
            "cpu_s": statistics.median(cpu[label]),
            "runs_s": ts,
            "imports": _heavy_imports(cmds[label], env),
        }
        for label, ts in runs.items()
    }


def markdown(result: dict, repeat: int) -> str:
    """The table: median wall time, time over ``python -c pass``, heavy frameworks imported."""
    base = result["python -c pass"]["median_s"]
    lines = [
        f"median of {repeat} runs, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}",
        "",
        "| command | median | over python | CPU | imports torch/jax |",
        "|---|---:|---:|---:|---|",
    ]
    for label, r in result.items():
        over = "" if label == "python -c pass" else f"{r['median_s'] - base:.3f} s"
        lines.append(
            f"| `{label}` | {r['median_s']:.3f} s | {over} | {r['cpu_s']:.3f} s | "
            f"{', '.join(r['imports']) or 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(repeat: int) -> int:
    print(markdown(measure(repeat), repeat))
    return 0
