"""No bound for a program eager PyTorch refuses to run (issue 37, item 1).

The trace runs on meta kernels, which skip most dtype checks of the eager kernels; the table
``solar.frontend.torch.eager_checks.RULES`` makes them. Family-wide: for every rule, a program
that breaks it raises in eager PyTorch (on the CPU, here) and is refused by ``solar.bound``
with the same exception type and message, at the program's line; legal mixes (autocast, int8
GEMMs, type promotion, a bf16 tensor written through a mask) still bound; the command line
says it in one line.
"""

from __future__ import annotations

import inspect
import textwrap

import pytest
import torch
import torch.nn.functional as F
from console import run_solar

import solar
from solar.api import ProgramError
from solar.frontend.torch.eager_checks import OUT, RULES, EagerRefusal

f32, bf16, i32, i64 = torch.float32, torch.bfloat16, torch.int32, torch.int64


def z(*shape, dtype=f32):
    return torch.zeros(*shape, dtype=dtype)


def _index_put(x, i, v):
    x = x.clone()
    x[i] = v  # line 2 of the function: the refused call
    return x


# (id, the family it breaks, program, inputs): every one raises in eager PyTorch
REFUSED = [
    ("mm", "matmul", lambda a, b: a @ b, (z(4, 8), z(8, 4, dtype=bf16))),
    ("bmm", "matmul", lambda a, b: a @ b, (z(2, 4, 8), z(2, 8, 4, dtype=bf16))),
    ("mv", "matmul", lambda a, b: torch.mv(a, b), (z(4, 8, dtype=bf16), z(8))),
    ("dot", "matmul", lambda a, b: torch.dot(a, b), (z(8), z(8, dtype=bf16))),
    (
        "einsum",
        "matmul",
        lambda a, b: torch.einsum("bij,bjk->bik", a, b),
        (z(2, 4, 8), z(2, 8, 4, dtype=bf16)),
    ),
    ("linear-no-bias", "matmul", lambda x, w: F.linear(x, w), (z(4, 8), z(16, 8, dtype=bf16))),
    (
        "linear-bias",
        "matmul",
        lambda x, w, b: F.linear(x, w, b),
        (z(4, 8), z(16, 8, dtype=bf16), z(16, dtype=bf16)),
    ),
    (
        "linear-bias-dtype",
        "matmul",
        lambda x, w, b: F.linear(x, w, b),
        (z(4, 8), z(16, 8), z(16, dtype=bf16)),
    ),
    (
        "addbmm",
        "matmul",
        lambda c, a, b: torch.addbmm(c, a, b),
        (z(4, 4), z(2, 4, 8, dtype=bf16), z(2, 8, 4)),
    ),
    (
        "baddbmm",
        "matmul",
        lambda c, a, b: torch.baddbmm(c, a, b),
        (z(2, 4, 4), z(2, 4, 8), z(2, 8, 4, dtype=bf16)),
    ),
    (
        "baddbmm-input",
        "matmul",
        lambda c, a, b: torch.baddbmm(c, a, b),
        (z(2, 4, 4, dtype=bf16), z(2, 4, 8), z(2, 8, 4)),
    ),
    ("addmv", "matmul", lambda c, a, b: torch.addmv(c, a, b), (z(4), z(4, 8), z(8, dtype=bf16))),
    ("conv2d", "conv", lambda x, w: F.conv2d(x, w), (z(1, 3, 8, 8), z(4, 3, 3, 3, dtype=bf16))),
    (
        "conv2d-bias",
        "conv",
        lambda x, w, b: F.conv2d(x, w, b),
        (z(1, 3, 8, 8), z(4, 3, 3, 3), z(4, dtype=bf16)),
    ),
    (
        "conv1d-groups",
        "conv",
        lambda x, w: F.conv1d(x, w, groups=2, padding=1),
        (z(1, 4, 8), z(4, 2, 3, dtype=bf16)),
    ),
    (
        "conv-transpose",
        "conv",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
        (z(1, 3, 8, 8), z(3, 4, 3, 3, dtype=bf16)),
    ),
    (
        "conv-bf16-input",
        "conv",
        lambda x, w: F.conv2d(x, w),
        (z(1, 3, 8, 8, dtype=bf16), z(4, 3, 3, 3)),
    ),
    ("index_select", "index", lambda x, i: torch.index_select(x, 0, i), (z(8, 4), z(2))),
    (
        "index_add-source",
        "index",
        lambda x, i, s: x.index_add(0, i, s),
        (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16)),
    ),
    ("index_add-index", "index", lambda x, i, s: x.index_add(0, i, s), (z(8, 4), z(2), z(2, 4))),
    (
        "index_copy-int32",
        "index",
        lambda x, i, s: x.index_copy(0, i, s),
        (z(8, 4), z(2, dtype=i32), z(2, 4)),
    ),
    (
        "index_copy-source",
        "index",
        lambda x, i, s: x.index_copy(0, i, s),
        (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16)),
    ),
    (
        "index_fill-int32",
        "index",
        lambda x, i: x.index_fill(0, i, 1.0),
        (z(8, 4), z(2, dtype=i32)),
    ),
    ("index_put-values", "index", _index_put, (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16))),
    ("index-float", "index", lambda x, i: x[i], (z(8, 4), z(2))),
    ("gather", "index", lambda x, i: torch.gather(x, 1, i), (z(8, 4), z(8, 2))),
    (
        "scatter-src",
        "index",
        lambda x, i, s: x.scatter(1, i, s),
        (z(8, 4), z(8, 2, dtype=i64), z(8, 2, dtype=bf16)),
    ),
    (
        "scatter_add-index",
        "index",
        lambda x, i, s: x.scatter_add(1, i, s),
        (z(8, 4), z(8, 2), z(8, 2)),
    ),
    ("embedding", "index", lambda i, w: F.embedding(i, w), (z(3), z(10, 4))),
    ("take", "index", lambda x, i: torch.take(x, i), (z(8, 4), z(3, dtype=i32))),
    (
        "cross_entropy-int32",
        "target",
        lambda x, t: F.cross_entropy(x, t),
        (z(4, 10), z(4, dtype=i32)),
    ),
    (
        "nll_loss2d-int32",
        "target",
        lambda x, t: F.nll_loss(x, t),
        (z(2, 3, 4, 4), z(2, 4, 4, dtype=i32)),
    ),
    (
        "masked_fill-uint8",
        "mask",
        lambda x, m: x.masked_fill(m, 0.0),
        (z(8), z(8, dtype=torch.uint8)),
    ),
    (
        "add-out-int64",
        "out",
        lambda a, b, o: torch.add(a, b, out=o),
        (z(4), z(4), z(4, dtype=i64)),
    ),
    (
        "cat-out-int64",
        "out",
        lambda a, b, o: torch.cat([a, b], out=o),
        (z(4), z(4), z(8, dtype=i64)),
    ),
    ("where-float", "mask", lambda c, a, b: torch.where(c, a, b), (z(8), z(8), z(8))),
]


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
    assert got.value.where == f"test_eager_checks.py:{line}"
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


