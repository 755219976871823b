"""Property: every PyTorch example whose ``get_inputs()`` builds tensors from module-level int
constants, bounded with those constants as symbols (``solar bound FILE --symbolic ...``),
equals the numeric bound of the file re-instantiated at random sizes: counts exactly (work per
op class, DRAM bytes, peak memory, launches), times to 1e-9 (relative), the same bound-by
terms; and the formulas are specialized only where the program itself uses a size as a plain
number, never inside solar.

The constants are found by reading the files (module-level ints named in ``get_inputs``'s
body); those that size no tensor (``randint``'s bound, a default argument captured at import)
are dropped as the loader says (:class:`UnusedSizeError`). The random sizes (3 per file, drawn
from a seed of the file's name) lie inside the sizes the trace counts exactly, between a
quarter of and the file's value. Files that fail for a reason inside the engine are
``xfail(strict=True)`` with that reason, so each flips when fixed.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
import random
import zlib
from pathlib import Path

import pytest

import solar
import solar.algebra.size as size_module
from solar.algebra.size import symbol
from solar.problem import ProblemError, problem_with
from solar.report.symbolic_views import fixed_sizes, region_holds
from solar.symbolic.problem import UnusedSizeError, bound_problem, clear_value_caches

ROOT = Path(__file__).resolve().parents[1]
SOLAR = str(ROOT / "solar")
POINTS = 3
REL = 1e-9


def size_constants(path: Path) -> dict[str, int]:
    """Module-level int constants named in the body of ``get_inputs`` (read, not imported)."""
    tree = ast.parse(path.read_text())
    consts: dict[str, int] = {}
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = (
                    zip(target.elts, node.value.elts, strict=False)
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                    else [(target, node.value)]
                )
                for t, v in pairs:
                    if isinstance(t, ast.Name) and isinstance(v, ast.Constant):
                        consts.update({t.id: v.value} if type(v.value) is int else {})
        elif isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            body = node.body
    used = {n.id for stmt in body for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return {k: v for k, v in consts.items() if k in used}


def _is_torch_problem(path: Path) -> bool:
    src = path.read_text()
    return "import torch" in src and not any(
        line.startswith(("import jax", "from jax", "import flax", "from flax"))
        for line in src.splitlines()
    )


def _requires(path: Path) -> list[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "REQUIRES" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []


# Causes inside the engine (solar/ir, solar/graph, solar/backend, solar/frontend/torch,
# solar/algebra/size.py), as the test meets them first; "specialized" means a guard pins the
# size to the file's value, so no other size can be checked.


#: examples that fail for a reason inside the engine: the precise cause (the exception it
#: raises is checked too: see RAISES)
ENGINE: dict[str, str] = {}

#: examples the loader refuses by design, and the words of its one-line error
REFUSED = {
    "model_vanilla_rnn_state": "is kept by the program outside its inputs, parameters and buffers",
}

#: examples whose test takes 10 s or more here (large models): run with
#: SOLAR_SYMBOLIC_EXAMPLES=all (the default run keeps the file's time modest)
HEAVY = {
    "model_hf_bert",
    "model_hf_gpt2",
    "model_hf_t5",
    "model_mamba2_ssd",
    "model_swin_block",
    "op_conv1d",
    "train_gpt",
    "train_hf_llama",
    "train_resnet",
}
ALL = os.environ.get("SOLAR_SYMBOLIC_EXAMPLES") == "all"

EXAMPLES = [
    p
    for p in sorted((ROOT / "examples").glob("*.py"))
    if _is_torch_problem(p) and size_constants(p)
]


#: the exception each cause raises here (the specializations and the sampling: AssertionError)
RAISES: dict[str, type[Exception]] = {}


def _raises(reason: str):
    if reason in RAISES:
        return RAISES[reason]
    return AssertionError


def _param(path: Path):
    marks = []
    missing = [r for r in _requires(path) if importlib.util.find_spec(r) is None]
    if missing:
        marks.append(pytest.mark.skip(reason=f"needs {', '.join(missing)}"))
    if path.stem in HEAVY and not ALL:
        marks.append(pytest.mark.skip(reason="heavy: SOLAR_SYMBOLIC_EXAMPLES=all runs it"))
    if path.stem in ENGINE:
        reason = ENGINE[path.stem]
        marks.append(pytest.mark.xfail(strict=True, reason=reason, raises=_raises(reason)))
    return pytest.param(path, id=path.stem, marks=marks)


def numeric(path: Path, sizes: dict[str, int]):
    """The numeric Bound of the file with its constants set to ``sizes`` (plain ints): a
    training problem's step (forward, backward, update), as the symbolic side bounds it."""
    return solar.bound(*problem_with(path, sizes), hw="H100")


