"""Upsampling (``F.interpolate``, ``nn.Upsample``): ONE kernel per operator, as eager launches it.

Every mode is separable: output ``[n, c, p₁, .., p_d]`` is
``Σ_k₁ w₁[p₁,k₁] (.. Σ_k_d w_d[p_d,k_d] · X[n, c, src₁[p₁,k₁], .., src_d[p_d,k_d]])``, with
per dim the taps of :mod:`solar.frontend.torch.ops.resample` (PyTorch's own float32 index
arithmetic): one tap of weight 1 for ``nearest``/``nearest-exact``, two (``1−λ``, ``λ``) for
``linear``/``bilinear``/``trilinear``, four cubic-convolution taps for ``bicubic``. Each
dim's outputs are split into classes over which the taps are affine, and each combination of
classes is one statement of the kernel. The weights are expressions of the output position
alone (the hoisting rule counts them once per position). ``area`` reaches
``_adaptive_avg_pool*`` (``ops/pool.py``).

Backward (what autograd launches): ``grad_input = 0``, then for every class combination and
tap, ``grad_input[src(j)] += w(p) · grad_output[p]`` (class dims whose source index does not
move are reduced). Antialiasing (``antialias=True``: ``_upsample_bilinear2d_aa``,
``_upsample_bicubic2d_aa``) averages a window around each output, normalized weights in a
kernel-local table. Half-precision inputs interpolate in float32, as PyTorch does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from math import prod

import torch

from solar.algebra.size import integer
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype, nest
from solar.frontend.torch.ops.resample import (
    DimRule,
    OutputClass,
    affine_classes,
    antialias_rule,
    cubic_rule,
    linear_rule,
    nearest_rule,
)
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.program import Dim
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten

#: Most statements (combinations of per-dim output classes) one upsampling may need, more is
#: refused: DeepLabV3-MobileNet's 33 -> 520 bilinear head needs 33 x 33 (about 5 s to analyse).
MAX_COMBINATIONS = 4096

SPATIAL = ("d", "h", "w")


def _rules(
    mode: str, sizes: Sequence[int], outs: Sequence[int], align: bool, scales: Sequence
) -> list[DimRule]:
    rules = []
    for n, o, s in zip(sizes, outs, scales, strict=True):
        if mode in ("nearest", "nearest_exact"):
            rules.append(nearest_rule(n, o, s, exact=mode == "nearest_exact"))
        elif mode == "linear":
            rules.append(linear_rule(n, o, align, s))
        elif mode in ("linear_aa", "cubic_aa"):
            rules.append(antialias_rule(n, o, align, s, cubic=mode == "cubic_aa"))
        else:
            rules.append(cubic_rule(n, o, align, s))
    return rules


def _combinations(ctx: LoweringContext, rules: list[DimRule]) -> list[tuple[OutputClass, ...]]:
    per_dim = [affine_classes(r.keys) for r in rules]
    n = prod(len(c) for c in per_dim)
    if n > MAX_COMBINATIONS:
        ctx.fail(
            f"maps output sizes {tuple(len(r.keys) for r in rules)} to source positions in "
            f"{n} affine classes, more than the {MAX_COMBINATIONS} supported (an integer or "
            f"simple rational scale factor needs few)"
        )
    return list(itertools.product(*per_dim))


def _tabulate(ctx: LoweringContext, rules: list[DimRule], acc: str) -> list[DimRule]:
    """Antialias weights (each a filter value over the window's normalizing sum: long
    expressions) are computed once per output position and tap into a kernel-local table,
    which the interpolation loads; taps past a class's window (its span constant) are
    skipped, as the CUDA kernel's loop over the window skips them."""
    tabulated = []
    for d, rule in enumerate(rules):
        if rule.lead != 2 or rule.weights is None:
            tabulated.append(rule)
            continue
        table = ctx.local(f"weights{d}", (len(rule.keys), rule.taps), acc)
        for cls in affine_classes(rule.keys):
            for k, w in enumerate(
                rule.weights(cls.position("j"), [cls.key(0, "j"), cls.key(1, "j")])
            ):
                if w != Const(0.0):
                    ctx.statement([("j", cls.count)], table, [cls.position("j"), k], w, dtype=acc)

        def weights(p: Affine, lead: list[Affine], table=table, taps=rule.taps) -> list[Expr]:
            span = lead[1]
            return [
                Const(0.0) if span.is_const and k >= span.const else ctx.load(table, [p, k])
                for k in range(taps)
            ]

        tabulated.append(replace(rule, weights=weights))
    return tabulated


def _names(nsp: int) -> list[str]:
    return list(SPATIAL[3 - nsp :])


