"""Footprints of affine accesses: hand-derived exact counts and brute-force property tests."""

from __future__ import annotations

import itertools
from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solar.ir.affine import Affine
from solar.ir.footprint import (
    Footprint,
    access_footprint,
    distinct_tuples,
    guarded_count,
    union_footprint,
)
from solar.ir.footprint.factors import progression
from solar.ir.footprint.segments import segment_union
from solar.ir.footprint.sums import fold
from solar.ir.limits import limits
from solar.ir.program import (
    Access,
    Dim,
    Guard,
    Program,
    ProgramBuilder,
    Statement,
    TensorDecl,
    View,
)
from solar.ir.scalar import Load

A = Affine.of


@pytest.fixture
def small_limits():
    """Shrink the enumeration limits so the large-set code paths run at brute-force sizes."""
    with limits(enum=6, mask=40):
        yield


def _read(b: ProgramBuilder, dims, tensor: str, index, guards=(), out=None) -> Statement:
    """A statement reading ``tensor[index]`` (into a scratch output)."""
    if out is None:
        out = b.tensor("o", (1,), "float32", "local")
    if b._kernel is None:
        b.begin_kernel("test")
    red = [d if isinstance(d, Dim) else Dim(d[0], d[1], True) for d in dims]
    return b.statement(
        red, (out, (0,)), Load(tensor, tuple(map(A, index))), reduce="sum", guards=guards
    )


def _fp(b, st_, tensor, index) -> Footprint:
    return access_footprint(b.program, st_, tensor, tuple(map(A, index)))


# ----------------------------------------------------------------------------------------------
# hand-derived cases


def test_identity_access():
    b = ProgramBuilder("p")
    x = b.tensor("x", (4, 5), "float32", "input")
    s = _read(b, [("i", 4), ("j", 5)], x, ["i", "j"])
    assert _fp(b, s, x, ["i", "j"]) == Footprint(20, True)


def test_partial_rows_and_constant_index():
    b = ProgramBuilder("p")
    x = b.tensor("x", (4, 5), "float32", "input")
    s = _read(b, [("i", 3)], x, ["i", 2])
    assert _fp(b, s, x, ["i", 2]) == Footprint(3, True)


def test_transposed_view():
    b = ProgramBuilder("p")
    x = b.tensor("x", (4, 5), "float32", "input")
    xt = b.view("xt", x, (5, 4), (1, 5))
    s = _read(b, [("i", 5), ("j", 4)], xt, ["i", "j"])
    assert _fp(b, s, xt, ["i", "j"]) == Footprint(20, True)


def test_broadcast_expand_counts_base_once():
    b = ProgramBuilder("p")
    bias = b.tensor("bias", (5,), "float32", "weight")
    e = b.view("e", bias, (64, 5), (0, 1))
    s = _read(b, [("i", 64), ("j", 5)], e, ["i", "j"])
    assert _fp(b, s, e, ["i", "j"]) == Footprint(5, True)


def test_slice_view():
    b = ProgramBuilder("p")
    x = b.tensor("x", (4, 8), "float32", "input")
    sl = b.view("sl", x, (4, 3), (8, 1), offset=2)  # x[:, 2:5]
    s = _read(b, [("i", 4), ("j", 3)], sl, ["i", "j"])
    assert _fp(b, s, sl, ["i", "j"]) == Footprint(12, True)


def test_strided_slice_view():
    b = ProgramBuilder("p")
    x = b.tensor("x", (10, 3), "float32", "input")
    ev = b.view("ev", x, (5, 3), (6, 1))  # x[::2]
    s = _read(b, [("i", 5), ("j", 3)], ev, ["i", "j"])
    assert _fp(b, s, ev, ["i", "j"]) == Footprint(15, True)


def _conv_input_footprint(size, kernel, stride, pad, out, channels=3, batch=2) -> Footprint:
    b = ProgramBuilder("conv")
    x = b.tensor("I", (batch, channels, size, size), "float32", "input")
    h = stride * A("p") + A("r") - pad
    w = stride * A("q") + A("s") - pad
    dims = [("n", batch), ("c", channels), ("p", out), ("q", out), ("r", kernel), ("s", kernel)]
    guards = [Guard(h, 0, size), Guard(w, 0, size)]
    s = _read(b, dims, x, ["n", "c", h, w], guards)
    return access_footprint(b.program, s, x, (A("n"), A("c"), h, w))


