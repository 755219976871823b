"""Scalar expression builders of the lowering library, for both frontends: a cast between
dtypes and a scale by a constant, each with no node where it would change nothing."""

from __future__ import annotations

from solar.ir.scalar import Const, Expr, call


def cast(e: Expr, have: str, want: str | None) -> Expr:
    """``e`` converted from ``have`` to ``want`` (no node when they agree)."""
    return e if want is None or want == have else call("cast", e, dtype=want)


def scale(e: Expr, k: float | int | bool | None) -> Expr:
    """``k * e``, without a multiply when ``k`` is 1."""
    return e if k is None or k == 1 else call("mul", e, Const(k))