def _lead(x: T, nsp: int) -> list[tuple[str, int]]:
    return [(f"b{k}", integer(e)) for k, e in enumerate(x.shape[: x.ndim - nsp])]


def _interpolate(
    ctx: LoweringContext,
    x: T,
    lead: list[str],
    rules: list[DimRule],
    combo: tuple[OutputClass, ...],
    js: list[str],
    acc: str,
    d: int = 0,
    prefix: tuple[Affine, ...] = (),
) -> Expr:
    """``Σ_k w_d[k] · (interpolation over the later dims at tap k)`` (outer dim first, as
    ATen nests it); a plain load past the last dim."""
    if d == len(rules):
        return ctx.load(x, [*lead, *prefix], acc)
    rule, cls, j = rules[d], combo[d], js[d]
    taps = [cls.key(rule.lead + k, j) for k in range(rule.taps)]
    if rule.weights is None:
        return _interpolate(ctx, x, lead, rules, combo, js, acc, d + 1, (*prefix, taps[0]))
    weights = _weights(rule, cls, j)
    total: Expr | None = None
    for src, w in zip(taps, weights, strict=True):
        if w == Const(0.0):  # a tap past this class's window
            continue
        inner = _interpolate(ctx, x, lead, rules, combo, js, acc, d + 1, (*prefix, src))
        term = call("mul", inner, w)
        total = term if total is None else call("add", total, term)
    # an empty window (antialiasing with a scale given that lies past the input): PyTorch's
    # sum over no taps, 0
    return Const(0.0) if total is None else total


def _weights(rule: DimRule, cls: OutputClass, j: str) -> list[Expr]:
    lead = [cls.key(k, j) for k in range(rule.lead)]
    return rule.weights(cls.position(j), lead[0] if rule.lead == 1 else lead)


def upsample_forward(ctx: LoweringContext, x: T, mode: str, align: bool, scales: Sequence) -> None:
    out = ctx.out()
    nsp = len(scales)
    sizes, outs = x.shape[-nsp:], out.shape[-nsp:]
    rules = _rules(mode, sizes, outs, align, scales)
    acc = acc_dtype(out.dtype)
    rules = _tabulate(ctx, rules, acc)
    lead = _lead(x, nsp)
    lead_names = [n for n, _ in lead]
    js = [f"j{n}" for n in _names(nsp)]
    for combo in _combinations(ctx, rules):
        dims = [*lead, *((j, c.count) for j, c in zip(js, combo, strict=True))]
        index = [*lead_names, *(c.position(j) for c, j in zip(combo, js, strict=True))]
        value = _interpolate(ctx, x, lead_names, rules, combo, js, acc)
        ctx.statement(dims, out, index, cast(value, acc, out.dtype), dtype=acc)


def upsample_backward(ctx: LoweringContext, g: T, mode: str, align: bool, scales: Sequence) -> None:
    out = ctx.out()  # grad_input
    nsp = len(scales)
    sizes, outs = out.shape[-nsp:], g.shape[-nsp:]
    rules = _rules(mode, sizes, outs, align, scales)
    acc = acc_dtype(out.dtype)
    target = out if acc == out.dtype else ctx.local("acc", out.shape, acc)
    all_dims = [f"i{k}" for k in range(out.ndim)]
    ctx.statement(nest(all_dims, out.shape), target, all_dims, Const(0.0))
    rules = _tabulate(ctx, rules, acc)
    lead = _lead(g, nsp)
    lead_names = [n for n, _ in lead]
    js = [f"j{n}" for n in _names(nsp)]
    for combo in _combinations(ctx, rules):
        positions = [c.position(j) for c, j in zip(combo, js, strict=True)]
        grad = ctx.load(g, [*lead_names, *positions], acc)
        weights = [
            [Const(1.0)] if r.weights is None else _weights(r, c, j)
            for r, c, j in zip(rules, combo, js, strict=True)
        ]
        for taps in itertools.product(*(range(r.taps) for r in rules)):
            if any(w[k] == Const(0.0) for w, k in zip(weights, taps, strict=True)):
                continue
            src = [c.key(r.lead + k, j) for r, c, k, j in zip(rules, combo, taps, js, strict=True)]
            value = grad
            for w_dim, k in zip(weights, taps, strict=True):
                if w_dim[k] != Const(1.0):
                    value = call("mul", value, w_dim[k])
            dims = [Dim(n, e) for n, e in lead]
            for c, j, s in zip(combo, js, src, strict=True):
                dims.append(Dim(j, c.count, reduction=s.coef(j) == 0 and c.count > 1))
            ctx.statement(
                dims, target, [*lead_names, *src], value, reduce="sum", accumulate=True, dtype=acc
            )
    if target is not out:
        load = ctx.load(target, all_dims)
        ctx.statement(nest(all_dims, out.shape), out, all_dims, cast(load, acc, out.dtype))