class Bf16Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 32, dtype=bf16)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.proj(x)


def _autocast_mv(a, b):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return torch.mv(a, b)


# (id, program, inputs): legal in eager PyTorch, so bounded
LEGAL = [
    ("autocast-bf16-linear", Bf16Linear(), (torch.randn(8, 64),)),
    ("int8-int_mm", torch._int_mm, (z(32, 32, dtype=torch.int8), z(32, 32, dtype=torch.int8))),
    ("int8-mm", torch.mm, (z(4, 8, dtype=torch.int8), z(8, 4, dtype=torch.int8))),
    ("pointwise-promotion", lambda a, b: a * b + 1, (z(8, dtype=bf16), z(8))),
    ("outer-promotion", torch.outer, (z(8, dtype=bf16), z(4))),
    (
        "masked_fill-0dim-value",
        lambda x, m: x.masked_fill(m, torch.tensor(1.0)),
        (z(8, dtype=bf16), z(8, dtype=torch.bool)),
    ),
    ("index_select-int32", lambda x, i: torch.index_select(x, 0, i), (z(8, 4), z(2, dtype=i32))),
    ("embedding-int32", F.embedding, (z(3, dtype=i32), z(10, 4))),
    ("gather-int32", lambda x, i: torch.gather(x, 1, i), (z(8, 4), z(8, 2, dtype=i32))),
    ("linear-bf16", F.linear, (z(4, 8, dtype=bf16), z(16, 8, dtype=bf16), z(16, dtype=bf16))),
]


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
