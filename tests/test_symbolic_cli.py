"""``solar bound FILE --symbolic NAMES``: problem files' size constants as symbols, the
formulas printed, their JSON, the notebook and plot views, and the one-line errors."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
import sympy
from console import run_solar

import solar
from solar.algebra.size import symbol
from solar.hw import load_spec
from solar.problem import ProblemError, load_module
from solar.symbolic.problem import (
    bound_problem,
    clear_value_caches,
    load_symbolic_problem,
    parse_symbolic,
)

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "examples" / "attention_bf16.py"


@pytest.fixture(scope="module")
def attention():
    return bound_problem(ATTENTION, ["B", "S"], "H100")


@pytest.fixture(autouse=True)
def fresh_caches():
    """Numeric runs of the same shapes leave footprint cache entries a symbolic analysis would
    hit (an engine issue; see solar.symbolic.problem.clear_value_caches)."""
    clear_value_caches()


def numeric(path, **sizes):
    """The numeric Bound of a problem file re-instantiated with module constants ``sizes``."""
    from solar.problem import build, set_mode

    m = load_module(path)
    for k, v in sizes.items():
        setattr(m, k, v)
    init = getattr(m, "get_init_inputs", lambda: [])
    model, inputs, _ = build(lambda: (m.Model(*init()), m.get_inputs()), Path(path))
    return solar.bound(set_mode(model, m), tuple(inputs), hw="H100")


def expected_crossovers(batch: int) -> tuple[int, int]:
    """attention_bf16 fused, by hand: DRAM moves q, k, v and the output once (4 * H * D * 2 =
    8192 bytes per (B, S)); the tensor cores do 2 * 2 * H * D = 4096 ops per (B, S^2).
    Latency (one launch) binds until 8192 B S / BW >= launch; DRAM until 4096 S / P >= 8192 /
    BW, i.e. S >= 2 P / BW."""
    spec = load_spec("H100")
    bw, peak, launch = spec.dram_bandwidth, spec.peak("tc_bf16"), spec.latency["kernel_launch"]
    return math.ceil(launch * bw / (8192 * batch)), math.ceil(2 * peak / bw)


def test_marks_follow_the_factories():
    p = load_symbolic_problem(ATTENTION, ["B", "S"])
    B, S = symbol("B"), symbol("S")
    assert p.sizes == {"B": 8, "S": 2048}
    assert {k: e for k, (_, e) in p.dims.items()} == {
        (("input", i), d): e for i in range(3) for d, e in ((0, B), (2, S))
    }


def test_expressions_of_constants_are_exact(tmp_path):
    """A dim built as ``2 * S`` carries 2*S, in the input and in the Linear's weight; the
    formula equals the re-instantiated file's bound at other sizes."""
    f = tmp_path / "double.py"
    f.write_text(
        textwrap.dedent(
            """
            import torch
            B, S = 4, 32
            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = torch.nn.Linear(2 * S, S)
                def forward(self, x):
                    return self.fc(x)
            def get_inputs():
                return [torch.randn(B, 2 * S)]
            """
        )
    )
    p = load_symbolic_problem(f, ["B", "S"])
    B, S = symbol("B"), symbol("S")
    dims = {k: e for k, (_, e) in p.dims.items()}
    assert dims[(("input", 0), 1)] == 2 * S
    assert dims[(("param", "fc.weight"), 0)] == S
    assert dims[(("param", "fc.weight"), 1)] == 2 * S
    b = bound_problem(f, ["B", "S"])
    assert not b.specializations
    # one GEMM of (B, 2S) by (2S, S), fp32 on CUDA cores: 2 * B * 2S * S (the bias rides on it)
    assert b.flops_formula() == {"cuda_fp32": 4 * B * S**2}
    for point in ({"B": 5, "S": 48}, {"B": 3, "S": 17}):
        at, ref = b.at(**point), numeric(f, **point)
        assert at.flops == ref.flops and at.bytes_fused == ref.bytes_fused
        assert at.fused == pytest.approx(ref.fused, rel=1e-9)
        assert at.unfused == pytest.approx(ref.unfused, rel=1e-9)


