"""Where each output of an upsampling operator reads, per spatial dim, as PyTorch computes it.

PyTorch maps output position ``p`` of a dim to source positions with float32 arithmetic
(``area_pixel_compute_source_index`` and friends in ATen's ``UpSample.h``); this module
repeats that arithmetic in numpy float32, so the integer source indices are PyTorch's to the
last rounding, and builds the same arithmetic as IR expressions for the interpolation weights
(evaluated per output position, hoisted: a weight depends on ``p`` alone).

The source indices of one dim are not affine in ``p`` (``floor(p·in/out)``), so the outputs
are split into classes ``p = first + step·j`` over which every tap's index is affine in ``j``
(:func:`affine_classes`): for a scale factor ``s = a/b`` the residue classes modulo ``a``,
with the clamped edges as classes of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from solar.frontend.lowering.exprs import cast
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, call

f32 = np.float32

#: Longest period tried when splitting a dim's outputs into affine classes.
MAX_PERIOD = 64


def scales_value(scale: float | None, size: int, out: int) -> np.float32:
    """``compute_scales_value<float>``: ``1/scale`` when the caller gave a scale factor, else
    ``in/out``."""
    if scale is not None and scale > 0:
        return f32(1.0 / scale)
    return f32(size) / f32(out)


def area_scale(size: int, out: int, align_corners: bool, scale: float | None) -> np.float32:
    """``area_pixel_compute_scale``: the source step per output position."""
    if align_corners:
        return f32(size - 1) / f32(out - 1) if out > 1 else f32(0)
    return scales_value(scale, size, out)


@dataclass(frozen=True)
class DimRule:
    """One spatial dim of an upsampling: per output position the key (source indices: the
    base index first, then one per tap) and how to build the tap weights as IR expressions
    of ``p`` (an affine index) and the ``lead`` key entries (None: nearest, one tap of
    weight 1)."""

    keys: list[tuple[int, ...]]
    weights: Callable[..., list[Expr]] | None
    lead: int = 1  # key entries before the taps (the base index; antialias: and the span)

    @property
    def taps(self) -> int:
        return len(self.keys[0]) - self.lead


def _float(a: Affine) -> Expr:
    return cast(Index(a), "int64", "float32")


def nearest_rule(size: int, out: int, scale: float | None, exact: bool) -> DimRule:
    """``nearest``: ``min(floor(p·s), in−1)``; ``nearest-exact``: ``min(floor((p+½)·s), in−1)``
    (the product in double, rounded to float, as ``floorf`` of a double argument does). As
    CUDA computes it: the CPU 2-D kernel's shortcut ``p >> 1`` for ``out = 2·in`` differs
    when a scale factor other than 2 gives that size."""
    s = scales_value(scale, size, out)
    p = np.arange(out)
    # CUDA's arithmetic (ATen's CPU 2-D kernel takes p >> 1 when out = 2·in)
    src = np.floor(f32(np.float64(s) * (p + 0.5))) if exact else np.floor(p.astype(f32) * s)
    src = np.minimum(src.astype(np.int64), size - 1)
    return DimRule([(int(i), int(i)) for i in src], None)


def _source_real(s: np.float32, out: int, align_corners: bool, cubic: bool) -> np.ndarray:
    p = np.arange(out).astype(f32)
    if align_corners:
        return s * p
    real = s * (p + f32(0.5)) - f32(0.5)
    return real if cubic else np.maximum(real, f32(0))


def _source_expr(s: np.float32, p: Affine, align_corners: bool, clamp: bool) -> Expr:
    """The IR of :func:`_source_real` for one output position ``p``."""
    if align_corners:
        return call("mul", Const(float(s)), _float(p))
    real = call("sub", call("mul", Const(float(s)), call("add", _float(p), Const(0.5))), Const(0.5))
    return call("maximum", real, Const(0.0)) if clamp else real


def _guarded(real: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``guard_index_and_lambda``: base ``min(floor(real), in−1)`` and the raw fraction."""
    base = np.minimum(np.floor(real).astype(np.int64), size - 1)
    return base, real - base.astype(f32)


