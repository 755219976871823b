"""No bound for a program eager PyTorch refuses to run (issue 37, item 1).

The trace runs on meta kernels, which skip most dtype checks of the eager kernels; the table
``solar.frontend.torch.eager_checks.RULES`` makes them. Family-wide: for every rule, a program
that breaks it raises in eager PyTorch (on the CPU, here) and is refused by ``solar.bound``
with the same exception type and message, at the program's line; legal mixes (autocast, int8
GEMMs, type promotion, a 0-dim fp32 fill of a bf16 tensor, int32 indices) still bound; the
command line says it in one line. The programs are tests/eager_check_cases.py's, which
bench/gpu_eager_checks.py runs against eager CUDA.
"""

from __future__ import annotations

import inspect
import textwrap

import pytest
import torch
from console import run_solar
from eager_check_cases import LEGAL, REFUSED, _autocast_mv, bf16, f32, i64, z

import solar
from solar.api import ProgramError
from solar.frontend.torch.eager_checks import OUT, RULES, EagerRefusal


def test_every_rule_has_a_refused_case():
    assert {family for _, family, *_ in REFUSED} == {rule.family for rule in (*RULES, OUT)}


@pytest.mark.parametrize(("fn", "inputs"), [c[2:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_refused_as_eager_refuses(fn, inputs):
    """Eager's exception and message, at the program's line. (Where eager's check runs in a
    composite operator's Python-visible code, as ``F.conv2d``'s bias check, the program
    raises it in the trace too: a :class:`ProgramError` of the same line.)"""
    with pytest.raises(Exception) as eager:
        fn(*inputs)
    with pytest.raises(ProgramError) as got:
        solar.bound(fn, list(inputs), hw="H100")
    assert type(got.value.original) is type(eager.value)
    assert str(got.value.original) == str(eager.value)
    line = fn.__code__.co_firstlineno + (0 if fn.__name__ == "<lambda>" else 2)
    assert got.value.where == f"eager_check_cases.py:{line}"
    assert got.value.__cause__ is got.value.original


def test_refusal_is_one_line_with_the_way_it_reads():
    """The exception's one line: where, eager's error, why there is no bound."""
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(EagerRefusal) as got:
        solar.bound(lambda a, b: a @ b, [z(4, 8), z(8, 4, dtype=bf16)], hw="H100")
    assert str(got.value) == (
        f"test_eager_checks.py:{line}: RuntimeError: expected m1 and m2 to have the same dtype, "
        "but got: float != c10::BFloat16 (eager PyTorch raises this: the program cannot run, "
        "so it has no bound)"
    )


@pytest.mark.parametrize(("fn", "inputs"), [c[1:] for c in LEGAL], ids=[c[0] for c in LEGAL])
def test_legal_mixes_bound(fn, inputs):
    with torch.no_grad():
        fn(*inputs)  # eager PyTorch runs it
    assert solar.bound(fn, list(inputs), hw="H100").fused > 0


def test_cuda_autocast_keeps_its_casts():
    """``torch.mv`` of bf16 and fp32 inside ``autocast("cuda")``: CUDA autocast casts both
    to bf16 (its list has ``mv``; the CPU's, applied while tracing, has not), so eager CUDA
    runs it and the trace must not refuse it. (Eager on this CPU machine cannot run CUDA
    autocast.)"""
    assert solar.bound(_autocast_mv, [z(4, 8, dtype=bf16), z(8)], hw="H100").fused > 0


def test_fp8_scaled_mm_bounds():
    """fp8 operands with fp32 scales and a bf16 output: a legal mix (not in the table)."""
    a = torch.zeros(16, 32, dtype=torch.float8_e4m3fn)
    b = torch.zeros(32, 16, dtype=torch.float8_e4m3fn).t().contiguous().t()
    one = torch.ones((), dtype=f32)
    fn = lambda a, b, s: torch._scaled_mm(a, b, s, s, out_dtype=torch.bfloat16)  # noqa: E731
    assert solar.bound(fn, [a, b, one], hw="H100").fused > 0


FORGOTTEN_CAST = """\
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 32).to(torch.bfloat16)

    def forward(self, x):
        return self.proj(x)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
"""


def test_cli_forgotten_cast_is_one_line(tmp_path):
    """``solar bound`` on a bf16 Linear fed fp32: eager's message, the file's line, no bound."""
    f = tmp_path / "forgotten_cast.py"
    f.write_text(textwrap.dedent(FORGOTTEN_CAST))
    code, out, err = run_solar("bound", f)
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        "solar: error: forgotten_cast.py:10 in proj (Linear): RuntimeError: mat1 and mat2 must "
        "have the same dtype, but got Float and BFloat16 (eager PyTorch raises this: the "
        "program cannot run, so it has no bound; --debug shows the traceback)"
    ]


def test_the_control_call_has_the_dtypes_the_rule_asks_for():
    """A refusal counts only where the same call with agreeing dtypes runs: ``agreeing``
    casts the operands to the first one's dtype and index tensors to an allowed dtype."""
    from solar.frontend.torch.eager_checks import agreeing

    matmul = next(r for r in RULES if torch.ops.aten.addmm in r.ops)
    made = agreeing({"self": z(1), "mat1": z(1, 1, dtype=bf16), "mat2": z(1, 1)}, matmul)
    assert [t.dtype for t in made.values()] == [f32, f32, f32]
    index = next(r for r in RULES if torch.ops.aten.index in r.ops)
    made = agreeing({"self": z(1), "indices": [None, z(1), z(1, dtype=torch.bool)]}, index)
    assert made["indices"][0] is None
    assert [t.dtype for t in made["indices"][1:]] == [i64, torch.bool]
