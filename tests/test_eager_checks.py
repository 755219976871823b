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
import re
import textwrap

import pytest
import torch
from console import run_solar
from eager_check_cases import (
    CUDA_REFUSED,
    LEGAL,
    REFUSED,
    Proj,
    _autocast_mv,
    bf16,
    device_cases,
    f32,
    i64,
    z,
)
from torch._subclasses.fake_tensor import FakeTensorMode

import solar
from solar.api import ProgramError
from solar.frontend.torch.eager_checks import (
    CUDA_KERNELS,
    OUT,
    RULES,
    EagerRefusal,
    scalar_type_name,
)


def test_every_rule_has_a_refused_case():
    assert {family for _, family, *_ in REFUSED} == {rule.family for rule in (*RULES, OUT)}


#: a convolution's dtype mismatch is worded by the CPU backend eager picks for the shapes and
#: threads at hand (oneDNN: "Input type ... should be the same", the native kernel: "expected
#: scalar type ..."): both are PyTorch's own refusal of the same mix
CONV_WORDINGS = re.compile(r"should be the same|expected scalar type \w+ but found \w+")


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
    said, eager_said = str(got.value.original), str(eager.value)
    if CONV_WORDINGS.search(eager_said) and any("conv" in n for n in fn.__code__.co_names):
        assert CONV_WORDINGS.search(said), said
    else:
        assert said == eager_said
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


@pytest.mark.parametrize(
    ("fn", "inputs", "cuda_error"), [c[2:] for c in CUDA_REFUSED], ids=[c[0] for c in CUDA_REFUSED]
)
def test_dtype_the_cuda_kernel_lacks_is_refused_in_cudas_words(fn, inputs, cuda_error):
    """Integer GEMMs: the CPU kernel runs them (so the CPU stand-ins say nothing), cuBLAS's
    kernels do not: eager CUDA's NotImplementedError (measured on an H100 for int8 ``mm``;
    bench/gpu_eager_checks.py checks every row), at the program's line."""
    fn(*inputs)  # eager on the CPU runs it
    with pytest.raises(EagerRefusal) as got:
        solar.bound(fn, list(inputs), hw="H100")
    assert f"{type(got.value.original).__name__}: {got.value.original}" == cuda_error
    assert got.value.where == f"eager_check_cases.py:{fn.__code__.co_firstlineno}"


def test_every_cuda_kernel_has_a_refused_case():
    kernels = {k.kernel for k in CUDA_KERNELS}
    assert {c[4].split('"')[1] for c in CUDA_REFUSED} == kernels


def test_cuda_int8_gemm_and_empty_integer_gemm_bound():
    """``torch._int_mm`` is CUDA's int8 GEMM (int32 out); an empty integer ``mm`` returns
    before the kernel dispatches on its dtype, so eager CUDA runs it too."""
    i8 = torch.int8
    assert solar.bound(torch._int_mm, [z(32, 32, dtype=i8), z(32, 32, dtype=i8)], hw="H100")
    assert solar.bound(torch.mm, [z(0, 8, dtype=i8), z(8, 4, dtype=i8)], hw="H100").fused == 0


def test_scalar_type_names_are_c10s():
    names = [scalar_type_name(d) for d in (torch.int8, torch.uint8, torch.int16, torch.int32)]
    assert names + [scalar_type_name(i64), scalar_type_name(torch.bool)] == [
        "Char",
        "Byte",
        "Short",
        "Int",
        "Long",
        "Bool",
    ]


def fake_cuda(module: torch.nn.Module) -> torch.nn.Module:
    """``module`` with its weights on ``cuda:0``, as fake tensors: no GPU needed, and solar's
    trace reads only their devices, shapes and dtypes."""
    with FakeTensorMode(allow_non_fake_inputs=True):
        return module.to_empty(device="cuda")


DEVICE_CASES = device_cases(fake_cuda)
MIXED = [c for c in DEVICE_CASES if c[1] == "devices"]


@pytest.mark.parametrize(("model", "inputs"), [c[2:] for c in MIXED], ids=[c[0] for c in MIXED])
def test_cuda_model_fed_cpu_tensor_is_refused(model, inputs):
    """A model on CUDA fed a CPU tensor (not a 0-dim one): eager's device error, the argument
    that is on the CPU named, at the model's line."""
    with pytest.raises(EagerRefusal) as got:
        solar.bound(model, list(inputs), hw="H100")
    arg, op = {"Proj": ("mat1", "aten.addmm.default"), "Scaled": ("other", "aten.mul.Tensor")}[
        type(model).__name__
    ]
    assert str(got.value.original) == (
        f"Expected all tensors to be on the same device, but got {arg} is on cpu, different "
        f"from other tensors on cuda:0 (when checking argument in {op})"
    )
    assert type(got.value.original) is RuntimeError
    line = type(model).forward.__code__.co_firstlineno + 1
    assert got.value.where == f"eager_check_cases.py:{line}"


LEGAL_MIXES = [c for c in DEVICE_CASES if c[1] == "legal"]


@pytest.mark.parametrize(
    ("model", "inputs"), [c[2:] for c in LEGAL_MIXES], ids=[c[0] for c in LEGAL_MIXES]
)
def test_device_mixes_eager_allows_bound(model, inputs):
    """A CPU 0-dim tensor with CUDA ones, an input the model moves to its weights' device."""
    assert solar.bound(model, list(inputs), hw="H100").fused > 0


@pytest.mark.parametrize(
    ("model", "x"),
    [
        (fake_cuda(Proj()), torch.zeros(8, 64, device="meta")),
        (Proj(), torch.zeros(8, 64, device="meta")),
        (Proj().to("meta"), z(8, 64)),
    ],
    ids=["cuda-model-meta-input", "cpu-model-meta-input", "meta-model-cpu-input"],
)
def test_meta_mixes_with_any_device(model, x):
    """Meta is how a user asks for analysis without allocating: never a device mix."""
    assert solar.bound(model, [x], hw="H100").fused > 0


class CastThenProj(Proj):
    def forward(self, x):
        return self.proj(x.to(torch.float32))  # a cast, no move: still the CPU tensor


def test_a_cast_is_no_move():
    """``x.to(dtype)`` (a no-op here) moves nothing: the CPU input still meets CUDA weights."""
    with pytest.raises(EagerRefusal, match="but got mat1 is on cpu"):
        solar.bound(fake_cuda(CastThenProj()), [z(8, 64)], hw="H100")


INT8_GEMM = """\
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(64, 32, dtype=torch.int8), requires_grad=False)

    def forward(self, x):
        return torch.GEMM(x, self.weight)


def get_inputs():
    return [torch.zeros(32, 64, dtype=torch.int8)]


def get_init_inputs():
    return []
"""


def test_cli_int8_mm_is_one_line_and_int_mm_bounds(tmp_path):
    """``solar bound`` on an int8 ``torch.mm`` (the CPU runs it, CUDA does not): CUDA's
    message at the file's line; the same file with ``torch._int_mm`` bounds."""
    f = tmp_path / "int8_gemm.py"
    f.write_text(INT8_GEMM.replace("GEMM", "mm"))
    code, out, err = run_solar("bound", f)
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == [
        "solar: error: int8_gemm.py:10 in the model (Model): NotImplementedError: "
        "\"addmm_cuda\" not implemented for 'Char' (eager PyTorch raises this: the program "
        "cannot run, so it has no bound; --debug shows the traceback)"
    ]
    f.write_text(INT8_GEMM.replace("GEMM", "_int_mm"))
    code, out, err = run_solar("bound", f)
    assert (code, err) == (0, "")
    assert "int8_gemm" in out