def test_parse_symbolic():
    assert parse_symbolic("B, S=512") == {"B": None, "S": 512}
    with pytest.raises(ValueError, match="positive"):
        parse_symbolic("S=0")
    with pytest.raises(ValueError, match="not a constant's name"):
        parse_symbolic("2S")


def test_cli_prints_formulas_crossovers_and_region():
    code, out, err = run_solar("bound", ATTENTION, "--symbolic", "B,S", "--hw", "H100")
    assert code == 0, err
    lat, tensor = expected_crossovers(8)
    assert "speed-of-light bounds" in out  # the bound at the file's sizes, as without --symbolic
    assert "formulas in B, S (traced at B=8, S=2048; times in seconds):" in out
    assert "work tc_bf16 = 4096⋅B⋅S" in out  # S² printed above, sympy's pretty print
    # each formula with the sizes it holds for: the traced piece's (tensor-bound from S = 639)
    assert "DRAM bytes, fused = ⎨8192⋅B⋅S  for B ≥ 2 ∧ S ≥ 639" in out
    assert "kernel launches = ⎨4  for B ≥ 2 ∧ S ≥ 639" in out
    assert "each formula holds on the sizes printed with it" in out
    assert (
        f"along S: fused: latency below S={lat}, DRAM from {lat}, tensor cores from {tensor}" in out
    )
    assert "along B: fused: no change for 2 ≤ B ≤ 512" in out  # searched up to 64x the file's B
    assert "the counts are exact for B ≥ 2, S ≥ 2" in out


def test_cli_json_formulas_parse_and_evaluate():
    code, out, err = run_solar("bound", ATTENTION, "--symbolic", "B,S", "--json")
    assert code == 0, err
    d = json.loads(out)
    sym = d["symbolic"]
    assert sym["sizes"] == {"B": 8, "S": 2048}
    B, S = symbol("B"), symbol("S")
    point = {"B": 3, "S": 700}  # on the same piece as the traced sizes (tensor-bound)
    ref = numeric(ATTENTION, **point)
    subs = {B: point["B"], S: point["S"]}
    names = {"B": B, "S": S}
    # the pieces of the formula, each with where it holds: those holding at the point (pieces
    # met from other points may overlap there) all give the numeric bound
    here = [
        sympy.sympify(e, locals=names)
        for e, where in sym["formulas"]["fused"]
        if sympy.sympify(where, locals=names).subs(subs) == sympy.true
    ]
    assert here
    for fused in here:
        assert float(fused.subs(subs)) == pytest.approx(ref.fused, rel=1e-9)
    for cls, e in sym["flops"].items():
        assert int(sympy.sympify(e, locals={"B": B, "S": S}).subs(subs)) == ref.flops[cls]
    assert sym["crossovers"]["S"]["fused"] == [
        [expected_crossovers(8)[0], "latency", "dram"],
        [expected_crossovers(8)[1], "dram", "tensor"],
    ]
    assert d["bounds"]["fused_s"] == pytest.approx(numeric(ATTENTION).fused, rel=1e-12)


def test_specialization_is_said(tmp_path):
    """A constant used as a plain number (a Python loop over it) is reported as fixed."""
    f = tmp_path / "loop.py"
    f.write_text(
        textwrap.dedent(
            """
            import torch
            B, L = 4, 3
            class Model(torch.nn.Module):
                def forward(self, x):
                    for _ in range(L):
                        x = x * 2
                    return x
            def get_inputs():
                return [torch.randn(B, L)]
            """
        )
    )
    code, out, err = run_solar("bound", f, "--symbolic", "B,L")
    assert code == 0, err
    assert "L is fixed at 3 (used as a plain number by range() at loop.py:6)" in out


