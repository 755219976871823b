"""Oracle cases for every registered JAX primitive rule: one :class:`Case` per primitive name.

A case draws sizes and parameters with hypothesis (``build(draw) -> (fn, inputs)``); its
jaxpr must contain the primitive (checked by walking ``jax.make_jaxpr`` and its sub-jaxprs).
Primitives that only JAX internals emit are bound directly (``tie_p.bind``), as JAX would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.extend.random
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from jax import lax

from solar.frontend.jax import UnsupportedPrimitiveError

Draw = Callable[[st.SearchStrategy], object]
Build = Callable[[Draw], tuple[Callable, tuple]]


@dataclass(frozen=True)
class Case:
    op: str  # the primitive name
    build: Build
    examples: int = 5
    scan: str = "auto"  # trace_jax's scan mode
    error: type[Exception] | None = None  # the rule refuses the primitive with this error
    match: str = ""  # what that error names (default: the primitive)


CASES: list[Case] = []


def case(op: str, examples: int = 5, **kw: object) -> Callable[[Build], Build]:
    def register(build: Build) -> Build:
        CASES.append(Case(op, build, examples, **kw))  # type: ignore[arg-type]
        return build

    return register


_RNG = np.random.default_rng(0)


def shape(draw: Draw, lo: int = 1, hi: int = 3, side: int = 4) -> tuple[int, ...]:
    return tuple(draw(st.integers(1, side)) for _ in range(draw(st.integers(lo, hi))))


def rand(shp, dtype=jnp.float32):
    if dtype == jnp.bool_:
        return jnp.asarray(_RNG.random(shp) > 0.5)
    if jnp.issubdtype(dtype, jnp.integer):
        return jnp.asarray(_RNG.integers(-4, 5, shp), dtype=dtype)
    return jnp.asarray(_RNG.random(shp) + 0.1, dtype=jnp.float32).astype(dtype)


def ints(n: int, shp) -> jax.Array:
    return jnp.asarray(_RNG.integers(0, n, shp), dtype=jnp.int32)


def partner(draw: Draw, shp: tuple[int, ...]) -> tuple[int, ...]:
    """A shape broadcasting against ``shp`` (numpy rules)."""
    out = list(shp[draw(st.integers(0, len(shp))) :])
    return tuple(1 if draw(st.booleans()) else n for n in out)


def viewed(draw: Draw, x):
    """``x`` through a view: transposed, strided slice, reversed (negative stride) or
    broadcast (zero stride); as is otherwise."""
    kind = draw(st.sampled_from(["plain", "transpose", "step", "rev", "broadcast"]))
    if kind == "transpose" and x.ndim >= 2:
        return lambda y: jnp.swapaxes(y, -1, -2)
    if kind == "step":
        return lambda y: y[..., ::2]
    if kind == "rev":
        return lambda y: y[..., ::-1]
    if kind == "broadcast":
        return lambda y: jnp.broadcast_to(y[None], (2, *y.shape))
    return lambda y: y


def unary(op: str, fn: Callable, dtype=jnp.float32, **kw) -> None:
    def build(draw: Draw):
        x = rand(shape(draw), dtype)
        view = viewed(draw, x)
        return (lambda x: fn(view(x))), (x,)

    case(op, **kw)(build)


def binary(op: str, fn: Callable, dtype=jnp.float32) -> None:
    def build(draw: Draw):
        x = rand(shape(draw), dtype)
        view = viewed(draw, x)
        y = rand(partner(draw, jax.eval_shape(view, x).shape), dtype)
        return (lambda x, y: fn(view(x), y)), (x, y)

    case(op)(build)


# ------------------------------------------------------------------------ elementwise
for _n, _f in {
    "abs": jnp.abs, "acosh": lambda x: jnp.arccosh(x + 1.0), "asinh": jnp.arcsinh,
    "atanh": lambda x: jnp.arctanh(x * 0.5), "cbrt": jnp.cbrt, "ceil": jnp.ceil, "cos": jnp.cos,
    "cosh": jnp.cosh, "erf": lax.erf, "erfc": lax.erfc, "exp": jnp.exp, "exp2": jnp.exp2,
    "expm1": jnp.expm1, "floor": jnp.floor, "is_finite": jnp.isfinite, "log": jnp.log,
    "log1p": jnp.log1p, "logistic": jax.nn.sigmoid, "neg": jnp.negative, "rsqrt": lax.rsqrt,
    "sign": jnp.sign, "sin": jnp.sin, "sinh": jnp.sinh, "sqrt": jnp.sqrt, "square": jnp.square,
    "tan": jnp.tan, "tanh": jnp.tanh, "stop_gradient": lax.stop_gradient,
    "reduce_precision": lambda x: lax.reduce_precision(x, 8, 7),
    "copy": jnp.copy, "optimization_barrier": lax.optimization_barrier,
    "device_put": lambda x: jax.device_put(x) * 2,
}.items():  # fmt: skip
    unary(_n, _f)
unary("not", lambda x: ~x, dtype=jnp.bool_)
unary("round", lambda x: lax.round(x * 3, lax.RoundingMethod.TO_NEAREST_EVEN))
unary("integer_pow", lambda x: x**3)
unary("convert_element_type", lambda x: x.astype(jnp.bfloat16))
unary("clamp", lambda x: lax.clamp(0.3, x, 0.7))

for _n, _f in {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide,
    "max": jnp.maximum, "min": jnp.minimum, "pow": jnp.power, "rem": jnp.fmod,
    "eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
    "gt": jnp.greater, "ge": jnp.greater_equal,
}.items():  # fmt: skip
    binary(_n, _f)
for _n, _f in {"and": jnp.logical_and, "or": jnp.logical_or, "xor": jnp.logical_xor}.items():
    binary(_n, _f, dtype=jnp.bool_)


@case("select_n")
def _select(draw):
    shp = shape(draw)
    return (lambda c, x, y: jnp.where(c, x, y)), (
        rand(partner(draw, shp), jnp.bool_),
        rand(shp),
        rand(partner(draw, shp)),
    )


@case("add_any")
def _add_any(draw):
    return (lambda x: jax.grad(lambda y: jnp.sum(y * y + jnp.sin(y)))(x)), (rand(shape(draw)),)


# ------------------------------------------------------------------------- reductions

for _n, _f in {
    "reduce_sum": jnp.sum, "reduce_max": jnp.max, "reduce_min": jnp.min, "reduce_prod": jnp.prod,
}.items():  # fmt: skip

    def _red(draw, f=_f):
        shp = shape(draw)
        axes = tuple(sorted(draw(st.sets(st.integers(0, len(shp) - 1), min_size=1))))
        x = rand(shp)
        view = viewed(draw, x)
        return (lambda x: f(view(x), axis=axes)), (x,)

    case(_n)(_red)

for _n, _f in {"reduce_and": jnp.all, "reduce_or": jnp.any}.items():

    def _bred(draw, f=_f):
        shp = shape(draw)
        return (lambda x: f(x, axis=draw(st.integers(0, len(shp) - 1)))), (rand(shp, jnp.bool_),)

    case(_n)(_bred)

for _n, _f in {"argmax": jnp.argmax, "argmin": jnp.argmin}.items():

    def _arg(draw, f=_f):
        shp = shape(draw)
        return (lambda x: f(x, axis=draw(st.integers(0, len(shp) - 1)))), (rand(shp),)

    case(_n)(_arg)


@case("reduce")
def _generic_reduce(draw):  # a monoid with a non-identity init: the generic reduce
    shp = shape(draw)
    ax = draw(st.integers(0, len(shp) - 1))
    op, init = draw(st.sampled_from([(lax.add, 1.0), (lax.mul, 2.0), (lax.max, 0.5)]))
    return (lambda x: lax.reduce(x, init, op, (ax,))), (rand(shp),)


def _window(draw, nsp: int = 2):
    """Window, strides, window dilation, the input and its padding ("SAME", "VALID" or
    explicit (lo, hi) pairs) of a pooling over the last ``nsp`` dims."""
    k = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    s = tuple(draw(st.integers(1, 3)) for _ in range(nsp))
    d = tuple(draw(st.integers(1, 2)) for _ in range(nsp))
    size = tuple(draw(st.integers(dd * (kk - 1) + 1, dd * (kk - 1) + 4)) for kk, dd in zip(k, d))
    pad = draw(st.sampled_from(["VALID", "SAME", "explicit"]))
    if pad == "explicit":
        pad = ((0, 0), (0, 0), *((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in k))
    return (1, 1, *k), (1, 1, *s), (1, 1, *d), rand((1, 2, *size)), pad


for _n, _init, _op in (
    ("reduce_window_max", -jnp.inf, lax.max),
    ("reduce_window_min", jnp.inf, lax.min),
    ("reduce_window_sum", 0.0, lax.add),
    ("reduce_window", 1.0, lax.mul),
):

    def _rw(draw, init=_init, op=_op):
        k, s, d, x, pad = _window(draw, draw(st.integers(1, 2)))
        return (lambda x: lax.reduce_window(x, init, op, k, s, pad, window_dilation=d)), (x,)

    case(_n, examples=8)(_rw)

for _n, _f in {
    "cumsum": lax.cumsum, "cumprod": lax.cumprod, "cummax": lax.cummax, "cummin": lax.cummin,
    "cumlogsumexp": lax.cumlogsumexp,
}.items():  # fmt: skip

    def _cum(draw, f=_f):
        shp = shape(draw)
        ax, rev = draw(st.integers(0, len(shp) - 1)), draw(st.booleans())
        x = rand(shp)
        view = viewed(draw, x)
        return (lambda x: f(view(x), ax if view(x).ndim == len(shp) else ax + 1, reverse=rev)), (x,)

    case(_n)(_cum)


@case("sort")
def _sort(draw):
    shp = shape(draw)
    ax = draw(st.integers(0, len(shp) - 1))
    if draw(st.booleans()):
        return (lambda x, y: lax.sort((x, y), dimension=ax, num_keys=1)), (rand(shp), rand(shp))
    return (lambda x: jnp.argsort(x, axis=ax)), (rand(shp),)


@case("top_k")
def _top_k(draw):
    shp = shape(draw)
    return (lambda x: lax.top_k(x, draw(st.integers(1, shp[-1])))), (rand(shp),)


# ------------------------------------------------------------------------ contractions


@case("dot_general", examples=8)
def _dot(draw):
    b, m, k, n = (draw(st.integers(1, 4)) for _ in range(4))
    kind = draw(st.sampled_from(["mm", "bmm", "mv", "bias"]))
    if kind == "mm":
        return (lambda a, c: a @ c), (rand((m, k)), rand((k, n)))
    if kind == "bmm":
        return (lambda a, c: jnp.einsum("bij,bjk->bik", a, c)), (rand((b, m, k)), rand((b, k, n)))
    if kind == "mv":
        return (lambda a, v: a @ v), (rand((m, k)), rand((k,)))
    return (lambda a, c, z: a @ c + z), (rand((m, k)), rand((k, n)), rand((n,)))


@case("conv_general_dilated", examples=30)
def _conv(draw):
    nsp = draw(st.integers(1, 2))
    g = draw(st.sampled_from([1, 2]))
    bg = 1 if g > 1 else draw(st.sampled_from([1, 2]))
    cin, cout = g * draw(st.integers(1, 2)), g * bg * draw(st.integers(1, 2))
    k = [draw(st.integers(1, 3)) for _ in range(nsp)]
    s = [draw(st.integers(1, 2)) for _ in range(nsp)]
    rd = [draw(st.integers(1, 2)) for _ in range(nsp)]
    ld = [draw(st.integers(1, 3)) for _ in range(nsp)]
    size = [draw(st.integers(1, 4)) for _ in range(nsp)]
    eff = [(n - 1) * l_ + 1 for n, l_ in zip(size, ld, strict=True)]
    span = [r * (kk - 1) + 1 for r, kk in zip(rd, k, strict=True)]
    pad = []
    for e, sp in zip(eff, span, strict=True):
        lo = draw(st.integers(-1, sp))
        hi = draw(st.integers(max(-1, sp - e - lo), sp))
        pad.append((lo, hi))
    x = rand((bg * draw(st.integers(1, 2)), cin, *size))
    w = rand((cout, cin // g, *k))

    def fn(x, w):
        return lax.conv_general_dilated(
            x, w, s, pad, lhs_dilation=ld, rhs_dilation=rd,
            feature_group_count=g, batch_group_count=bg,
        )  # fmt: skip

    return fn, (x, w)


# ------------------------------------------------------------------------ data movement


@case("broadcast_in_dim")
def _bcast(draw):
    shp = shape(draw)
    return (lambda x: jnp.broadcast_to(x[None], (2, *shp)) + 1), (rand(shp),)


@case("reshape")
def _reshape(draw):
    shp = shape(draw, 2, 3)
    x = rand(shp)
    view = viewed(draw, x)
    return (lambda x: view(x).reshape(-1) * 2), (x,)


@case("transpose")
def _transpose(draw):
    shp = shape(draw, 2, 3)
    perm = tuple(draw(st.permutations(range(len(shp)))))
    perm = perm if perm != tuple(range(len(shp))) else perm[::-1]
    return (lambda x: lax.transpose(x, perm) * 2), (rand(shp),)


@case("squeeze")
def _squeeze(draw):
    shp = shape(draw)
    return (lambda x: jnp.squeeze(x[:, None], 1) * 2), (rand(shp),)


@case("slice")
def _slice(draw):
    shp = shape(draw, 1, 2, 6)
    a = draw(st.integers(0, shp[0] - 1))
    b, step = draw(st.integers(a + 1, shp[0])), draw(st.integers(1, 2))
    lo, hi = (a, *[0] * (len(shp) - 1)), (b, *shp[1:])
    return (lambda x: lax.slice(x, lo, hi, (step, *[1] * (len(shp) - 1))) * 2), (rand(shp),)


@case("split")
def _split(draw):
    shp = shape(draw)
    ax = draw(st.integers(0, len(shp) - 1))
    cut = draw(st.integers(0, shp[ax]))
    return (lambda x: [p * 2 for p in jnp.split(x, [cut], axis=ax)]), (rand(shp),)


@case("rev")
def _rev(draw):
    shp = shape(draw)
    dims = tuple(sorted(draw(st.sets(st.integers(0, len(shp) - 1), min_size=1))))
    return (lambda x: lax.rev(x, dims)), (rand(shp),)


@case("pad")
def _pad(draw):
    shp = shape(draw)
    cfg = [
        (draw(st.integers(-1, 2)), draw(st.integers(-1, 2)), draw(st.integers(0, 1))) for _ in shp
    ]
    cfg = [
        (max(lo, 0), max(hi, 0), i) if n < 3 else (lo, hi, i)
        for (lo, hi, i), n in zip(cfg, shp, strict=True)
    ]  # noqa: E501
    return (lambda x: lax.pad(x, 0.5, cfg)), (rand(shp),)


@case("concatenate")
def _concat(draw):
    shp = shape(draw)
    ax = draw(st.integers(0, len(shp) - 1))
    parts = [
        rand(tuple(draw(st.integers(1, 3)) if i == ax else n for i, n in enumerate(shp)))
        for _ in range(draw(st.integers(2, 3)))
    ]
    return (lambda *xs: jnp.concatenate(xs, ax)), tuple(parts)


@case("iota")
def _iota(draw):
    n = draw(st.integers(1, 6))
    return (lambda x: x + jnp.arange(n, dtype=jnp.float32)), (rand((n,)),)


@case("stack")
def _stack(draw):
    shp = shape(draw)
    ax = draw(st.integers(0, len(shp)))
    return (lambda x, y: jnp.stack([x, y], ax)), (rand(shp), rand(shp))


@case("unstack")
def _unstack(draw):
    from jax._src.lax.lax import unstack_p

    shp = shape(draw)
    ax = draw(st.integers(0, len(shp) - 1))
    return (lambda x: [p * 2 for p in unstack_p.bind(x, axis=ax)]), (rand(shp),)


@case("tile")
def _tile(draw):
    shp = shape(draw)
    reps = tuple(draw(st.integers(1, 2)) for _ in shp)
    return (lambda x: jnp.tile(x, reps)), (rand(shp),)


@case("dynamic_slice")
def _dslice(draw):
    shp = shape(draw, 1, 2, 5)
    size = tuple(draw(st.integers(1, n)) for n in shp)
    if draw(st.booleans()):  # starts known while tracing
        starts = tuple(draw(st.integers(0, n)) for n in shp)
        return (lambda x: lax.dynamic_slice(x, starts, size)), (rand(shp),)
    return (lambda x, i: lax.dynamic_slice(x, (i,) + (0,) * (len(shp) - 1), size)), (
        rand(shp),
        jnp.int32(draw(st.integers(-1, shp[0]))),
    )


@case("dynamic_update_slice")
def _dus(draw):
    shp = shape(draw, 1, 2, 5)
    upd = tuple(draw(st.integers(1, n)) for n in shp)
    starts = tuple(draw(st.integers(0, n - u)) for n, u in zip(shp, upd, strict=True))
    return (lambda x, u: lax.dynamic_update_slice(x * 2, u, starts)), (rand(shp), rand(upd))


@case("gather", examples=6)
def _gather(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["rows", "cols", "take", "known"]))
    if kind == "rows":
        return (lambda t, i: t[i]), (rand((v, d)), ints(v, shape(draw, 1, 2)))
    if kind == "cols":
        return (lambda t, i: t[:, i]), (rand((d, v)), ints(v, (draw(st.integers(1, 4)),)))
    if kind == "take":
        return (lambda t, i: jnp.take(t, i, axis=0, mode="clip")), (
            rand((v, d)),
            ints(v + 2, (draw(st.integers(1, 4)),)) - 1,
        )
    idx = jnp.asarray(_RNG.integers(0, v, (3,)))
    return (lambda t: t[idx]), (rand((v, d)),)


for _n, _f in {
    "scatter": lambda x, i, u: x.at[i].set(u),
    "scatter-add": lambda x, i, u: x.at[i].add(u),
    "scatter-mul": lambda x, i, u: x.at[i].multiply(u),
    "scatter-max": lambda x, i, u: x.at[i].max(u),
    "scatter-min": lambda x, i, u: x.at[i].min(u),
}.items():  # fmt: skip

    def _scatter(draw, f=_f):
        v, d, n = draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 4))
        return (lambda x, i, u: f(x * 1, i, u)), (rand((v, d)), ints(v, (n,)), rand((n, d)))

    case(_n)(_scatter)


@case("empty")
def _empty(draw):
    from jax._src.lax.lax import empty

    shp = shape(draw)
    return (lambda x: jnp.zeros_like(x) + empty(shp, jnp.float32) * 0 + x), (rand(shp),)


@case("empty2")
def _empty2(draw):
    from jax._src.core import MemorySpace
    from jax._src.lax.lax import empty2

    return (lambda x: empty2(jnp.float32, memory_space=MemorySpace.Device) * 0 + x), (
        rand(shape(draw)),
    )


@case("platform_index")
def _platform(draw):
    return (lambda x: lax.platform_dependent(x, cuda=jnp.sin, default=jnp.cos)), (
        rand(shape(draw)),
    )


# ---------------------------------------------------------------- identities (aliases)


@case("name")
def _name(draw):
    from jax.ad_checkpoint import checkpoint_name

    return (lambda x: checkpoint_name(x * 2, "h")), (rand(shape(draw)),)


@case("tie")
def _tie(draw):
    from jax._src.lax.lax import tie_p

    return (lambda x: tie_p.bind(x, x * 2)), (rand(shape(draw)),)


@case("pvary")
def _pvary(draw):
    from jax._src.core import pvary_p

    return (lambda x: pvary_p.bind(x * 2, axes=())), (rand(shape(draw)),)


@case("with_memory_space_constraint")
def _wmsc(draw):
    from jax._src.core import MemorySpace
    from jax._src.pallas.core import with_memory_space_constraint_p

    def fn(x):
        return with_memory_space_constraint_p.bind(x * 2, memory_space=MemorySpace.Device)

    return fn, (rand(shape(draw)),)


@case("layout_constraint")
def _layout(draw):
    from jax.experimental.layout import Layout, with_layout_constraint

    shp = shape(draw)
    order = tuple(range(len(shp)))[::-1]
    return (lambda x: with_layout_constraint(x * 2, Layout(order))), (rand(shp),)


@case("sharding_constraint")
def _sharding(draw):
    dev = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    return (lambda x: lax.with_sharding_constraint(x * 2, dev)), (rand(shape(draw)),)


@case("reshard")
def _reshard(draw):
    from jax.sharding import PartitionSpec

    mesh = jax.make_mesh((1,), ("a",))
    dst = jax.sharding.NamedSharding(mesh, PartitionSpec())
    return (lambda x: jax.sharding.reshard(x * 2, dst)), (rand(shape(draw)),)


# ------------------------------------------------------------------------ control flow


@case("jit")
def _jit(draw):
    return (lambda x: jax.jit(lambda y: jnp.sin(y) * 3)(x) + 1), (rand(shape(draw)),)


@case("closed_call")
def _closed_call(draw):
    from jax._src.lax.eval_jaxpr import eval_jaxpr_p

    x = rand(shape(draw))
    body = jax.make_jaxpr(lambda y: jnp.tanh(y) * 2)(x)
    return (lambda x: eval_jaxpr_p.bind(x, jaxpr=body)[0] + 1), (x,)


@case("remat2")
def _remat(draw):
    return (lambda x: jax.checkpoint(lambda y: jnp.sin(y) * y)(x)), (rand(shape(draw)),)


@jax.custom_jvp
def _softplus(x):
    return jnp.log1p(jnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))


@jax.custom_vjp
def _sine(x):
    return jnp.sin(x)


_sine.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g * jnp.cos(r),))


@case("custom_jvp_call")
def _cjvp(draw):
    return _softplus, (rand(shape(draw)),)


@case("custom_vjp_call")
def _cvjp(draw):
    return _sine, (rand(shape(draw)),)


@case("cond")
def _cond(draw):
    shp = shape(draw)
    if draw(st.booleans()):  # a traced predicate: the cheapest branch
        return (lambda x: lax.cond(x.sum() > 0, jnp.sin, lambda y: y * 2, x)), (rand(shp),)
    return (lambda x: lax.switch(draw(st.integers(0, 2)), [jnp.sin, jnp.cos, jnp.tanh], x)), (
        rand(shp),
    )


for _mode in ("unroll", "loop"):

    def _scan(draw):
        t, n = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        kind = draw(st.sampled_from(["cumsum", "rnn", "reverse", "carry_swap"]))
        if kind == "cumsum":

            def fn(x):
                return lax.scan(lambda c, r: (c + r, c * 2), jnp.zeros(x.shape[1:]), x)

            return fn, (rand((t, n)),)
        if kind == "rnn":

            def rnn(h, w):
                return lax.scan(lambda h, _: (jnp.tanh(h @ w), h.sum()), h, None, length=t)

            return rnn, (rand((2, n)), rand((n, n)))
        if kind == "reverse":
            return (lambda x: lax.scan(lambda c, r: (c * r, None), x[0], x, reverse=True)), (
                rand((t, n)),
            )

        def swap(a, b):
            return lax.scan(lambda c, r: ((c[1], c[0] + r), r.sum()), (a, b), jnp.stack([a] * t))

        return swap, (rand((n,)), rand((n,)))

    case("scan", examples=6, scan=_mode)(_scan)


@case("while")
def _while(draw):  # a trip count known while tracing (a fori_loop becomes a scan)
    k = draw(st.integers(1, 4))
    return (
        lambda x: lax.while_loop(lambda c: c[0] < k, lambda c: (c[0] + 1, c[1] * 2), (0, x))[1]
    ), (rand(shape(draw)),)


# ----------------------------------------------------------------- refused primitives

for _n, _f, _err, _m in (
    ("approx_top_k", lambda x: lax.approx_max_k(x.astype(jnp.float32), 1), UnsupportedPrimitiveError, ""),  # noqa: E501
):  # fmt: skip
    case(_n, examples=1, error=_err, match=_m)(lambda draw, f=_f: (f, (rand((2, 4), jnp.int32),)))

import oracle_cases_jax_science  # noqa: E402,F401  (FFT, linear algebra, complex, PRNG)
