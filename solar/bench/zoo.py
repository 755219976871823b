"""``python -m solar.bench.zoo``: the models people bring, bounded one by one.

Builds, on the meta device in bf16, every causal-LM architecture of transformers' auto mapping
(default config), every torchvision model, diffusers' SD-style UNet, VAE decoder, DiT, SD3 and
Flux transformers and a sample of timm (:mod:`solar.bench.zoo_models`), and the families of
:mod:`solar.bench.zoo_families` (graph networks, YOLO detection, Segment Anything, audio
encoders; a library not installed is skipped with one line), calls each the way its
library documents and bounds it on the H100 with ``solar.bound`` — the forward, and a training
step (train mode, ``loss.backward()``, AdamW) for every ``--train-every``-th model of each
library. Each model runs in a fresh process (:mod:`solar.bench.zoo_child`) under a time limit
and a memory limit. Results accumulate in ``bench/results/zoo.json`` (a run replaces the rows
of the models it ran, so the zoo can be run in pieces) and the table
``bench/results/zoo.md`` (:mod:`solar.bench.zoo_table`) is rewritten from all of them:
per library how many are bounded, the missing operators by how many models each blocks, and
every failure with its reason.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from solar.bench.models import ROOT
from solar.bench.zoo_models import LIBRARIES
from solar.frontend.extras import MissingExtra, optional

RESULTS = ROOT / "bench" / "results"
MARK = "ZOO-RESULT "


def _limit_memory(gb: float):
    def apply() -> None:
        os.setsid()  # its own process group: a timeout kills the model's helpers too
        limit = int(gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_child(library: str, name: str, train: bool, timeout: float, memory_gb: float) -> dict:
    """One model in a fresh process; its record, or a failure saying how the process ended."""
    cmd = [sys.executable, "-m", "solar.bench.zoo", "--child", library, name]
    cmd += ["--train-every", "1" if train else "0"]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, TOKENIZERS_PARALLELISM="false")
    env.setdefault("OMP_NUM_THREADS", "1")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=_limit_memory(memory_gb),
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return _ended(library, name, "timeout", f"no result within {timeout:.0f} s", t0)
    for line in reversed(out.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    lines = [s for s in err.strip().splitlines() if s.strip()]
    last = lines[-1] if lines else f"exit status {proc.returncode}"
    if "MemoryError" in err or "std::bad_alloc" in err or proc.returncode == -signal.SIGKILL:
        return _ended(library, name, "memory", f"over {memory_gb:g} GB: {last[:300]}", t0)
    return _ended(library, name, "error", f"process ended ({proc.returncode}): {last[:300]}", t0)


def _ended(library: str, name: str, category: str, error: str, t0: float) -> dict:
    seconds = round(time.perf_counter() - t0, 1)
    fail = {"ok": False, "category": category, "error": error, "seconds": seconds}
    return {"library": library, "name": name, "forward": fail, "seconds": seconds}


def select(library: str, only: list[str], limit: int | None, start: int) -> list[tuple[int, str]]:
    """(index in the library's list, name) of the models to run."""
    from solar.bench.zoo_models import names

    indexed = list(enumerate(names(library)))
    if only:
        indexed = [(i, n) for i, n in indexed if n in only]
    indexed = indexed[start:]
    return indexed[:limit] if limit is not None else indexed


def load(path: Path) -> dict:
    text = path.read_text() if path.exists() else ""
    return json.loads(text) if text.strip() else {"models": {}}


def record(path: Path, rec: dict | None = None, totals: dict | None = None) -> dict:
    """Put ``rec`` (and the libraries' model counts ``totals``) into the records at ``path``
    (read afresh under a lock: runs of other libraries may be writing too)."""
    with open(path, "a") as lock:  # an advisory lock on the records file itself
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = load(path)
        if rec is not None:
            doc["models"][f"{rec['library']}/{rec['name']}"] = rec
        doc.setdefault("totals", {}).update(totals or {})
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return doc


def longest_first(todo: list[tuple[str, int, str]], doc: dict) -> list[tuple[str, int, str]]:
    """The models in order of their last recorded time, longest first (models never run
    before lead): with ``--jobs N`` the slow ones do not start last and hold the run up."""

    def last(item: tuple[str, int, str]) -> float:
        rec = doc["models"].get(f"{item[0]}/{item[2]}")
        return float("inf") if rec is None else float(rec.get("seconds", 0.0))

    return sorted(todo, key=last, reverse=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m solar.bench.zoo", description=__doc__.split("\n")[0]
    )
    p.add_argument("--library", default=",".join(LIBRARIES), help="comma-separated libraries")
    p.add_argument("--only", default="", help="comma-separated model names")
    p.add_argument("--limit", type=int, default=None, help="at most N models per library")
    p.add_argument("--start", type=int, default=0, help="skip the first N models of each library")
    p.add_argument("--jobs", type=int, default=1, help="models run at once")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per model")
    p.add_argument("--memory-gb", type=float, default=8.0, help="address-space limit per model")
    p.add_argument("--train-every", type=int, default=10, help="training step of every N-th")
    p.add_argument("--out", default=str(RESULTS), help="folder of zoo.json and zoo.md")
    p.add_argument("--table-only", action="store_true", help="rewrite zoo.md from zoo.json")
    p.add_argument("--child", nargs=2, metavar=("LIBRARY", "NAME"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        from solar.bench.zoo_child import run_one

        rec = run_one(*args.child, train=args.train_every == 1)
        print(MARK + json.dumps(rec), flush=True)
        return 0
    out = Path(args.out)
    if args.table_only:
        from solar.bench.zoo_table import markdown

        (out / "zoo.md").write_text(markdown(load(out / "zoo.json")))
        return 0
    libraries = [s for s in args.library.split(",") if s]
    bad = [lib for lib in libraries if lib not in LIBRARIES]
    if bad:
        p.error(f"unknown library {bad[0]!r}; one of: {', '.join(LIBRARIES)}")
    from solar.bench.zoo_models import missing

    # a library the environment lacks: one line and skipped in a run over every library; named
    # with --library, it stops the run below in one line naming its extra
    explicit = args.library != p.get_default("library")
    for lib in [] if explicit else list(libraries):
        line = missing(lib)
        if line is not None:
            print(f"[{lib}] {line}", file=sys.stderr)
            libraries.remove(lib)
    only = [s for s in args.only.split(",") if s]
    try:
        with optional("the model zoo"):
            todo = [
                (lib, i, n)
                for lib in libraries
                for i, n in select(lib, only, args.limit, args.start)
            ]
    except MissingExtra as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    if only and not todo:
        p.error(f"no model named {', '.join(only)} in {', '.join(libraries)}")
    out.mkdir(parents=True, exist_ok=True)
    todo = longest_first(todo, load(out / "zoo.json"))

    def one(item: tuple[str, int, str]) -> dict:
        lib, i, name = item
        train = args.train_every > 0 and i % args.train_every == 0
        rec = run_child(lib, name, train, args.timeout, args.memory_gb)
        fwd = rec["forward"]
        state = "bounded" if fwd.get("ok") else f"{fwd['category']}: {fwd['error'][:120]}"
        print(f"[{lib}] {name} ({rec.get('seconds', 0):.0f} s): {state}", file=sys.stderr)
        return rec

    from solar.bench.zoo_models import names

    record(out / "zoo.json", totals={lib: len(names(lib)) for lib in libraries})
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for rec in pool.map(one, todo):
            record(out / "zoo.json", rec)
    doc = load(out / "zoo.json")
    from solar.bench.zoo_table import markdown

    (out / "zoo.md").write_text(markdown(doc))
    failed = [r for r in doc["models"].values() if not r["forward"].get("ok")]
    print(f"{len(doc['models']) - len(failed)} of {len(doc['models'])} bounded; {out / 'zoo.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
