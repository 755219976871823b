"""Data movement that copies (flip, roll, repeat/tile, rot90, padding of every mode) and the
shape operators that arrive as views or existing kernels (narrow, unfold, repeat_interleave,
circular padding): traced, lowered, executed as IR on CPU and compared with eager PyTorch; one
kernel per operator; and cost facts (0 flops, exact bytes) derived by hand."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from eager_oracle import check as _check
from eager_oracle import exact

from solar.frontend.torch import trace_torch
from solar.ir.cost import kernel_io, program_io, statement_ops

aten = torch.ops.aten


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g).to(dtype)


def check(fn, *inputs, kernels=None):
    """The oracle, bit-exact: copies are exact."""
    return _check(fn, *inputs, kernels=kernels, tol=exact)


def case(fn, *inputs, id, kernels=None):  # noqa: A002
    return pytest.param(fn, inputs, kernels, id=id)


def one(op):
    return [f"aten.{op}.default"]


X = rand(2, 3, 4, 5)
X3 = rand(2, 3, 7)
X5 = rand(1, 2, 4, 5, 6)

SHAPES = [
    # flip / rot90
    case(lambda x: x.flip(1, 3), X, id="flip", kernels=one("flip")),
    case(lambda x: x.flip(-1), X, id="flip_last", kernels=one("flip")),
    case(torch.fliplr, rand(3, 4), id="fliplr", kernels=one("flip")),
    case(lambda x: x.t().flip(0), rand(3, 4), id="flip_of_view", kernels=one("flip")),
    case(lambda x: x.flip(0, 1, 2, 3), X.to(torch.int32), id="flip_all_int", kernels=one("flip")),
    *(
        case(lambda x, k=k: torch.rot90(x, k, (2, 3)), X, id=f"rot90_{k}", kernels=one("rot90"))
        for k in (0, 1, 2, 3, -1, 5)
    ),
    case(lambda x: torch.rot90(x, 1, (-1, 0)) + 0, X, id="rot90_then_add"),
    # roll
    case(lambda x: x.roll(2, 1), X, id="roll", kernels=one("roll")),
    case(lambda x: x.roll((2, -1), (1, 3)), X, id="roll_two_dims", kernels=one("roll")),
    case(lambda x: x.roll((1, 1), (3, 3)), X, id="roll_same_dim_twice", kernels=one("roll")),
    case(lambda x: x.roll(8, -1), X, id="roll_wraps", kernels=one("roll")),
    case(lambda x: x.roll(5, 3), X, id="roll_full_turn", kernels=one("roll")),
    case(lambda x: x.roll(7), X, id="roll_flat", kernels=one("roll")),
    case(lambda x: x.roll(-3), X, id="roll_flat_negative", kernels=one("roll")),
    case(lambda x: x[1].roll(4), X, id="roll_flat_of_slice", kernels=one("roll")),
    case(lambda x: x.t().roll(1, 0), rand(3, 4), id="roll_of_view", kernels=one("roll")),
    # repeat / tile / repeat_interleave / expand copies
    case(lambda x: x.repeat(2, 1, 1, 3), X, id="repeat", kernels=one("repeat")),
    case(lambda x: x.repeat(2, 1, 1, 1, 2), X, id="repeat_new_dims", kernels=one("repeat")),
    case(lambda x: x.repeat(1, 1), rand(3, 4), id="repeat_ones", kernels=one("repeat")),
    case(lambda x: x.tile(2), X3, id="tile", kernels=one("repeat")),
    case(lambda x: x.tile(2, 1, 1, 1, 1), X3, id="tile_more_dims", kernels=one("repeat")),
    case(lambda x: x.t().repeat(2, 2), rand(3, 4), id="repeat_of_view", kernels=one("repeat")),
    case(lambda x: x.repeat_interleave(2, dim=1), X, id="repeat_interleave"),
    case(lambda x: x.repeat_interleave(3), rand(2, 3), id="repeat_interleave_flat"),
    case(lambda x: x.expand(2, 2, 3, 4, 5).contiguous(), X, id="expand_copy"),
    # views: no kernel
    case(lambda x: x.narrow(1, 1, 2), X, id="narrow", kernels=[]),
    case(lambda x: x.unfold(3, 2, 1), X, id="unfold", kernels=[]),
    case(lambda x: x.unfold(-1, 3, 2) * 2, X, id="unfold_then_mul", kernels=["aten.mul.Tensor"]),
    # constant padding
    case(lambda x: F.pad(x, (1, 2)), X, id="cpad_last", kernels=one("constant_pad_nd")),
    case(lambda x: F.pad(x, (1, 2, 0, 1), value=3.5), X, id="cpad_2d_value"),
    case(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1, 1, 1)), X, id="cpad_all_dims"),
    case(lambda x: F.pad(x, (-1, 2, 1, -2)), X, id="cpad_negative"),
    case(lambda x: F.pad(x, (-2, -1)), X, id="cpad_crop_only"),
    case(lambda x: F.pad(x, (0, 0, 2, 0)), X, id="cpad_one_side"),
    case(lambda x: F.pad(x, (1, 1), value=7), X.to(torch.int64), id="cpad_int"),
    case(lambda x: F.pad(x.t(), (1, 1)), rand(3, 4), id="cpad_of_view"),
    case(nn.ZeroPad2d((1, 0, 2, 1)), X, id="ZeroPad2d"),
    case(nn.ConstantPad3d(1, -1.0), X5, id="ConstantPad3d"),
    # reflection / replication / circular, 1D/2D/3D, batched and not
    *(
        case(lambda x, m=mode, p=pad: F.pad(x, p, mode=m), x, id=f"{mode}_{name}")
        for mode in ("reflect", "replicate", "circular")
        for name, x, pad in [
            ("1d", X3, (2, 3)),
            ("1d_unbatched", rand(3, 7), (1, 2)),
            ("2d", X, (2, 1, 1, 3)),
            ("2d_unbatched", rand(3, 4, 5), (1, 1, 3, 0)),
            ("3d", X5, (2, 1, 1, 2, 1, 3)),
        ]
    ),
    case(lambda x: F.pad(x, (-1, 2), mode="reflect"), X3, id="reflect_negative_left"),
    case(lambda x: F.pad(x, (3, -2), mode="reflect"), X3, id="reflect_negative_right"),
    case(lambda x: F.pad(x, (-1, 2, 2, -1), mode="replicate"), X, id="replicate_negative"),
    case(lambda x: F.pad(x, (6, 6), mode="reflect"), X3, id="reflect_max_pad"),
    case(lambda x: F.pad(x.transpose(1, 2), (1, 2), mode="reflect"), X3, id="reflect_of_view"),
    case(nn.ReflectionPad2d(2), X, id="ReflectionPad2d"),
    case(nn.ReplicationPad3d(1), X5, id="ReplicationPad3d"),
    case(nn.CircularPad2d(1), X, id="CircularPad2d"),
]


@pytest.mark.parametrize("fn, inputs, kernels", SHAPES)
def test_shape(fn, inputs, kernels):
    trace = check(fn, *inputs, kernels=kernels)
    for k in trace.program.kernels:
        if k.op.split(".")[1] in ("flip", "roll", "repeat", "rot90", "constant_pad_nd"):
            assert all(not st.guards for st in k.statements)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize(
    "x, pad", [(X3, (2, 3)), (X, (2, 1, 1, 3)), (X5, (2, 1, 1, 2, 1, 3))], ids=["1d", "2d", "3d"]
)
def test_reflection_replication_pad_is_one_kernel_of_boxes(mode, x, pad):
    """One kernel; 3 boxes per padded dim (pad, interior, pad); 0 flops; DRAM reads = the
    input once, writes = the output once."""
    trace = check(lambda t: F.pad(t, pad, mode=mode), x)
    p = trace.program
    (k,) = p.kernels
    prefix = "reflection" if mode == "reflect" else "replication"
    assert k.op == f"aten.{prefix}_pad{len(pad) // 2}d.default"
    assert len(k.statements) == 3 ** (len(pad) // 2)
    assert all(statement_ops(p, st) == {} for st in k.statements)
    out = p.tensors[trace.output_names[0]]
    io = kernel_io(p, k)
    assert io.exact
    assert io.read_bytes == 4 * x.numel() and io.write_bytes == 4 * out.numel
    assert program_io(p).bytes == 4 * (x.numel() + out.numel)


def test_reflection_pad_bytes_by_hand():
    """(2, 3, 4, 5) padded (2, 1, 1, 3) -> (2, 3, 8, 8): reads 120 floats, writes 384."""
    trace = check(lambda t: F.pad(t, (2, 1, 1, 3), mode="reflect"), X)
    io = kernel_io(trace.program, trace.program.kernels[0])
    assert (io.read_bytes, io.write_bytes) == (4 * 2 * 3 * 4 * 5, 4 * 2 * 3 * 8 * 8)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.roll(2, 1),
        lambda x: x.roll((2, -1), (1, 3)),
        lambda x: x.roll(7),
        lambda x: x.flip(1, 3),
    ],
    ids=["roll", "roll_2_dims", "roll_flat", "flip"],
)
def test_roll_and_flip_cost(fn):
    """A permutation of the elements: 0 flops, DRAM bytes = 2x the tensor (read it once,
    write it once), exactly; 2^k boxes for k rolled dims."""
    trace = check(fn, X)
    p = trace.program
    (k,) = p.kernels
    assert all(statement_ops(p, st) == {} for st in k.statements)
    io = kernel_io(p, k)
    assert io.exact and io.read_bytes == io.write_bytes == 4 * X.numel()
    assert io.bytes == 2 * 4 * 120


def test_roll_boxes():
    trace = check(lambda x: x.roll((2, -1), (1, 3)), X)
    assert len(trace.program.kernels[0].statements) == 4
    trace = check(lambda x: x.roll(3, 1), X)  # a full turn is one box, a copy
    assert len(trace.program.kernels[0].statements) == 1


def test_repeat_cost():
    """``repeat`` reads the input once and writes every output element: 0 flops."""
    trace = check(lambda x: x.repeat(2, 1, 3), X3)
    p = trace.program
    io = kernel_io(p, p.kernels[0])
    assert io.exact and io.read_bytes == 4 * X3.numel() and io.write_bytes == 4 * 6 * X3.numel()


def test_constant_pad_writes_every_element_once():
    """Interior copy + disjoint border slabs: the writes cover the output exactly once."""
    trace = check(lambda x: F.pad(x, (1, 2, -1, 1), value=2.0), X)
    p = trace.program
    (k,) = p.kernels
    out = p.tensors[trace.output_names[0]]
    written = sum(st.instances for st in k.statements)
    assert written == out.numel
    io = kernel_io(p, k)
    assert io.exact and io.write_bytes == 4 * out.numel
    assert io.read_bytes == 4 * 2 * 3 * 3 * 5  # the cropped rows are not read


def test_repeat_interleave_with_tensor_repeats_is_data_dependent():
    """Its length is data: traced at its smallest value (0) unless observed."""
    fn, args = (lambda x, r: x.repeat_interleave(r, dim=0)), (rand(3, 2), torch.tensor([1, 2, 3]))
    assert trace_torch(fn, args).program.tensors["index_select"].shape == (0, 2)
    assert trace_torch(fn, args, observe=True).program.tensors["index_select"].shape == (6, 2)
