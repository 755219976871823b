"""Elementwise primitives: one table row per primitive, one statement per equation.

A row builds the scalar expression from the operands' loads (or constants, for known splats
such as literals). Scalar operators are the rows of :data:`solar.ir.ops.SCALAR_OPS`;
primitives without a row there are compositions (``tan = sin / cos``, ``erfc = 1 - erf``, ...).
jaxprs carry no implicit type promotion: the compute dtype is the output dtype, except for
comparisons (bool out), which compare in the operands' dtype. All of these are *light*: XLA
fuses them into neighbouring kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from solar.frontend.jax.lower import LoweringContext, V
from solar.frontend.jax.registry import lowering
from solar.frontend.lowering.pointwise import pointwise
from solar.ir.dtypes import itemsize
from solar.ir.scalar import Const, Expr, call


@dataclass(frozen=True)
class Row:
    build: Callable[..., Expr]
    compare: bool = False  # bool output: compute in the operands' dtype
    raw: tuple[int, ...] = ()  # operand positions read without a cast (predicates)
    bool_only: bool = False  # logical operators: bool operands only ...
    bitwise: str | None = None  # ... or integers, with this scalar operator


def fn(name: str) -> Callable[..., Expr]:
    return lambda *a: call(name, *a)


def trunc(q: Expr) -> Expr:
    return call("mul", call("sign", q), call("floor", call("abs", q)))


def integer_pow(x: Expr, y: int) -> Expr:
    """``x ** y`` by square-and-multiply, as XLA expands it."""
    if y == 0:
        return Const(1)
    if y < 0:
        return call("reciprocal", integer_pow(x, -y))
    if y == 1:
        return x
    half = integer_pow(x, y // 2)
    sq = call("square", half) if y // 2 >= 1 else half
    return call("mul", sq, x) if y % 2 else sq


def pow_expr(x: Expr, y: Expr) -> Expr:
    """``x ** y``; constant exponents XLA's algebraic simplifier rewrites are rewritten."""
    k = y.value if isinstance(y, Const) else None
    special = {
        0: lambda: Const(1.0),
        1: lambda: x,
        2: lambda: call("square", x),
        -1: lambda: call("reciprocal", x),
        0.5: lambda: call("sqrt", x),
        -0.5: lambda: call("rsqrt", x),
    }
    if k is not None and not isinstance(k, bool) and k in special:
        return special[k]()
    return call("pow", x, y)


def half(e: Expr) -> Expr:
    return call("mul", e, Const(0.5))


ROWS: dict[str, Row] = {
    # unary scalar operators
    **{
        p: Row(fn(op))
        for p, op in {
            "neg": "neg",
            "exp": "exp",
            "exp2": "exp2",
            "log": "log",
            "log1p": "log1p",
            "expm1": "expm1",
            "tanh": "tanh",
            "logistic": "sigmoid",
            "erf": "erf",
            "sqrt": "sqrt",
            "rsqrt": "rsqrt",
            "abs": "abs",
            "sign": "sign",
            "sin": "sin",
            "cos": "cos",
            "floor": "floor",
            "ceil": "ceil",
            "square": "square",
        }.items()
    },
    # compositions
    "tan": Row(lambda x: call("div", call("sin", x), call("cos", x))),
    "erfc": Row(lambda x: call("sub", Const(1.0), call("erf", x))),
    "erf_inv": Row(fn("erfinv")),
    # JAX >= 0.11: the derivative of tanh from its output, 1 - y^2
    "one_minus_square": Row(lambda x: call("sub", Const(1.0), call("square", x))),
    "cbrt": Row(
        lambda x: call("mul", call("sign", x), call("pow", call("abs", x), Const(1.0 / 3.0)))
    ),
    "sinh": Row(lambda x: half(call("sub", call("exp", x), call("exp", call("neg", x))))),
    "cosh": Row(lambda x: half(call("add", call("exp", x), call("exp", call("neg", x))))),
    "asinh": Row(
        lambda x: call(
            "mul",
            call("sign", x),
            call(
                "log",
                call(
                    "add",
                    call("abs", x),
                    call("sqrt", call("add", call("square", x), Const(1.0))),
                ),
            ),
        )
    ),
    "acosh": Row(
        lambda x: call(
            "log", call("add", x, call("sqrt", call("sub", call("square", x), Const(1.0))))
        )
    ),
    "atanh": Row(
        lambda x: half(
            call("log", call("div", call("add", Const(1.0), x), call("sub", Const(1.0), x)))
        )
    ),
    "is_finite": Row(lambda x: call("eq", call("sub", x, x), Const(0)), compare=True),
    "not": Row(fn("logical_not"), compare=True, bool_only=True, bitwise="bitwise_not"),
    # binary
    "add_any": Row(fn("add")),
    "sub": Row(fn("sub")),
    "mul": Row(fn("mul")),
    "div": Row(fn("div")),
    "max": Row(fn("maximum")),
    "atan2": Row(fn("atan2")),
    "min": Row(fn("minimum")),
    "pow": Row(pow_expr),
    "rem": Row(lambda a, b: call("sub", a, call("mul", b, trunc(call("div", a, b))))),
    **{p: Row(fn(p), compare=True) for p in ("eq", "ne", "lt", "le", "gt", "ge")},
    "and": Row(fn("logical_and"), compare=True, bool_only=True, bitwise="bitwise_and"),
    "or": Row(fn("logical_or"), compare=True, bool_only=True, bitwise="bitwise_or"),
    "xor": Row(fn("ne"), compare=True, bool_only=True, bitwise="bitwise_xor"),
    # shifts of integers (JAX's semantics: a shift by the bit width or more gives 0, or the
    # sign for an arithmetic right shift)
    "shift_right_logical": Row(fn("shift_right_logical")),
    "shift_left": Row(fn("shift_left")),
    # ternary
    "clamp": Row(lambda lo, x, hi: call("minimum", call("maximum", x, lo), hi)),
}