def test_conv_window_touches_every_row():
    # 224 input, 7x7 kernel, stride 2, pad 3, 112 outputs: rows 2p+r-3 cover 0..223.
    assert _conv_input_footprint(224, 7, 2, 3, 112) == Footprint(2 * 3 * 224 * 224, True)


def test_dilated_window_leaves_gaps():
    # stride 3, kernel 2, pad 1, input 31, 11 outputs: rows 3p+r-1 in [0, 31):
    # p=0 -> {0}; p=1..10 -> {3p-1, 3p}: 21 rows (of 31), so 21*21 per plane.
    assert _conv_input_footprint(31, 2, 3, 1, 11) == Footprint(2 * 3 * 21 * 21, True)
    # no padding, 10 outputs: rows {3p, 3p+1}: 20 rows of 30
    assert _conv_input_footprint(30, 2, 3, 0, 10, 1, 1) == Footprint(400, True)


def test_reshape_view_merged_dims_one_loop_dim():
    b = ProgramBuilder("p")
    x = b.tensor("x", (6, 4), "float32", "input")
    flat = b.view("flat", x, (24,), (1,))
    s = _read(b, [("i", 24)], flat, ["i"])
    assert _fp(b, s, flat, ["i"]) == Footprint(24, True)
    s2 = _read(b, [("i", 10)], flat, ["i"])
    assert _fp(b, s2, flat, ["i"]) == Footprint(10, True)
    # a split view of a flat base, read with two loop dims: the merged AP is contiguous
    y = b.tensor("y", (24,), "float32", "input")
    sp = b.view("sp", y, (4, 6), (6, 1))
    s3 = _read(b, [("i", 4), ("j", 6)], sp, ["i", "j"])
    assert _fp(b, s3, sp, ["i", "j"]) == Footprint(24, True)


def test_overlapping_windows_view():
    # unfold(0, 3, 1) of a length-10 vector: windows overlap, 10 distinct elements
    b = ProgramBuilder("p")
    x = b.tensor("x", (10,), "float32", "input")
    u = b.view("u", x, (8, 3), (1, 1))
    s = _read(b, [("i", 8), ("j", 3)], u, ["i", "j"])
    assert _fp(b, s, u, ["i", "j"]) == Footprint(10, True)


def test_diagonal():
    b = ProgramBuilder("p")
    x = b.tensor("x", (7, 7), "float32", "input")
    s = _read(b, [("i", 7)], x, ["i", "i"])
    assert _fp(b, s, x, ["i", "i"]) == Footprint(7, True)


