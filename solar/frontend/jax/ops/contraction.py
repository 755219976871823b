"""Contractions: ``dot_general`` and ``conv_general_dilated``, each a heavy kernel.

``dot_general`` is one statement ``out[b.., m.., n..] += lhs[..] * rhs[..]`` with any batch and
contracting dims (output order: batch, lhs free, rhs free). A dot without contracting dims is a
plain product (XLA rewrites it to a multiply). Operands are cast to the output dtype
(``preferred_element_type``): the contraction runs on the unit of the operands' dtype and
accumulates in the output's. A later ``add`` of the dot's result and a tensor computed before
it folds into the dot (``out = bias; out += lhs * rhs``), as XLA's GEMM rewriter does with the
cuBLAS ``beta = 1`` epilogue: see :func:`fold_bias`.

``conv_general_dilated`` is ``out[n, g*Og + o, p..] += lhs[n, g*Cg + c, s*p + d*r - lo] *
rhs[g*Og + o, c, r..]`` for any dimension numbers, window strides, padding (guards: the
window of :mod:`solar.frontend.lowering.window`, shared with PyTorch's convolutions), rhs
dilation, feature groups (``g``) and batch groups (``lhs batch = bg*Nb + n``, ``out feature =
bg*Og + o``). lhs dilation (a transposed convolution) is written per residue class of the output
and window positions, so only the products of real (non-hole) input elements are counted, as
cuDNN's data-gradient kernels compute them.

float32 operands carry the precision policy's mode (:mod:`solar.frontend.jax.precision`); the
``bf16`` mode (``BF16_BF16_F32`` algorithms) rounds the operands to bfloat16 first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import product

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering
from solar.frontend.layout import T, dims_of, nest
from solar.frontend.lowering.window import window
from solar.ir.affine import Affine
from solar.ir.program import Dim
from solar.ir.scalar import Const, call


def prepare(ctx: LoweringContext, v: V, mode: str | None) -> T:
    """``v`` as a tensor; in ``bf16`` mode a bfloat16 copy of it (kernel-local)."""
    t = ctx.tensor(v)
    if mode != "bf16":
        return t
    low = ctx.local("bf16", t.shape, "bfloat16")
    dims = dims_of(t.shape)
    ctx.statement(nest(dims, t.shape), low, dims, ctx.load(t, dims, "bfloat16"))
    return low


@lowering("dot_general", kind="heavy")
def dot_general(
    ctx: LoweringContext,
    lhs: V,
    rhs: V,
    *,
    dimension_numbers,
    precision=None,
    preferred_element_type=None,
    **_: object,
) -> None:
    (lc, rc), (lb, rb) = dimension_numbers
    li: list = [None] * lhs.ndim
    ri: list = [None] * rhs.ndim
    for j, (a, b) in enumerate(zip(lb, rb, strict=True)):
        li[a] = ri[b] = f"b{j}"
    for j, (a, b) in enumerate(zip(lc, rc, strict=True)):
        li[a] = ri[b] = f"k{j}"
    m = [f"m{j}" for j in range(lhs.ndim - len(lc) - len(lb))]
    n = [f"n{j}" for j in range(rhs.ndim - len(rc) - len(rb))]
    it = iter(m)
    li = [d if d is not None else next(it) for d in li]
    it = iter(n)
    ri = [d if d is not None else next(it) for d in ri]
    extent = {**dict(zip(li, lhs.shape, strict=True)), **dict(zip(ri, rhs.shape, strict=True))}
    out = ctx.out()
    res = [f"b{j}" for j in range(len(lb))] + m + n
    ks = [f"k{j}" for j in range(len(lc))]
    dims = [(d, extent[d], False) for d in res] + [(k, extent[k], True) for k in ks]
    mode = ctx.policy.matmul(lhs.dtype, precision)
    a = ctx.load(prepare(ctx, lhs, mode), li, out.dtype)
    b = ctx.load(prepare(ctx, rhs, mode), ri, out.dtype)
    st = ctx.statement(
        dims,
        out,
        res,
        call("mul", a, b),
        reduce="sum" if ks else None,
        precision=None if mode == "bf16" else mode,
    )
    if st is not None and ks:
        ctx.bind_out(0, V(out.shape, out.dtype, out, owned=True, contraction=st))


def fold_bias(ctx: LoweringContext, x: V, y: V) -> bool:
    """``add(dot, other)``: fold ``other`` into the dot's (or convolution's) statement as its
    initial value (``out = other; out += lhs * rhs``: the cuBLAS ``beta = 1`` epilogue XLA's
    GEMM rewriter emits, cuDNN's fused bias) when the result is used only here and ``other``
    exists before the contraction."""
    if ctx.lowerer.scratch:
        return False
    for d, other in ((x, y), (y, x)):
        st = d.contraction
        if st is None or d.t is None or d.producer is None:
            continue
        pos = 0 if d is x else 1
        if not ctx.single_use(pos) or ctx.has_dest(0):
            continue
        if d.shape != ctx.out_avals[0][0] or d.dtype != ctx.out_avals[0][1]:
            continue
        if other.producer is not None and other.producer >= d.producer:
            continue
        if st.accumulate or st.reduce != "sum":
            continue
        kernel = ctx.lowerer.units[d.producer].kernel
        out = d.t
        if st.out.tensor != out.name or st not in kernel.statements:
            continue
        names = [e.single_dim for e in st.out.index]
        if None in names:
            continue
        init = (
            st.parallel_dims,
            (st.out.tensor, st.out.index),
            ctx.operand(other, names, out.dtype),
        )
        ctx.lowerer.builder.statement(*init, kernel=kernel, before=st)
        i = kernel.statements.index(st)
        kernel.statements[i] = replace(st, accumulate=True)
        ctx.lowerer.join(d.producer)
        ctx.bind_out(0, V(d.shape, d.dtype, out, owned=True, producer=d.producer))
        return True
    return False


ConvDims = tuple[Sequence[int], Sequence[int], Sequence[int]]


def conv_specs(dimension_numbers: object, ndim: int) -> ConvDims:
    if dimension_numbers is None:
        spec = tuple(range(ndim))
        return spec, spec, spec
    return (
        tuple(dimension_numbers.lhs_spec),  # type: ignore[attr-defined]
        tuple(dimension_numbers.rhs_spec),  # type: ignore[attr-defined]
        tuple(dimension_numbers.out_spec),  # type: ignore[attr-defined]
    )


@lowering("conv_general_dilated", kind="heavy")
def conv_general_dilated(
    ctx: LoweringContext,
    lhs: V,
    rhs: V,
    *,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count: int = 1,
    batch_group_count: int = 1,
    precision=None,
    preferred_element_type=None,
    **_: object,
) -> None:
    ls, rs, os_ = conv_specs(dimension_numbers, lhs.ndim)
    nsp = lhs.ndim - 2
    lhs_dilation = tuple(lhs_dilation or (1,) * nsp)
    rhs_dilation = tuple(rhs_dilation or (1,) * nsp)
    out = ctx.out()
    G, BG = int(feature_group_count), int(batch_group_count)
    cg = rhs.shape[rs[1]]  # input features per group
    og = rhs.shape[rs[0]] // (G * BG)  # output features per (feature or batch) group
    nb = out.shape[os_[0]]  # output batch
    groups = G if G > 1 else BG
    g = Affine.of("g") if groups > 1 else Affine.of(0)
    # per spatial dim: residue classes (a, b) of output and window positions whose input
    # position is a real (not lhs-dilation hole) element: (a, b, offset, #p, #r)
    classes = []
    for s in range(nsp):
        st, rd, ld = int(window_strides[s]), int(rhs_dilation[s]), int(lhs_dilation[s])
        lo, P, R = int(padding[s][0]), out.shape[os_[2 + s]], rhs.shape[rs[2 + s]]
        opts = []
        for a, b in product(range(ld), range(ld)):
            if (st * a + rd * b - lo) % ld == 0 and a < P and b < R:
                opts.append(
                    (a, b, (st * a + rd * b - lo) // ld, -(-(P - a) // ld), -(-(R - b) // ld))
                )
        classes.append(opts)
    combos = list(product(*classes))
    mode = ctx.policy.conv(lhs.dtype, precision)
    lt, rt = prepare(ctx, lhs, mode), prepare(ctx, rhs, mode)
    single = len(combos) == 1 and all(int(d) == 1 for d in lhs_dilation)
    st = None
    if not single:  # several nests add into each output: start from zero
        dims = dims_of(out.shape)
        ctx.statement(nest(dims, out.shape), out, dims, Const(0))
    for combo in combos:
        par = [("n", nb)] + ([("g", groups)] if groups > 1 else []) + [("o", og)]
        red = [("c", cg)]
        lidx: list = [None] * lhs.ndim
        ridx: list = [None] * rhs.ndim
        oidx: list = [None] * out.ndim
        lidx[ls[0]] = g * nb + "n" if BG > 1 else Affine.of("n")
        lidx[ls[1]] = g * cg + "c" if G > 1 else Affine.of("c")
        ridx[rs[0]] = g * og + "o"
        ridx[rs[1]] = Affine.of("c")
        oidx[os_[0]] = Affine.of("n")
        oidx[os_[1]] = g * og + "o"
        ps, rs_ = [f"p{s}" for s in range(nsp)], [f"r{s}" for s in range(nsp)]
        extents: dict[str, int] = {}
        for s, (a, b, _, np_, nr) in enumerate(combo):
            ld = int(lhs_dilation[s])
            par.append((ps[s], np_))
            red.append((rs_[s], nr))
            extents.update({ps[s]: np_, rs_[s]: nr})
            ridx[rs[2 + s]] = Affine.of(rs_[s]) * ld + b
            oidx[os_[2 + s]] = Affine.of(ps[s]) * ld + a
        # this residue class reads input s·p + d·r − pad, its pad folding the class offset
        spatial, guards = window(
            ps,
            rs_,
            [int(w) for w in window_strides],
            [int(d) for d in rhs_dilation],
            [-const for (_, _, const, _, _) in combo],
            [lhs.shape[ls[2 + s]] for s in range(nsp)],
            extents,
        )
        for s, pos in enumerate(spatial):
            lidx[ls[2 + s]] = pos
        st = ctx.statement(
            [Dim(d, n) for d, n in par] + [Dim(d, n, True) for d, n in red],
            out,
            oidx,
            call("mul", ctx.load(lt, lidx, out.dtype), ctx.load(rt, ridx, out.dtype)),
            reduce="sum",
            accumulate=not single,
            precision=None if mode == "bf16" else mode,
            guards=guards,
        )
    if single and st is not None:  # a bias added afterwards folds into it (cuDNN epilogue)
        ctx.bind_out(0, V(out.shape, out.dtype, out, owned=True, contraction=st))