# ------------------------------------------------------------------------------ registration

FORWARD = {  # operator -> (mode, spatial dims, whether it takes align_corners)
    aten.upsample_nearest1d.default: ("nearest", 1, False),
    aten.upsample_nearest2d.default: ("nearest", 2, False),
    aten.upsample_nearest3d.default: ("nearest", 3, False),
    aten._upsample_nearest_exact1d.default: ("nearest_exact", 1, False),
    aten._upsample_nearest_exact2d.default: ("nearest_exact", 2, False),
    aten._upsample_nearest_exact3d.default: ("nearest_exact", 3, False),
    aten.upsample_linear1d.default: ("linear", 1, True),
    aten.upsample_bilinear2d.default: ("linear", 2, True),
    aten.upsample_trilinear3d.default: ("linear", 3, True),
    aten.upsample_bicubic2d.default: ("cubic", 2, True),
    aten._upsample_bilinear2d_aa.default: ("linear_aa", 2, True),
    aten._upsample_bicubic2d_aa.default: ("cubic_aa", 2, True),
}

BACKWARD = {
    aten.upsample_nearest1d_backward.default: ("nearest", 1, False),
    aten.upsample_nearest2d_backward.default: ("nearest", 2, False),
    aten.upsample_nearest3d_backward.default: ("nearest", 3, False),
    aten._upsample_nearest_exact1d_backward.default: ("nearest_exact", 1, False),
    aten._upsample_nearest_exact2d_backward.default: ("nearest_exact", 2, False),
    aten._upsample_nearest_exact3d_backward.default: ("nearest_exact", 3, False),
    aten.upsample_linear1d_backward.default: ("linear", 1, True),
    aten.upsample_bilinear2d_backward.default: ("linear", 2, True),
    aten.upsample_trilinear3d_backward.default: ("linear", 3, True),
    aten.upsample_bicubic2d_backward.default: ("cubic", 2, True),
    aten._upsample_bilinear2d_aa_backward.default: ("linear_aa", 2, True),
    aten._upsample_bicubic2d_aa_backward.default: ("cubic_aa", 2, True),
}


def _scales(nsp: int, given: Sequence) -> list[float | None]:
    given = list(given)
    return [*([None] * (nsp - len(given))), *given][-nsp:]


@lowering(*FORWARD)
def upsample(ctx: LoweringContext, x: T, output_size, *rest) -> None:
    mode, nsp, has_align = FORWARD[ctx.op]
    align = bool(rest[0]) if has_align else False
    upsample_forward(ctx, x, mode, align, _scales(nsp, rest[1:] if has_align else rest))


@lowering(*BACKWARD)
def upsample_grad(ctx: LoweringContext, g: T, output_size, input_size, *rest) -> None:
    mode, nsp, has_align = BACKWARD[ctx.op]
    align = bool(rest[0]) if has_align else False
    upsample_backward(ctx, g, mode, align, _scales(nsp, rest[1:] if has_align else rest))


VEC = {  # the ``.vec`` overloads (output size or scale factors as lists) -> the ``.default``
    aten.upsample_nearest1d.vec: aten.upsample_nearest1d.default,
    aten.upsample_nearest2d.vec: aten.upsample_nearest2d.default,
    aten.upsample_nearest3d.vec: aten.upsample_nearest3d.default,
    aten._upsample_nearest_exact1d.vec: aten._upsample_nearest_exact1d.default,
    aten._upsample_nearest_exact2d.vec: aten._upsample_nearest_exact2d.default,
    aten._upsample_nearest_exact3d.vec: aten._upsample_nearest_exact3d.default,
    aten.upsample_linear1d.vec: aten.upsample_linear1d.default,
    aten.upsample_bilinear2d.vec: aten.upsample_bilinear2d.default,
    aten.upsample_trilinear3d.vec: aten.upsample_trilinear3d.default,
    aten.upsample_bicubic2d.vec: aten.upsample_bicubic2d.default,
}


@lowering(*VEC)
def upsample_vec(ctx: LoweringContext, x: T, output_size, *rest) -> None:
    mode, nsp, has_align = FORWARD[VEC[ctx.op]]
    align = bool(rest[0]) if has_align else False
    factors = rest[1] if has_align else rest[0]
    upsample_forward(ctx, x, mode, align, list(factors) if factors else [None] * nsp)