def test_a_loop_solar_cannot_see_is_found_by_the_probe(tmp_path):
    """A loop over a size outside the file's own ``range`` (here ``builtins.range``; in a
    library, ``nn.LSTM(num_layers=L)``) changes the parameters: the probe build at another L
    sees it, and L is fixed, saying why."""
    from solar.algebra.region import Region

    f = tmp_path / "layers.py"
    f.write_text(
        textwrap.dedent(
            """
            import builtins
            import torch
            B, W, L = 4, 8, 3
            class Model(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.layers = torch.nn.ModuleList(
                        [torch.nn.Linear(W, W) for _ in builtins.range(L)]
                    )
                def forward(self, x, h):
                    for layer in self.layers:
                        x = layer(x)
                    return x + h.sum(0)
            def get_inputs():
                return [torch.randn(B, W), torch.randn(L, B, W)]
            """
        )
    )
    p = load_symbolic_problem(f, ["B", "W", "L"])
    fixed = Region.of([symbol(n) for n in p.sizes], p.recording.guards).specializations
    assert set(fixed) == {"L"}
    assert fixed["L"].startswith(
        "the program's structure follows L where solar cannot see: parameter 'layers.3.weight' "
        "appears at B=4, W=8, L=6"
    )


@pytest.mark.parametrize(
    "body, names, message",
    [
        (
            "K = 5\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        return x * K\ndef get_inputs():\n    return [torch.randn(B, 8)]\n",
            "B,K",
            "K sizes no input, parameter or buffer of the program",
        ),
        (
            "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "def get_inputs():\n    return [torch.randn(B, 8).sum(0, keepdim=True)]\n",
            "B",
            "get_inputs()[0] is made by Tensor.sum at bad.py:7, whose dims solar does not follow",
        ),
        (
            "class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.mask = torch.ones(B, B)\n    def forward(self, x):\n"
            "        return x @ self.mask\ndef get_inputs():\n    return [torch.randn(B, B)]\n",
            "B",
            "the tensor made at bad.py:6 has dims (B, B) and is kept by the program outside",
        ),
        (
            "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "def get_inputs():\n    return [torch.randn(B, 8)]\n",
            "SEQ",
            "has no integer module constant 'SEQ' to make symbolic; its integer constants: B",
        ),
    ],
    ids=["not-a-size", "unfollowed-call", "kept-outside", "unknown-name"],
)
def test_one_line_errors(tmp_path, body, names, message):
    f = tmp_path / "bad.py"
    f.write_text("import torch\nB = 4\n" + body)
    with pytest.raises(ProblemError, match=None) as e:
        load_symbolic_problem(f, names.split(","))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cli_error_is_one_line(tmp_path):
    code, out, err = run_solar("bound", ATTENTION, "--symbolic", "SEQ")
    assert code == 2 and not out
    assert err.strip() == (
        f"solar: error: {ATTENTION}: has no integer module constant 'SEQ' to make symbolic; "
        "its integer constants: B, H, S, D"
    )
    code, _, err = run_solar("bound", ROOT / "examples", "--symbolic", "B")
    assert code == 2 and "--symbolic bounds one problem file" in err
    code, _, err = run_solar("bound", ATTENTION, "--symbolic")  # names: a problem file's own
    assert code == 2 and "--symbolic on a problem file names its constants" in err


# -- views --------------------------------------------------------------------------------


def test_notebook_typesets_the_formulas(attention):
    page = attention._repr_html_()
    assert "speed-of-light" in page or "fused" in page  # the Bound's own HTML first
    assert "$4096 B S^{2}$" in page
    assert "8192 B S & \\text{for}" in page  # each formula typeset with where it holds
    lat, tensor = expected_crossovers(8)
    assert f"latency below S={lat}, DRAM from {lat}, tensor cores from {tensor}" in page


def test_text_view_is_the_cli_view(attention):
    text = str(attention)
    assert "formulas in B, S" in text and "crossovers on NVIDIA H100" in text


def test_curve_plot_draws_each_level_and_marks_the_crossovers(attention):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    fig = attention.plot(size="S", lo=8, hi=4096)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:3] == ["unfused", "fused", "cache-aware"]
    fused = ax.get_lines()[1]
    xs, ys = fused.get_xdata(), fused.get_ydata()
    assert xs[0] == 8 and xs[-1] == 4096
    assert ys[-1] == pytest.approx(attention.at(S=4096).fused, rel=1e-12)
    lat, tensor = expected_crossovers(8)
    notes = {t.get_text() for t in ax.texts}
    assert f"S={lat}: latency→dram" in notes and f"S={tensor}: dram→tensor" in notes
