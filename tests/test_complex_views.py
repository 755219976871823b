"""Views that reinterpret their storage's bytes (issues 20 and 24): ``view_as_complex``,
``view_as_real`` and ``Tensor.view(dtype)`` executed as IR bit for bit against PyTorch, with
their footprints derived by hand (a view costs nothing; the kernels reading it move the
storage's bytes); the narrow-format operators (shifts, ``logaddexp``); the complex-RoPE example;
in-place view operators (``unsqueeze_``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from eager_oracle import check, exact

from solar.interp.torch.oracle import OracleError
from solar.interp.torch.oracle import check as oracle_check
from solar.ir.cost import kernel_io, program_io, statement_ops

ROOT = Path(__file__).resolve().parents[1]


def total(program) -> dict[str, int]:
    ops: dict[str, int] = {}
    for k in program.kernels:
        for st in k.statements:
            for c, n in statement_ops(program, st, k).items():
                ops[c] = ops.get(c, 0) + n
    return ops


def io_bytes(program, kernel=None) -> tuple[dict[str, int], dict[str, int]]:
    io = program_io(program) if kernel is None else kernel_io(program, kernel)
    rb = {t: f.elements * io.itemsizes[t] for t, f in io.reads.items()}
    wb = {t: f.elements * io.itemsizes[t] for t, f in io.writes.items()}
    assert all(f.exact for f in [*io.reads.values(), *io.writes.values()])
    return rb, wb


def cplx(*shape):
    return torch.complex(torch.randn(*shape), torch.randn(*shape))


# ------------------------------------------------------------------ complex <-> real pairs
def test_view_as_complex_is_free_and_reads_every_float():
    x = torch.randn(2, 3, 8)
    trace = check(lambda x: torch.view_as_complex(x.reshape(2, 3, 4, 2)) * 2, x, tol=exact)
    p = trace.program
    assert [k.op for k in p.kernels] == ["aten.mul.Tensor"]  # no kernel for the view
    assert total(p) == {"cuda_fp32": 24 * 2}  # complex times real: 2 multiplies
    assert io_bytes(p) == ({"x": 48 * 4}, {"mul": 24 * 8})


def test_view_as_real_of_a_product_and_its_real_parts():
    z = cplx(2, 3)
    trace = check(lambda z: torch.view_as_real(z * z).flatten(1) + 1, z, tol=exact)
    p = trace.program
    assert [k.op for k in p.kernels] == ["aten.mul.Tensor", "aten.add.Tensor"]
    rb, wb = io_bytes(p, p.kernels[1])  # 12 floats read through the view: 6 complex elements
    assert (rb, wb) == ({"mul": 6 * 8}, {"add": 12 * 4})
    trace = check(lambda z: torch.view_as_real(z)[..., 0] + 1, z, tol=exact)
    # the real parts alone: each lies inside a complex element, touched whole (its 8 bytes)
    assert io_bytes(trace.program) == ({"z": 6 * 8}, {"add": 6 * 4})


@pytest.mark.parametrize(
    ("dtype", "to"),
    [
        (torch.float32, torch.int32),
        (torch.bfloat16, torch.int16),
        (torch.float8_e4m3fn, torch.uint8),
        (torch.float8_e5m2, torch.int8),
        (torch.float4_e2m1fn_x2, torch.uint8),
        (torch.float32, torch.complex64),
        (torch.complex64, torch.float32),
        (torch.float32, torch.uint8),
        (torch.int16, torch.float32),
    ],
)
def test_view_dtype_round_trips_bit_for_bit(dtype, to):
    raw = torch.randn(4, 4).view(torch.uint8)  # the bytes of normal floats: no NaN in float32
    x = raw.view(dtype)
    trace = check(lambda x: x.view(to) * 1, x, tol=exact)
    n = x.numel() * x.element_size()  # every byte read once, written once
    rb, wb = io_bytes(trace.program)
    assert sum(rb.values()) == n and sum(wb.values()) == n


def test_narrow_view_of_a_slice_counts_the_elements_it_lies_in():
    # int16 halves 1, 3, 5, ... of six float32 elements: one half of each
    trace = check(lambda a: a.view(torch.int16)[..., 1::2] + 1, torch.randn(6), tol=exact)
    assert io_bytes(trace.program) == ({"a": 6 * 4}, {"add": 6 * 2})
    # bytes 1..4 of two float32 rows of 4: bytes 1-3 lie in element 0, byte 4 in element 1
    trace = check(lambda x: x.view(torch.uint8)[:, 1:5] + 1, torch.randn(2, 4), tol=exact)
    assert io_bytes(trace.program) == ({"x": 2 * 2 * 4}, {"add": 8})


def test_write_through_a_reinterpreting_view():
    def clear_sign(a):
        b = a * 1
        b.view(torch.int32).bitwise_and_(0x7FFFFFFF)
        return b

    trace = check(clear_sign, torch.randn(6), tol=exact)
    assert total(trace.program) == {"cuda_fp32": 6, "cuda_int32": 6}


def test_oracle_counts_same_size_views_and_refuses_other_sizes():
    x = torch.randint(0, 256, (3, 4), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    trace = check(lambda x: x.view(torch.uint8) >> 4, x, tol=exact)
    assert oracle_check(trace.program, trace.values(lambda x: x, (x,))) == []
    trace = check(lambda z: torch.view_as_real(z) + 1, cplx(3), tol=exact)
    with pytest.raises(OracleError, match="reinterprets z as float32"):
        oracle_check(trace.program, trace.values(lambda z: z, (cplx(3),)))


# ------------------------------------------------------------------- narrow-format operators
def test_unpacking_fp4_pairs_with_shifts_and_masks():
    """Two e2m1 codes per byte: high nibble ``b >> 4``, low ``b & 0xF``; one integer op each,
    and the recombination ``(hi << 4) | lo`` two more."""
    x = torch.randint(0, 256, (4, 6), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)

    def unpack(x):
        b = x.view(torch.uint8)
        hi, lo = b >> 4, b & 0xF
        return hi, lo, (hi << 4) | lo

    trace = check(unpack, x, tol=exact)
    assert total(trace.program) == {"cuda_int32": 24 * 4}


def test_shift_semantics_match_torch():
    i8 = torch.tensor([-128, -5, -1, 0, 1, 5, 127], dtype=torch.int8)
    s = torch.tensor([0, 1, 3, 7, 8, 9, 2], dtype=torch.int8)
    check(lambda a, s: (a >> s, a << s), i8, s, tol=exact)
    check(lambda a: (3 << a, a >> 2), torch.tensor([0, 1, 7, 8, 31], dtype=torch.uint8), tol=exact)
    check(lambda a, s: torch.bitwise_right_shift(a, s), i8.int(), s.int(), tol=exact)


def test_logaddexp_is_four_flops_and_two_mufu_ops():
    a = torch.tensor([0.0, -float("inf"), 1.0, 80.0, float("inf")])
    b = torch.tensor([0.0, -float("inf"), -1.0, -80.0, 2.0])
    trace = check(torch.logaddexp, a, b, tol=exact)
    assert total(trace.program) == {"cuda_fp32": 5 * 4, "sfu": 5 * 2}
    trace = check(torch.logaddexp2, a, b, tol=exact)
    assert total(trace.program) == {"cuda_fp32": 5 * 4, "sfu": 5 * 2}


# ------------------------------------------------------------------------ complex RoPE
def _rope_example(tokens: int, head_dim: int):
    spec = importlib.util.spec_from_file_location("rope", ROOT / "examples/chain_complex_rope.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.TOKENS, mod.HEAD_DIM = tokens, head_dim
    return mod


def test_complex_rope_example_executes_and_counts():
    """Per query/key pair of features one complex multiply (6 flops); ``polar`` of the angle
    table 2 multiplies and 2 MUFU ops per entry; the casts and views are free. Bytes: the bf16
    inputs and outputs and the fp32 angle table once (fused)."""
    b, s, h, kv, d = 2, 16, 4, 2, 8
    mod = _rope_example(s, d)
    xq = torch.randn(b, s, h, d, dtype=torch.bfloat16)
    xk = torch.randn(b, s, kv, d, dtype=torch.bfloat16)
    trace = check(mod.Model(), xq, xk, tol=exact, lifted=True)
    p = trace.program
    assert sum(k.op.startswith("aten.view") for k in p.kernels) == 0
    assert total(p) == {"cuda_fp32": 6 * b * s * (h + kv) * d // 2 + 2 * s * d // 2, "sfu": s * d}
    rb, wb = io_bytes(p)
    assert rb == {"freqs": s * d // 2 * 4, "xq": b * s * h * d * 2, "xk": b * s * kv * d * 2}
    assert sum(wb.values()) == b * s * (h + kv) * d * 2
    mul = next(k for k in p.kernels if k.op == "aten.mul.Tensor")
    rb, wb = io_bytes(p, mul)  # the fp32 copy of q through the complex view, the table
    assert sum(rb.values()) == b * s * h * d * 4 + s * d // 2 * 8
    assert sum(wb.values()) == b * s * h * d // 2 * 8


def test_complex_rope_example_bounds_at_full_size():
    import solar
    from solar.problem import load_problem

    problem = load_problem(ROOT / "examples/chain_complex_rope.py")
    bound = solar.bound(problem.model, problem.inputs, hw="H100")
    b, s, h, kv, d = 2, 4096, 32, 8, 128
    assert bound.bytes_fused == 2 * 2 * b * s * (h + kv) * d + s * d // 2 * 4
    assert bound.bytes_fused < bound.bytes_unfused


def test_complex_rope_attention_block_executes_and_counts():
    """Meta's reference attention block (examples/model_complex_rope_attention.py) at a small
    size: executed against eager PyTorch; tensor-core flops 2 per multiply-add of the Q/K/V
    and output projections and of the two attention products (GQA keys repeated, not
    recomputed); each rotary kernel one complex multiply (6 flops) per feature pair."""
    spec = importlib.util.spec_from_file_location(
        "rope_attention", ROOT / "examples/model_complex_rope_attention.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    b, s, w, h, kv = 2, 16, 64, 4, 2
    d = w // h
    mod.TOKENS = s
    torch.manual_seed(0)
    model = mod.Model(w, h, kv)
    trace = check(model, torch.randn(b, s, w, dtype=torch.bfloat16), lifted=True)
    p = trace.program
    projections = 2 * b * s * w * (h * d + 2 * kv * d) + 2 * b * s * h * d * w
    attention = 2 * (2 * b * h * s * s * d)
    assert total(p)["tc_bf16"] == projections + attention
    rotary = [k for k in p.kernels if k.op == "aten.mul.Tensor"]
    per_kernel = [
        sum(statement_ops(p, st).get("cuda_fp32", 0) for st in k.statements) for k in rotary
    ]
    assert per_kernel == [6 * b * s * h * d // 2, 6 * b * s * kv * d // 2]


# ----------------------------------------------------------------------- in-place views
def test_unsqueeze_in_place_is_a_view():
    trace = check(lambda a: (a * 3).unsqueeze_(1).transpose_(0, 1) + a, torch.randn(5), tol=exact)
    assert [k.op for k in trace.program.kernels] == ["aten.mul.Tensor", "aten.add.Tensor"]


def test_real_and_imag_views_of_a_complex_tensor():
    """``z.real``/``z.imag`` trace as ``view_as_real`` and a select: each part read in place,
    the complex elements counted whole (8 bytes each, both kernels)."""
    z = cplx(3)
    trace = check(lambda z: z.real * 2 + z.imag, z, tol=exact)
    mul, add = trace.program.kernels
    assert io_bytes(trace.program, mul)[0] == {"z": 3 * 8}
    assert io_bytes(trace.program, add)[0] == {"z": 3 * 8, "mul": 3 * 4}


def test_nvfp4_definition_declares_fp4_and_executes_exactly():
    """The NVFP4 GEMM definition takes ``float4_e2m1fn_x2`` operands and unpacks them as its
    reference is written (``.view(torch.uint8)``, ``& 0x0F``, ``>> 4``, a lookup table); its IR
    reproduces the reference exactly on the first workload."""
    from solar.definition.inputs import make_inputs, reference_module
    from solar.definition.schema import default_workloads_path, load_definition, load_workloads
    from solar.definition.workload import traced_reference
    from solar.gpu.validate import validate

    path = ROOT / "examples/definitions/gemm_nvfp4_block_scaled_n4096_k4096.json"
    defn = load_definition(path)
    assert {defn.inputs[n].dtype for n in ("A", "B")} == {"float4_e2m1fn_x2"}
    module = reference_module(defn)
    wl = load_workloads(default_workloads_path(path), defn)[0]
    inputs = make_inputs(defn, wl, module=module, real_floats=True)
    rep = validate(*traced_reference(defn, inputs, module), name=defn.name)
    assert rep.ok and rep.worst.max_abs_err == 0.0, rep


def _owners(view: torch.Tensor, base_itemsize: int) -> int:
    """Distinct base elements whose bytes the elements of ``view`` occupy (by enumeration)."""
    idx = torch.zeros(view.shape, dtype=torch.int64) + view.storage_offset()
    for d, (n, s) in enumerate(zip(view.shape, view.stride(), strict=True)):
        shape = [1] * view.ndim
        shape[d] = n
        idx = idx + (torch.arange(n) * s).reshape(shape)
    size = view.element_size()
    first = idx.reshape(-1, 1) * size + torch.arange(size)
    return int(torch.unique(first // base_itemsize).numel())


VIEWS = {
    "real parts": (lambda z: torch.view_as_real(z)[..., 0], lambda: cplx(3, 4)),
    "imaginary parts, every other row": (
        lambda z: torch.view_as_real(z)[::2, :, 1],
        lambda: cplx(5, 3),
    ),
    "floats of a complex column": (lambda z: torch.view_as_real(z[:, 1]), lambda: cplx(4, 3)),
    "bytes 1..4 of each row": (lambda x: x.view(torch.uint8)[:, 1:5], lambda: torch.randn(3, 4)),
    "every third byte": (lambda x: x.view(torch.uint8)[:, ::3], lambda: torch.randn(3, 4)),
    "high halves": (lambda x: x.view(torch.int16)[..., 1::2], lambda: torch.randn(2, 6)),
    "complex of a column slice": (
        lambda x: torch.view_as_complex(x[:, 2:6].reshape(3, 2, 2)),
        lambda: torch.randn(3, 8),
    ),
    "every other complex": (lambda x: x.view(torch.complex64)[:, 1::2], lambda: torch.randn(4, 8)),
    "complex128 of bytes": (
        lambda x: x.view(torch.complex128)[1:],
        lambda: torch.randn(4, 8).view(torch.uint8),
    ),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_reinterpreting_view_footprints_equal_enumeration(name):
    """A copy through a reinterpreting view reads the base elements its bytes lie in: the
    footprint (exact) equals the count enumerated from the view's strides."""
    view, make = VIEWS[name]
    x = make()
    trace = check(lambda x: view(x).clone(), x, tol=exact)
    p = trace.program
    io = program_io(p)
    ((base, fp),) = io.reads.items()
    assert fp.exact and fp.elements == _owners(view(x), x.element_size()), name