def _row_lowering(prim: str, row: Row) -> Callable[..., None]:
    def lower(ctx: LoweringContext, *args: V, **params: object) -> None:
        if row.bool_only and row.bitwise and all(a.dtype != "bool" for a in args):
            pointwise(ctx, fn(row.bitwise), args)
            return
        if row.bool_only and any(a.dtype != "bool" for a in args):
            ctx.fail(
                f"on {args[0].dtype} operands is bitwise, which the IR has no scalar operator "
                "for (add a row to solar.ir.ops.SCALAR_OPS)"
            )
        compute = None
        if row.compare:
            compute = next((a.dtype for a in args if a.dtype != "bool"), args[0].dtype)
        result = "bool" if row.compare else None
        pointwise(ctx, row.build, args, compute=compute, raw=row.raw, result=result)

    lower.__name__ = f"lower_{prim}"
    return lower


for _prim, _row in ROWS.items():
    lowering(_prim)(_row_lowering(_prim, _row))


@lowering("integer_pow")
def lower_integer_pow(ctx: LoweringContext, x: V, *, y: int, **_: object) -> None:
    pointwise(ctx, lambda e: integer_pow(e, int(y)), [x])


@lowering("round")
def lower_round(ctx: LoweringContext, x: V, *, rounding_method: object = 0, **_: object) -> None:
    """Method 1 (TO_NEAREST_EVEN, ``jnp.round``) is the IR's ``round``; method 0
    (AWAY_FROM_ZERO, ``lax.round``'s default) is ``sign(x) * floor(|x| + 0.5)``."""
    if int(getattr(rounding_method, "value", rounding_method)) == 1:
        pointwise(ctx, fn("round"), [x])
    else:
        away = lambda e: call(  # noqa: E731
            "mul", call("sign", e), call("floor", call("add", call("abs", e), Const(0.5)))
        )
        pointwise(ctx, away, [x])


@lowering("select_n")
def lower_select_n(ctx: LoweringContext, pred: V, *cases: V, **_: object) -> None:
    """``cases[pred]``: ``where(pred, c1, c0)`` for a bool predicate, a chain of
    ``where(pred == k, ck, ...)`` for an integer one."""

    def build(p: Expr, *cs: Expr) -> Expr:
        if pred.dtype == "bool":
            return call("where", p, cs[1], cs[0]) if len(cs) > 1 else cs[0]
        e = cs[-1]
        for k in range(len(cs) - 2, -1, -1):
            e = call("where", call("eq", p, Const(k)), cs[k], e)
        return e

    pointwise(ctx, build, [pred, *cases], raw=(0,))


@lowering("convert_element_type")
def lower_convert(ctx: LoweringContext, x: V, *, new_dtype: object, **_: object) -> None:
    """A cast; a conversion to the same dtype (a weak-type change) is the value itself."""
    if ctx.out_avals[0][1] == x.dtype:
        ctx.set_out(0, x)
        return
    pointwise(ctx, lambda e: e, [x])


# (exponent bits, mantissa bits) -> the IR dtype with exactly that format
FORMATS = {(8, 7): "bfloat16", (5, 10): "float16", (8, 23): "float32", (11, 52): "float64"}


@lowering("reduce_precision")
def lower_reduce_precision(
    ctx: LoweringContext, x: V, *, exponent_bits: int, mantissa_bits: int, **_: object
) -> None:
    """Round to a narrower float format and back: a cast pair."""
    fmt = FORMATS.get((int(exponent_bits), int(mantissa_bits)))
    if fmt is None:
        ctx.fail(
            f"to e{exponent_bits}m{mantissa_bits} has no IR dtype of that format "
            f"(supported: {', '.join(f'e{e}m{m}' for e, m in FORMATS)})"
        )
    if fmt == x.dtype:
        ctx.set_out(0, x)
        return
    pointwise(ctx, lambda e: call("cast", call("cast", e, dtype=fmt), dtype=x.dtype), [x])


@lowering(
    "copy",
    "copy_p",
    "device_put",
    "optimization_barrier",
    "stop_gradient",
    "pvary",
    "name",
    "sharding_constraint",
    "layout_constraint",
    "reshard",
    "with_memory_space_constraint",
    "tie",
    kind="view",
)
def lower_identity(ctx: LoweringContext, *xs: V, **_: object) -> None:
    """Identities XLA elides: the outputs are the operands."""
    for i, x in enumerate(xs[: len(ctx.out_avals)]):
        ctx.set_out(i, x)


@lowering("add")
def lower_add(ctx: LoweringContext, x: V, y: V, **_: object) -> None:
    """``x + y``; a dot's result plus a bias folds into the dot (its cuBLAS epilogue)."""
    from solar.frontend.jax.ops.contraction import fold_bias

    if not fold_bias(ctx, x, y):
        pointwise(ctx, fn("add"), [x, y])


@lowering("bitcast_convert_type")
def bitcast_convert_type(ctx: LoweringContext, x: V, *, new_dtype: object) -> None:
    """The same 32 (16, 64) bits read as another dtype of the same width (a free
    reinterpretation inside a fused kernel: no arithmetic)."""
    out = ctx.out()
    if itemsize(out.dtype) != itemsize(x.dtype):
        ctx.fail(f"from {x.dtype} to {out.dtype} changes the element width; same widths only")
    build = lambda e: call("bitcast", e, dtype=out.dtype)  # noqa: E731
    pointwise(ctx, build, [x], compute=x.dtype, result=out.dtype)