def _lambda(
    s: np.float32, align: bool, cubic: bool, clamp_src: bool, frac: np.ndarray
) -> Callable[[Affine, Affine], Expr]:
    clamp = bool((frac < 0).any() or (frac > 1).any())

    def lam(p: Affine, base: Affine) -> Expr:
        e: Expr = call("sub", _source_expr(s, p, align, clamp_src), _float(base))
        if clamp:
            e = call("minimum", call("maximum", e, Const(0.0)), Const(1.0))
        return e

    return lam


def linear_rule(size: int, out: int, align_corners: bool, scale: float | None) -> DimRule:
    """``linear``: taps ``i0`` and ``i0 + (i0 < in−1)``, weights ``1−λ`` and ``λ``."""
    s = area_scale(size, out, align_corners, scale)
    real = _source_real(s, out, align_corners, cubic=False)
    raw = s * (np.arange(out).astype(f32) + f32(0.5)) - f32(0.5)
    clamp_src = not align_corners and bool((raw < 0).any())
    base, frac = _guarded(real, size)
    lam = _lambda(s, align_corners, False, clamp_src, frac)
    keys = [(int(b), int(b), int(b) + (1 if b < size - 1 else 0)) for b in base]

    def weights(p: Affine, b: Affine) -> list[Expr]:
        t = lam(p, b)
        return [call("sub", Const(1.0), t), t]

    return DimRule(keys, weights)


CUBIC_A = -0.75


def _conv1(x: Expr) -> Expr:
    """``((A+2)·x − (A+3))·x·x + 1``."""
    a = CUBIC_A
    inner = call("sub", call("mul", Const(a + 2), x), Const(a + 3))
    return call("add", call("mul", call("mul", inner, x), x), Const(1.0))


def _conv2(x: Expr) -> Expr:
    """``((A·x − 5A)·x + 8A)·x − 4A``."""
    a = CUBIC_A
    e = call("sub", call("mul", Const(a), x), Const(5 * a))
    e = call("add", call("mul", e, x), Const(8 * a))
    return call("sub", call("mul", e, x), Const(4 * a))


def cubic_rule(size: int, out: int, align_corners: bool, scale: float | None) -> DimRule:
    """``bicubic`` (A = −0.75): taps ``clamp(i0 − 1 + k, 0, in−1)`` for k < 4."""
    s = area_scale(size, out, align_corners, scale)
    real = _source_real(s, out, align_corners, cubic=True)
    base, frac = _guarded(real, size)
    lam = _lambda(s, align_corners, True, False, frac)
    keys = [(int(b), *(int(min(max(b - 1 + k, 0), size - 1)) for k in range(4))) for b in base]

    def weights(p: Affine, b: Affine) -> list[Expr]:
        t = lam(p, b)
        x2 = call("sub", Const(1.0), t)
        return [
            _conv2(call("add", t, Const(1.0))),
            _conv1(t),
            _conv1(x2),
            _conv2(call("add", x2, Const(1.0))),
        ]

    return DimRule(keys, weights)


@dataclass(frozen=True)
class OutputClass:
    """Outputs ``first + step·j`` (``j < count``) whose key element ``k`` is
    ``base[k] + slope[k]·j``."""

    first: int
    step: int
    count: int
    base: tuple[int, ...]
    slope: tuple[int, ...]

    def position(self, j: str) -> Affine:
        return Affine.of(self.first) + Affine.of(j) * self.step

    def key(self, k: int, j: str) -> Affine:
        return Affine.of(self.base[k]) + Affine.of(j) * self.slope[k]


def _runs(keys: Sequence[tuple[int, ...]], positions: list[int], step: int) -> list[OutputClass]:
    runs: list[OutputClass] = []
    for pos in positions:
        key = keys[pos]
        if runs:
            last = runs[-1]
            end = tuple(b + s * (last.count - 1) for b, s in zip(last.base, last.slope))
            diff = tuple(a - b for a, b in zip(key, end))
            if last.first + step * last.count == pos and (last.count == 1 or diff == last.slope):
                runs[-1] = OutputClass(last.first, step, last.count + 1, last.base, diff)
                continue
        runs.append(OutputClass(pos, step, 1, key, (0,) * len(key)))
    return runs