def test_causal_triangle_large():
    n = 8192
    b = ProgramBuilder("p")
    sc = b.tensor("S", (n, n), "float32", "input")
    q = b.tensor("Q", (n, 64), "float32", "input")
    g = [Guard(A("i") - A("j"), 0, n)]
    s = _read(b, [("i", n), ("j", n)], sc, ["i", "j"], g)
    assert _fp(b, s, sc, ["i", "j"]) == Footprint(n * (n + 1) // 2, True)
    s2 = _read(b, [("i", n), ("j", n), ("d", 64)], q, ["i", "d"], g)
    assert _fp(b, s2, q, ["i", "d"]) == Footprint(n * 64, True)
    assert guarded_count({"i": n, "j": n}, g) == Footprint(n * (n + 1) // 2, True)
    assert guarded_count({"i": n, "j": n}, g, ["j"]) == Footprint(n, True)


def test_empty_guard_and_existential_guard():
    b = ProgramBuilder("p")
    x = b.tensor("x", (8,), "float32", "input")
    s = _read(b, [("i", 8)], x, ["i"], [Guard(A("i"), 10, 20)])
    assert _fp(b, s, x, ["i"]) == Footprint(0, True)
    # i is read where some k < 3 has i + k >= 9: i in 7..7 (i < 8)
    s2 = _read(b, [("i", 8), ("k", 3)], x, ["i"], [Guard(A("i") + A("k"), 9, 100)])
    assert _fp(b, s2, x, ["i"]) == Footprint(1, True)


def test_union_of_overlapping_slices():
    b = ProgramBuilder("p")
    x = b.tensor("x", (4, 8), "float32", "input")
    s1 = b.view("s1", x, (4, 5), (8, 1))  # x[:, 0:5]
    s2 = b.view("s2", x, (4, 5), (8, 1), offset=3)  # x[:, 3:8]
    st1 = _read(b, [("i", 4), ("j", 5)], s1, ["i", "j"])
    st2 = _read(b, [("i", 4), ("j", 5)], s2, ["i", "j"])
    ij = (A("i"), A("j"))
    assert union_footprint(b.program, [(st1, s1, ij), (st2, s2, ij)]) == Footprint(32, True)
    s3 = b.view("s3", x, (4, 3), (8, 1), offset=5)  # x[:, 5:8]
    st3 = _read(b, [("i", 4), ("j", 3)], s3, ["i", "j"])
    s4 = b.view("s4", x, (4, 3), (8, 1))  # x[:, 0:3]
    st4 = _read(b, [("i", 4), ("j", 3)], s4, ["i", "j"])
    assert union_footprint(b.program, [(st3, s3, ij), (st4, s4, ij)]) == Footprint(24, True)
    # identical accesses count once; a whole-tensor access makes the union the base
    assert union_footprint(b.program, [(st1, s1, ij), (st1, s1, ij)]) == Footprint(20, True)
    st5 = _read(b, [("i", 4), ("j", 8)], x, ["i", "j"])
    assert union_footprint(b.program, [(st1, s1, ij), (st5, x, ij)]) == Footprint(32, True)
    assert union_footprint(b.program, []) == Footprint(0, True)


def test_union_large_base_slices_exact():
    rows, cols = 8192, 4096  # 2**25 elements: beyond the mask, exact through the digit grid
    b = ProgramBuilder("p")
    x = b.tensor("x", (rows, cols), "bfloat16", "input")
    s1 = b.view("s1", x, (rows, 1000), (cols, 1))
    s2 = b.view("s2", x, (rows, 1500), (cols, 1), offset=500)
    s3 = b.view("s3", x, (1, cols), (cols, 1), offset=17 * cols)  # one full row
    ij = (A("i"), A("j"))
    st1 = _read(b, [("i", rows), ("j", 1000)], s1, ["i", "j"])
    st2 = _read(b, [("i", rows), ("j", 1500)], s2, ["i", "j"])
    st3 = _read(b, [("i", 1), ("j", cols)], s3, ["i", "j"])
    got = union_footprint(b.program, [(st1, s1, ij), (st2, s2, ij), (st3, s3, ij)])
    assert got == Footprint(rows * 2000 + (cols - 2000), True)


def test_union_mask_conv_windows():
    # two different windows over one small base: exact through the mask
    b = ProgramBuilder("p")
    x = b.tensor("x", (40,), "float32", "input")
    st1 = _read(b, [("p", 5), ("r", 2)], x, [3 * A("p") + A("r")])
    st2 = _read(b, [("p", 5), ("r", 2)], x, [4 * A("p") + A("r") + 20])
    i1, i2 = (3 * A("p") + A("r"),), (4 * A("p") + A("r") + 20,)
    want = len(
        {3 * p + r for p in range(5) for r in range(2)}
        | {4 * p + r + 20 for p in range(5) for r in range(2)}
    )
    assert union_footprint(b.program, [(st1, x, i1), (st2, x, i2)]) == Footprint(want, True)


def test_never_exceeds_numel():
    b = ProgramBuilder("p")
    x = b.tensor("x", (3,), "float32", "input")
    e = b.view("e", x, (3, 100), (1, 0))
    s = _read(b, [("i", 3), ("j", 100)], e, ["i", "j"])
    assert _fp(b, s, e, ["i", "j"]) == Footprint(3, True)


def test_large_shapes_fast():
    # a 70B-style weight read (8192 x 28672 bf16) and an attention score write: structural
    b = ProgramBuilder("p")
    w = b.tensor("w", (28672, 8192), "bfloat16", "weight")
    s = _read(b, [("m", 4096), ("n", 28672), ("k", 8192)], w, ["n", "k"])
    assert _fp(b, s, w, ["n", "k"]) == Footprint(28672 * 8192, True)
    wt = b.view("wt", w, (8192, 28672), (1, 8192))
    s2 = _read(b, [("k", 8192), ("n", 28672)], wt, ["k", "n"])
    assert _fp(b, s2, wt, ["k", "n"]) == Footprint(28672 * 8192, True)


# ----------------------------------------------------------------------------------------------
# brute force


def _brute(extents: dict[str, int], guards, forms) -> int:
    names = list(extents)
    seen = set()
    for vals in itertools.product(*(range(extents[d]) for d in names)):
        env = dict(zip(names, vals, strict=True))
        if all(g.lo <= g.expr.evaluate(env) < g.hi for g in guards):
            seen.add(tuple(f.evaluate(env) for f in forms))
    return len(seen)


_DIMS = ["a", "b", "c", "d"]


@st.composite
def _affine(draw, dims, lo=-3, hi=3, const=(-4, 8)):
    coefs = {d: draw(st.integers(lo, hi)) for d in dims if draw(st.booleans())}
    return Affine.build(coefs, draw(st.integers(*const)))


@st.composite
def _domain(draw):
    nd = draw(st.integers(1, 4))
    dims = _DIMS[:nd]
    extents = {d: draw(st.integers(1, 7)) for d in dims}
    guards = []
    for _ in range(draw(st.integers(0, 2))):
        e = draw(_affine(dims, -2, 2))
        lo = draw(st.integers(-6, 10))
        guards.append(Guard(e, lo, lo + draw(st.integers(0, 12))))
    return extents, guards


def _stmt(extents, guards) -> Statement:
    return Statement(
        tuple(Dim(d, n) for d, n in extents.items()),
        Access("o", ()),
        Load("x", ()),
        guards=tuple(guards),
    )


@st.composite
def _access(draw, extents):
    """A view of a 1-D base: k dims with random strides and affine indices."""
    dims = list(extents)
    k = draw(st.integers(1, 3))
    index = tuple(draw(_affine(dims, -3, 3, (0, 3))) for _ in range(k))
    strides = tuple(draw(st.integers(0, 9)) for _ in range(k))
    return index, strides


def _view_program(extents, index, strides, name="v", prog=None) -> tuple[Program, int, int]:
    flat = Affine()
    for s, e in zip(strides, index, strict=True):
        flat = flat + e * s
    lo, hi = flat.bounds(extents)
    offset = -lo
    p = prog or Program("prop")
    p.tensors.setdefault("x", TensorDecl("x", (1000,), "float32", "input"))
    shape = tuple(max(1, e.bounds(extents)[1] + 1) for e in index)
    p.tensors[name] = TensorDecl(name, shape, "float32", "input", View("x", strides, offset))
    return p, offset, hi - lo


def _check(fp: Footprint, want: int) -> None:
    if fp.exact:
        assert fp.elements == want
    else:
        assert fp.elements <= want


_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _limits(which: str, **small):
    """The limits of a property test: the defaults, or ``small`` ones."""
    return limits(**small) if which == "small" else nullcontext()


@pytest.mark.parametrize("which", ["default", "small"])
@_SETTINGS
@given(data=st.data())
def test_property_access_footprint(which, data):
    with _limits(which, enum=6):
        _property_access_footprint(data)


def _property_access_footprint(data):
    extents, guards = data.draw(_domain())
    index, strides = data.draw(_access(extents))
    p, offset, _ = _view_program(extents, index, strides)
    s = _stmt(extents, guards)
    flat = Affine((), offset)
    for st_, e in zip(strides, index, strict=True):
        flat = flat + e * st_
    got = access_footprint(p, s, "v", index)
    _check(got, _brute(extents, guards, [flat]))


@pytest.mark.parametrize("which", ["default", "small"])
@_SETTINGS
@given(data=st.data())
def test_property_guarded_counts(which, data):
    with _limits(which, enum=6):
        _property_guarded_counts(data)


def _property_guarded_counts(data):
    extents, guards = data.draw(_domain())
    sub = [d for d in extents if data.draw(st.booleans())]
    _check(guarded_count(extents, guards), _brute(extents, guards, [A(d) for d in extents]))
    _check(guarded_count(extents, guards, sub), _brute(extents, guards, [A(d) for d in sub]))
    forms = [data.draw(_affine(list(extents))) for _ in range(data.draw(st.integers(1, 3)))]
    got = distinct_tuples(_stmt(extents, guards), forms)
    _check(got, _brute(extents, guards, [f for f in forms if not f.is_const]))


@pytest.mark.parametrize("which", ["default", "small"])
@_SETTINGS
@given(data=st.data())
def test_property_union(which, data):
    mask = data.draw(st.sampled_from([10, 1000])) if which == "small" else None
    with _limits(which, enum=6, mask=mask):
        _property_union(data)


def _property_union(data):
    p = Program("prop")
    p.tensors["x"] = TensorDecl("x", (1000,), "float32", "input")
    accesses, values = [], set()
    for k in range(data.draw(st.integers(1, 3))):
        extents, guards = data.draw(_domain())
        index, strides = data.draw(_access(extents))
        flat = Affine()
        for s_, e in zip(strides, index, strict=True):
            flat = flat + e * s_
        lo, _ = flat.bounds(extents)
        off = -lo + data.draw(st.integers(0, 20))
        name = f"v{k}"
        shape = tuple(max(1, e.bounds(extents)[1] + 1) for e in index)
        p.tensors[name] = TensorDecl(name, shape, "float32", "input", View("x", strides, off))
        s = _stmt(extents, guards)
        accesses.append((s, name, index))
        names = list(extents)
        for vals in itertools.product(*(range(extents[d]) for d in names)):
            env = dict(zip(names, vals, strict=True))
            if all(g.lo <= g.expr.evaluate(env) < g.hi for g in guards):
                values.add(off + flat.evaluate(env))
    _check(union_footprint(p, accesses), len(values))


def test_small_limits_paths(small_limits):
    # with tiny limits the conv window goes through the proportional (AP cut) path and the
    # gapped window through the sub-box / segment machinery; results stay exact or below
    assert _conv_input_footprint(224, 7, 2, 3, 112) == Footprint(2 * 3 * 224 * 224, True)
    got = _conv_input_footprint(31, 2, 3, 1, 11)
    assert got.elements <= 2 * 3 * 21 * 21
    n = 64
    assert (
        guarded_count({"i": n, "j": n}, [Guard(A("i") - A("j"), 0, n)]).elements <= n * (n + 1) // 2
    )


def test_values_helpers_consistent():
    # AP merging: 1*[0,5) + 5*[0,2) + 10*[0,4) is [0, 40)
    s = fold(0, [progression(1, 5), progression(5, 2), progression(10, 4)])
    assert s.count == 40 and s.exact and len(s.factors) == 1
    # steps 2 and 3: {0..8 even} + {0,3,6} = 2i+3j, i<5, j<3: brute 13
    s2 = fold(0, [progression(2, 5), progression(3, 3)])
    want = len({2 * i + 3 * j for i in range(5) for j in range(3)})
    assert s2.count == want and s2.exact
    v = np.array([0, 1, 5, 6, 7], dtype=np.int64)
    lo, f = segment_union(v, 3, np.array([2, 1, 3, 1, 1]))
    assert lo == 0 and f.n == len({0, 3, 1, 5, 6, 9, 12, 7})


def test_edge_cases_exact():
    b = ProgramBuilder("p")
    x = b.tensor("x", (8,), "float32", "input")
    # F and the guard are multiples of L = 2p + 3r, whose values {0, 3} miss [1, 3)
    e = 2 * A("p") + 3 * A("r")
    s = _read(b, [("p", 1), ("r", 2)], x, [e], [Guard(e, 1, 3)])
    assert _fp(b, s, x, [e]) == Footprint(0, True)
    # contradictory two-dim guards: a + b < 2 and a - b >= 2
    g = [Guard(A("a") + A("b"), 0, 2), Guard(A("a") - A("b"), 2, 10)]
    assert guarded_count({"a": 4, "b": 4}, g) == Footprint(0, True)
    assert guarded_count({"a": 4, "b": 4}, g, ["a"]) == Footprint(0, True)
    # an unbounded guard side given as a float infinity
    n = 50
    tri = guarded_count({"i": n, "j": n}, [Guard(A("i") - A("j"), 0, float("inf"))])
    assert tri == Footprint(n * (n + 1) // 2, True)


def test_existential_witness_in_sub_box(small_limits):
    b = ProgramBuilder("p")
    x = b.tensor("x", (3,), "float32", "input")
    dims = [("d", 3), ("a", 10), ("b", 10), ("c", 10)]
    g = [Guard(A("a") + A("b") + A("c"), 5, 7)]
    s = _read(b, dims, x, ["d"], g)
    assert _fp(b, s, x, ["d"]) == Footprint(3, True)