def differences(at, ref) -> list[str]:
    """What differs between the formula's Bound ``at`` a point and the numeric one there."""
    out = []

    def same(what, a, b, rel=0.0):
        equal = a == b if rel == 0 else math.isclose(float(a), float(b), rel_tol=rel)
        if not equal:
            out.append(f"{what}: formula {a} != numeric {b}")

    same("flops", {k: int(v) for k, v in at.flops.items()}, dict(ref.flops))
    for f in ("bytes_unfused", "bytes_fused", "bytes_fused_read"):
        same(f, int(getattr(at, f)), getattr(ref, f))
    same("bytes_cache_aware", at.bytes_cache_aware, ref.bytes_cache_aware, REL)
    same("peak memory", at.memory and at.memory.peak_bytes, ref.memory and ref.memory.peak_bytes)
    same("launches", at.latency and at.latency.launches, ref.latency and ref.latency.launches)
    same("kernels", len(at.kernels), len(ref.kernels))
    for level in ("unfused", "fused", "cache_aware"):
        same(level, getattr(at, level), getattr(ref, level), REL)
        same(f"{level} bound by", at.bound_by(level), ref.bound_by(level))
    cp = (at.latency.critical_path_s, ref.latency.critical_path_s) if at.latency else (0, 0)
    same("critical path", *cp, REL)
    return out


def engine_specializations(b) -> dict[str, str]:
    """Sizes the formulas are specialized at by solar itself (a guard decided inside solar or
    a library solar calls, or at no known place), not by the program."""
    out = {}
    for name, where in fixed_sizes(b).items():
        inside = SOLAR in where or "numpy" in where or "<string>" in where
        if inside or not where.strip() or where == "(unknown place)":
            out[name] = where
    return out


def random_points(b, names: list[str], seed: str) -> list[dict[str, int]]:
    """``POINTS`` points inside the count region, each free size between a quarter of its
    traced value (at least 2) and the traced value; where a divisibility guard leaves few such
    points (the optimizer's chunks of 65536 elements dividing ``768*TOKENS`` evenly), the
    sizes are drawn from the traced value's quarters (``n/4, n/2, 3n/4, n``) instead."""
    rng = random.Random(zlib.crc32(seed.encode()))
    points: list[dict[str, int]] = []

    def draw(choose) -> None:
        for _ in range(500):
            p = {n: choose(b.sizes[n]) for n in names}
            full = {symbol(k): v for k, v in {**b.sizes, **p}.items()}
            if region_holds(b.counts_region, full) and p not in points:
                points.append(p)
            if len(points) == POINTS:
                return

    draw(lambda n: rng.randint(max(2, n // 4), max(2, n)))
    if len(points) < POINTS:
        draw(lambda n: max(2, n * rng.randint(1, 4) // 4))
    return points


@pytest.fixture
def debug_places(monkeypatch):
    """Guards name the line that decided them (SOLAR_SYMBOLIC_DEBUG)."""
    monkeypatch.setattr(size_module, "_DEBUG", True)


def test_examples_are_found():
    assert len(EXAMPLES) >= 60
    assert size_constants(ROOT / "examples" / "attention_bf16.py") == {
        "B": 8,
        "H": 16,
        "S": 2048,
        "D": 64,
    }


@pytest.mark.parametrize("path", [_param(p) for p in EXAMPLES])
def test_formula_equals_numeric_bound(path, debug_places):
    names = list(size_constants(path))
    if path.stem in REFUSED:
        with pytest.raises(ProblemError, match=REFUSED[path.stem]):
            bound_problem(path, names, "H100")
        return
    while True:
        try:
            b = bound_problem(path, names, "H100")
            break
        except UnusedSizeError as e:  # a bound of randint, a default captured at import
            names.remove(e.name)
            if not names:
                pytest.skip(f"no constant of get_inputs sizes a tensor ({e})")
    inside = engine_specializations(b)
    assert not inside, f"specialized inside solar: {inside}"
    fixed = fixed_sizes(b)
    free = [n for n in names if n not in fixed]
    if not free:
        pytest.skip(f"every size is fixed by the program: {fixed}")
    points = random_points(b, free, path.stem)
    assert len(points) == POINTS, (
        f"the counts hold at {len(points)} of the sampled points; guards: "
        f"{b.counts_region.text()[:8]}"
    )
    for p in points:
        clear_value_caches()  # no entry of a numeric run may answer for the formula
        at = b.at(**p)
        diff = differences(at, numeric(path, {**b.sizes, **p}))
        assert not diff, f"at {p}: {diff}"
