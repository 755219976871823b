"""Definitions bounded from one symbolic trace: the var axes are symbols, the expr axes their
expressions, and every workload the formula there equals the numeric bound of its own trace
(counts exactly, times to rounding); workloads the formula does not cover are traced, and
the rows say which and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sympy

from solar.algebra.size import Size, symbol
from solar.definition import bound_definition, load_definition
from solar.definition.inputs import make_inputs, reference_module
from solar.definition.schema import load_workloads
from solar.definition.symbolic_axes import Candidate, symbolic_axes, trace_formula
from solar.hw import load_spec
from tests.symbolic_equal import assert_bounds_equal, fresh_caches

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "definitions"


def both(definition, workloads=None):
    fresh_caches()
    formula = bound_definition(definition, workloads, symbolic=True)
    fresh_caches()
    return formula, bound_definition(definition, workloads)


@pytest.mark.parametrize(
    "name", ["gemm_bf16_n4096_k4096", "rmsnorm_h4096", "gemm_bf16_bias_gelu_n11008_k4096"]
)
def test_every_workload_of_the_formula_equals_its_own_trace(name):
    formula, numeric = both(CORPUS / f"{name}.json")
    assert formula.ok and numeric.ok
    assert sum(w.method == "formula" for w in formula.workloads) >= 6  # of 8
    for f, n in zip(formula.workloads, numeric.workloads, strict=True):
        assert f.uuid == n.uuid and f.axes == n.axes
        assert_bounds_equal(f.bound, n.bound)
        assert f.note  # which formula, or why it was traced
    assert formula.assumptions == numeric.assumptions


def test_outside_the_region_the_workload_is_traced_and_says_why():
    formula, _ = both(CORPUS / "gemm_bf16_n4096_k4096.json")
    one = next(w for w in formula.workloads if w.axes["M"] == 1)
    assert one.method == "trace"
    assert one.note == "outside the formula's region (Ne(M - 1, 0) does not hold)"
    assert "from a formula" not in str(formula)  # the table's column and notes say it
    assert "formula: the formula traced at workload" in str(formula)


def test_index_inputs_with_values_are_traced():
    formula, numeric = both(CORPUS / "embedding_vocab128k_h4096.json")
    assert all(w.method == "trace" for w in formula.workloads)
    assert formula.workloads[0].note == "its index inputs carry values (input_ids)"
    for f, n in zip(formula.workloads, numeric.workloads, strict=True):
        assert_bounds_equal(f.bound, n.bound)


EXPR = {
    "name": "pair_sums",
    "axes": {
        "n": {"type": "var"},
        "width": {"type": "const", "value": 512},
        "two_n": {"type": "expr", "expression": "2 * n"},
    },
    "inputs": {
        "x": {"shape": ["two_n", "width"], "dtype": "float32"},
        "w": {"shape": ["width", "width"], "dtype": "float32"},
    },
    "outputs": {"y": {"shape": ["n", "width"], "dtype": "float32"}},
    "reference": (
        "import torch\n\ndef run(x, w):\n"
        "    return torch.relu(x @ w).reshape(-1, 2, w.shape[1]).sum(1)\n"
    ),
}


def test_expr_axes_are_expressions_of_the_var_axes():
    defn = load_definition(EXPR)
    axes = symbolic_axes(defn, {"n": 48, "width": 512, "two_n": 96})
    assert isinstance(axes["two_n"], Size) and axes["two_n"].expr == 2 * symbol("n")
    wls = [{"uuid": f"w{n}", "axes": {"n": n}} for n in (3, 48, 100, 1000, 4099)]
    formula, numeric = both(EXPR, wls)
    assert [w.method for w in formula.workloads] == ["formula"] * 5
    for f, n in zip(formula.workloads, numeric.workloads, strict=True):
        assert_bounds_equal(f.bound, n.bound)
    fresh_caches()
    c = Candidate(0, *_workload(defn, wls[1]))
    b = trace_formula(defn, c, load_spec("H100"), reference_module(defn))
    n = symbol("n")
    # the GEMM (2 flops a multiply-add), the ReLU, the pair sums: one op an element each
    assert b.flops_formula() == {"cuda_fp32": 2 * (2 * n) * 512 * 512 + 2 * n * 512 + n * 512}
    assert sympy.expand(b.expression("bytes_fused") - 4 * (2 * n * 512 + 512 * 512 + n * 512)) == 0


def _workload(defn, wl: dict):
    (w,) = load_workloads([wl], defn)
    return w, make_inputs(defn, w, module=reference_module(defn))


def test_json_rows_carry_the_method():
    formula, _ = both(CORPUS / "rmsnorm_h4096.json")
    rows = json.loads(formula.to_json())["workloads"]
    assert {r["method"] for r in rows} == {"formula", "trace"}
