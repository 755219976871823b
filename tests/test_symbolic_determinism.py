"""A symbolic bound does not depend on the hash seed: two processes with different
``PYTHONHASHSEED`` give the same JSON, formulas, guards and their order included.

Sets of strings and of sympy symbols iterate in an order that varies with the seed; where the
analysis walked one (the dims of a guarded group, a guard's free symbols), the seed chose
which of two equal expressions a count took, which redundant guards were recorded and the
order of the specialized sizes. The programs below showed each of those on the seeds used.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_symbolic_examples import size_constants
from solar.symbolic.problem import bound_problem
p = Path({path!r})
print(json.dumps(bound_problem(str(p), list(size_constants(p)), "H100").to_dict(), default=str))
"""


def _json(path: Path, seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    env.pop("SOLAR_SYMBOLIC_DEBUG", None)  # guards would name this checkout's files
    script = _SCRIPT.format(tests=str(ROOT / "tests"), path=str(path))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout


@pytest.mark.parametrize("name", ["model_gpt_block", "model_llama_block", "op_avgpool2d"])
def test_symbolic_json_is_the_same_for_every_hash_seed(name):
    path = ROOT / "examples" / f"{name}.py"
    first = _json(path, 1)
    assert '"symbolic"' in first
    assert _json(path, 2) == first
