"""The core imports neither torch nor jax (issue 23): ``solar.ir``, ``solar.graph``,
``solar.backend`` and ``solar.hw`` are checked statically (every import statement, function-local
ones included) and run in a child process where torch and jax cannot be imported: a hand-built
program with a contraction, a scan and an extern routine is lifted and bounded there, with
hand-derived numbers. A JAX function is bounded end to end with torch unimportable, and its
bound equals the one computed with torch present."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = ("ir", "graph", "backend", "hw")

#: prepended to a child's script: importing any of ``blocked`` raises ImportError
BLOCKER = """
import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is made unimportable by the test")
        return None

sys.meta_path.insert(0, _Blocked())
"""


def _child(script: str, blocked: tuple[str, ...]) -> str:
    code = f"BLOCKED = {blocked!r}\n{BLOCKER}\n{textwrap.dedent(script)}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _imported_roots(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_no_core_module_imports_torch_or_jax():
    bad = [
        f"{p.relative_to(ROOT)}: {sorted(roots)}"
        for pkg in CORE
        for p in sorted((ROOT / "solar" / pkg).rglob("*.py"))
        if (roots := _imported_roots(p) & {"torch", "jax", "jaxlib", "flax"})
    ]
    assert not bad, "the core imports a framework:\n" + "\n".join(bad)


PROGRAM = """
import json
import solar.backend, solar.graph, solar.hw, solar.ir
from solar.backend.analyze import analyze
from solar.graph import lift
from solar.graph.types import Graph
from solar.hw import load_spec
from solar.ir import Load, ProgramBuilder, call
from solar.ir.affine import affines

def L(t, *index):
    return Load(t, affines(index))

M, N, K = 64, 32, 16
b = ProgramBuilder("core")
A = b.tensor("A", (M, K), "float32", "input")
B = b.tensor("B", (K, N), "float32", "input")
O = b.tensor("O", (M, N), "float32")
C = b.tensor("C", (M, N), "float32", "output")
S = b.tensor("S", (M, N), "float32", "output")
b.program.outputs += [C, S]
b.begin_kernel("matmul")
b.statement([("m", M), ("n", N), ("k", K, True)], (O, ("m", "n")),
            call("mul", L(A, "m", "k"), L(B, "k", "n")), reduce="sum", precision="ieee")
b.begin_kernel("cumsum")
b.statement([("m", M), ("n", N)], (C, ("m", "n")), L(O, "m", "n"), reduce="sum", scan="n")
b.begin_kernel("sort")
b.statement([("m", M), ("p", N), ("r", N, True)], (S, ("m", "p")), L(C, "m", "r"),
            extern="sort.values")
g = lift(b.program)
bound = analyze(g, load_spec("H100"))
kinds = [op.op_kind for op in g.ops()]
print(json.dumps({"flops": bound.flops, "fused": bound.bytes_fused, "kinds": kinds,
                  "unfused": bound.bytes_unfused,
                  "frameworks": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)}))
"""


def test_core_lifts_and_bounds_without_torch_or_jax():
    out = json.loads(_child(PROGRAM, ("torch", "jax", "jaxlib")).splitlines()[-1])
    assert out["frameworks"] == []
    assert out["kinds"] == ["contraction", "scan", "extern"]
    # 2·M·N·K multiply-adds in fp32 (ieee); M·(N-1) scan combines; the sort counts nothing
    assert out["flops"] == {"cuda_fp32": 2 * 64 * 32 * 16 + 64 * 31}
    # fused: A, B read, C and S written once (4 bytes each); O stays on chip
    assert out["fused"] == 4 * (64 * 16 + 16 * 32 + 64 * 32 + 64 * 32)
    # unfused: each kernel's reads and writes: matmul A, B -> O; cumsum O -> C; sort C -> S
    assert out["unfused"] == 4 * (64 * 16 + 16 * 32 + 64 * 32 + 4 * 64 * 32)


JAX_BOUND = """
import json
import jax.numpy as jnp
import solar

def f(a, b):
    return jnp.cumsum(jnp.tanh(a @ b), axis=1).sum(0)

bound = solar.bound(f, (jnp.ones((64, 32)), jnp.ones((32, 16))), "H100")
print(json.dumps({"times": [bound.unfused, bound.fused, bound.cache_aware],
                  "flops": bound.flops, "bytes": [bound.bytes_unfused, bound.bytes_fused],
                  "torch": sorted(m for m in sys.modules if m.split(".")[0] == "torch")}))
"""


def test_jax_bound_without_torch_equals_the_bound_with_it():
    pytest.importorskip("jax")
    without = json.loads(_child(JAX_BOUND, ("torch",)).splitlines()[-1])
    assert without.pop("torch") == []
    with_torch = json.loads(_child(JAX_BOUND, ()).splitlines()[-1])
    with_torch.pop("torch")
    assert without == with_torch
    assert without["flops"]["sfu"] == 64 * 16  # one tanh per element of a @ b