def affine_classes(keys: Sequence[tuple[int, ...]]) -> list[OutputClass]:
    """The fewest classes found, over periods up to :data:`MAX_PERIOD`, of maximal runs of
    outputs (per residue modulo the period) over which every key element is affine."""
    best: list[OutputClass] | None = None
    for period in range(1, min(len(keys), MAX_PERIOD) + 1):
        if best is not None and len(best) <= period:
            break  # a period P needs at least P classes
        classes = [
            c for v in range(period) for c in _runs(keys, list(range(v, len(keys), period)), period)
        ]
        if best is None or len(classes) < len(best):
            best = classes
    return best or []


def _aa_filter(x: Expr, cubic: bool) -> Expr:
    """ATen's antialias filters of ``|x|``: the triangle ``1 − x`` on ``[0, 1)``, or Keys'
    cubic with ``a = −0.5`` on ``[0, 2)``; 0 beyond."""
    x = call("abs", x)
    if not cubic:
        return call("where", call("lt", x, Const(1.0)), call("sub", Const(1.0), x), Const(0.0))
    a = -0.5
    near = call(
        "add",
        call("mul", call("mul", call("sub", call("mul", Const(a + 2), x), Const(a + 3)), x), x),
        Const(1.0),
    )
    mid = call(
        "mul",
        call(
            "sub",
            call("mul", call("add", call("mul", call("sub", x, Const(5.0)), x), Const(8.0)), x),
            Const(4.0),
        ),
        Const(a),
    )
    return call(
        "where",
        call("lt", x, Const(1.0)),
        near,
        call("where", call("lt", x, Const(2.0)), mid, Const(0.0)),
    )


def antialias_rule(
    size: int, out: int, align_corners: bool, scale: float | None, cubic: bool
) -> DimRule:
    """``antialias=True``: output ``p`` averages the inputs ``[xmin, xmin + xsize)`` around
    ``center = s·(p + ½)`` with the filter stretched by ``s`` when downsampling, the weights
    normalized to sum 1 (ATen's ``_compute_weights_aa``). Key: ``(xmin, xsize, taps...)``."""
    s = area_scale(size, out, align_corners, scale)
    interp = 4 if cubic else 2
    support = f32(interp * 0.5) * s if s >= 1.0 else f32(interp * 0.5)
    invscale = f32(1.0) / s if s >= 1.0 else f32(1.0)
    center = s * (np.arange(out).astype(f32) + f32(0.5))
    xmin = np.maximum(np.trunc(center - support + f32(0.5)).astype(np.int64), 0)
    xsize = np.minimum(np.trunc(center + support + f32(0.5)).astype(np.int64), size) - xmin
    taps = int(xsize.max())
    keys = [
        (int(m), int(n), *(min(int(m) + k, size - 1) for k in range(taps)))
        for m, n in zip(xmin, xsize, strict=True)
    ]

    def weights(p: Affine, lead: list[Affine]) -> list[Expr]:
        start, span = lead
        mid = call("mul", Const(float(s)), call("add", _float(p), Const(0.5)))
        raw: list[Expr] = []
        for k in range(taps):
            arg = call("add", call("sub", _float(start + k), mid), Const(0.5))
            w = _aa_filter(
                call("mul", arg, Const(float(invscale))) if invscale != 1 else arg, cubic
            )
            if span.is_const:
                w = w if k < span.const else Const(0.0)
            else:
                w = call("where", call("lt", Const(k), Index(span)), w, Const(0.0))
            raw.append(w)
        total = raw[0]
        for w in raw[1:]:
            if w != Const(0.0):
                total = call("add", total, w)
        return [w if w == Const(0.0) else call("div", w, total) for w in raw]

    return DimRule(keys, weights, lead=2)
