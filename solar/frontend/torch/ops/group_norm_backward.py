"""``native_group_norm_backward``: ONE kernel, as ATen's CUDA group-norm backward computes it.

With ``D = C / G`` channels per group, ``S`` spatial positions, ``s = 1 / (D·S)``, the saved
``mean`` and ``rstd`` per (sample, group)::

    ds[n,c] = Σ_S dy·x          db[n,c] = Σ_S dy                       per channel
    dsg[n,g] = Σ_d ds·γ         dbg[n,g] = Σ_d db·γ                    per group (γ = 1 if none)
    c2 = (dbg·mean − dsg)·rstd³·s      c3 = −c2·mean − dbg·rstd·s
    dx[n,c,S] = γ[c]·rstd·dy + c2·x + c3
    dγ[c] = Σ_n (ds − db·mean)·rstd      dβ[c] = Σ_n db

The per-channel and per-group sums stay on chip (kernel-local); half-precision inputs sum in
float32. Outputs masked off by ``output_mask`` are not computed.
"""

from __future__ import annotations

import torch

from solar.algebra.size import integer
from solar.frontend.torch.lower import LoweringContext, T, cast
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten


@lowering(aten.native_group_norm_backward.default)
def group_norm_backward(
    ctx: LoweringContext, dy: T, x: T, mean: T, rstd: T, weight, n_, c_, hxw, group: int, mask
) -> None:
    outs = ctx.outs()
    dx, dw, db_out = (outs + [None, None, None])[:3]
    acc = acc_dtype(x.dtype)
    n, c = x.shape[0], x.shape[1]
    g = integer(group)
    d = c // g
    sp = [f"s{k}" for k in range(x.ndim - 2)]
    spatial = [(s, e, True) for s, e in zip(sp, x.shape[2:], strict=True)]
    ch = Affine.of("g") * d + Affine.of("d")
    full = ["n", ch, *sp]
    count = d * (integer(hxw) if hxw else 1)
    scale = 1.0 / count

    def load(t: T, index) -> Expr:
        return ctx.load(t, index, acc)

    gamma = (lambda: load(weight, [ch])) if isinstance(weight, T) else (lambda: Const(1.0))
    per_ch = [("n", n), ("g", g), ("d", d)]
    ds, db = ctx.local("ds", (n, c), acc), ctx.local("db", (n, c), acc)
    ctx.statement(
        [*per_ch, *spatial], ds, ["n", ch], call("mul", load(dy, full), load(x, full)), reduce="sum"
    )
    ctx.statement([*per_ch, *spatial], db, ["n", ch], load(dy, full), reduce="sum")
    stat = ["n", "g"]
    if dx is not None:
        dsg, dbg = ctx.local("dsg", (n, g), acc), ctx.local("dbg", (n, g), acc)
        red = [("n", n), ("g", g), ("d", d, True)]
        ctx.statement(red, dsg, stat, call("mul", load(ds, ["n", ch]), gamma()), reduce="sum")
        ctx.statement(red, dbg, stat, call("mul", load(db, ["n", ch]), gamma()), reduce="sum")
        c2, c3 = ctx.local("c2", (n, g), acc), ctx.local("c3", (n, g), acc)
        r = load(rstd, stat)
        r3 = call("mul", call("mul", r, r), r)
        diff = call("sub", call("mul", load(dbg, stat), load(mean, stat)), load(dsg, stat))
        ctx.statement(
            [("n", n), ("g", g)], c2, stat, call("mul", call("mul", diff, r3), Const(scale))
        )
        c3e = call(
            "sub",
            call("neg", call("mul", load(c2, stat), load(mean, stat))),
            call("mul", call("mul", load(dbg, stat), r), Const(scale)),
        )
        ctx.statement([("n", n), ("g", g)], c3, stat, c3e)
        grad = call(
            "add",
            call(
                "add",
                call("mul", call("mul", gamma(), r), load(dy, full)),
                call("mul", load(c2, stat), load(x, full)),
            ),
            load(c3, stat),
        )
        dims = [*per_ch, *((s, e) for s, e, _ in spatial)]
        ctx.statement(dims, dx, full, cast(grad, acc, dx.dtype), dtype=acc)
    by_channel = [("g", g), ("d", d), ("n", n, True)]
    if dw is not None:
        centered = call(
            "sub", load(ds, ["n", ch]), call("mul", load(db, ["n", ch]), load(mean, stat))
        )
        value = call("mul", centered, load(rstd, stat))
        ctx.statement(by_channel, dw, [ch], value, reduce="sum", dtype=acc)
    if db_out is not None:
        ctx.statement(by_channel, db_out, [ch], load(db, ["n", ch]), reduce="sum", dtype=acc)
