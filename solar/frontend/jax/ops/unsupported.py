"""Primitives with no loop-nest form yet, each with the reason (instead of the generic
"no loop-nest definition" error). Replace a row by a real lowering when the IR can say it."""

from __future__ import annotations

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering

REASONS = {
    "approx_top_k": "is an approximate partial sort, which has no extern routine in the IR",
}


def _fail(ctx: LoweringContext, *args: V, **params: object) -> None:
    how = f'register a rule with @solar.frontend.jax.lowering("{ctx.prim}")'
    ctx.fail(f"{REASONS[ctx.prim]}; or {how}")


lowering(*REASONS, kind="heavy")(_fail)
