"""Random numbers: ``rand``/``randn``/``randint`` (and ``_like``), ``normal``, ``bernoulli``,
``uniform_``/``normal_``/``random_``/``exponential_``, ``randperm`` and the fused dropout kernel.

Each is ONE kernel that generates its values and writes its output, as CUDA runs it (a
Philox-based generator kernel per call). Every value is ``random(position, dist=...)`` of
:data:`solar.ir.ops.SCALAR_OPS`: its argument is the element's flat position, so it costs one
op per value drawn (the provable minimum; see :mod:`solar.ir.ops`), and the executor draws from
torch's generator with the same call the operator makes, so a re-seeded run reproduces
``torch.rand``/``randn``/``randint``/``normal``/``bernoulli`` values exactly.

- ``native_dropout(x, p, train=True)`` is what ``F.dropout``/``nn.Dropout`` launch on CUDA in
  train mode (one fused kernel; see :mod:`solar.frontend.torch.fused`): ``mask = bernoulli(1 -
  p)`` and ``out = x * mask / (1 - p)``, writing ``out`` and the bool ``mask``. Its values
  cannot match CUDA's stream (the kernel draws 4 values per Philox call in its own order), so
  validation compares statistics (see :mod:`solar.gpu.compare`).
- ``randperm(n)`` is an extern routine (random keys sorted): it writes ``n`` integers and
  draws ``n`` values.
"""

from __future__ import annotations

import torch

from solar.algebra.size import integer
from solar.frontend.layout import flat_index
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import dims_of, nest
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, Index, call

aten = torch.ops.aten


def draw(loops: list[tuple], dist: str, dtype: str, **params: object) -> Expr:
    """``random(position)`` of ``dist`` over the elements of the ``(dim, extent)`` loops,
    drawn in ``dtype``: one fresh value per element."""
    attrs = {k: v for k, v in params.items() if v is not None}
    dims = [loop[0] for loop in loops]
    shape = tuple(integer(loop[1]) for loop in loops)
    return call("random", flat_index(shape, dims), dist=dist, dtype=dtype, **attrs)


def emit_draw(ctx: LoweringContext, dist: str, **params: object) -> None:
    """One statement writing fresh values of ``dist`` into the node's output."""
    out = ctx.out()
    loops = nest(dims_of(out.shape), out.shape)
    ctx.statement(loops, out, dims_of(out.shape), draw(loops, dist, out.dtype, **params))


# operator -> (distribution, position of parameter a, of b, default a, default b); position
# None means the default value
_FACTORIES: dict[object, tuple[str, int | None, int | None, object, object]] = {
    aten.rand.default: ("uniform", None, None, 0.0, 1.0),
    aten.rand_like.default: ("uniform", None, None, 0.0, 1.0),
    aten.randn.default: ("normal", None, None, 0.0, 1.0),
    aten.randn_like.default: ("normal", None, None, 0.0, 1.0),
    aten.randint.default: ("randint", None, 0, 0, None),  # (high, size)
    aten.randint.low: ("randint", 0, 1, None, None),  # (low, high, size)
    aten.randint_like.default: ("randint", None, 1, 0, None),  # (self, high)
    aten.randint_like.low_dtype: ("randint", 1, 2, None, None),  # (self, low, high)
    aten.uniform_.default: ("uniform", 1, 2, None, None),  # (self, from, to)
    aten.normal_.default: ("normal", 1, 2, None, None),  # (self, mean, std)
    getattr(aten.random_, "from"): ("randint", 1, 2, None, None),  # (self, from, to)
    aten.random_.to: ("randint", None, 1, 0, None),  # (self, to)
    aten.exponential_.default: ("exponential", 1, None, None, None),  # (self, lambd)
    aten.bernoulli.p: ("bernoulli", 1, None, None, None),  # (self, p)
    aten.bernoulli_.float: ("bernoulli", 1, None, None, None),  # (self, p)
    aten.normal.float_float: ("normal", 0, 1, None, None),  # (mean, std, size)
}
# the overloads taking a torch.Generator take the same leading arguments
_FACTORIES.update(
    {
        aten.rand.generator: _FACTORIES[aten.rand.default],
        aten.randn.generator: _FACTORIES[aten.randn.default],
        aten.rand_like.generator: _FACTORIES[aten.rand_like.default],
        aten.randn_like.generator: _FACTORIES[aten.randn_like.default],
        aten.randint.generator: _FACTORIES[aten.randint.default],
        aten.randint.low_generator: _FACTORIES[aten.randint.low],
        aten.randint_like.generator: _FACTORIES[aten.randint_like.default],
        aten.randint_like.low_generator_dtype: _FACTORIES[aten.randint_like.low_dtype],
    }
)


@lowering(*_FACTORIES)
def random_factory(ctx: LoweringContext, *args: object) -> None:
    """Fresh values of one distribution with scalar parameters, written to the output."""
    dist, pa, pb, da, db = _FACTORIES[ctx.target]
    a = da if pa is None else args[pa]
    b = db if pb is None else args[pb]
    if dist == "randint" and b is None:  # random_.from_ with to=None: up to the dtype's max
        ctx.fail("without an upper bound (the dtype's range) is not supported; pass `to`")
    emit_draw(ctx, dist, a=a, b=b)


@lowering(aten.random_.default)
def random_bits(ctx: LoweringContext, self: T, *args: object) -> None:
    """``random_()``: integers in [0, 2^mantissa] for floats, the dtype's range for integers."""
    out = ctx.out()
    if out.dtype in ("float32", "float64", "float16", "bfloat16"):
        digits = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}[out.dtype]
        high = 2**digits + 1
    elif out.dtype == "bool":
        high = 2
    else:
        high = int(torch.iinfo(getattr(torch, out.dtype)).max)
    emit_draw(ctx, "randint", a=0, b=high)


@lowering(aten.normal.Tensor_float, aten.normal.float_Tensor, aten.normal.Tensor_Tensor)
def normal_tensor(ctx: LoweringContext, mean: object, std: object, *args: object) -> None:
    """``mean + std * N(0, 1)`` with tensor mean and/or std (broadcast to the output)."""
    out = ctx.out()
    dims = dims_of(out.shape)
    loops = nest(dims, out.shape)
    m = ctx.operand(mean, dims, out.dtype)
    s = ctx.operand(std, dims, out.dtype)
    assert m is not None and s is not None
    if isinstance(std, T):
        noise: Expr = call("mul", draw(loops, "normal", out.dtype, a=0.0, b=1.0), s)
    else:  # torch draws normal(0, std) and adds the mean
        noise = draw(loops, "normal", out.dtype, a=0.0, b=float(std))  # type: ignore[arg-type]
    expr = noise if isinstance(mean, (int, float)) and mean == 0 else call("add", noise, m)
    ctx.statement(loops, out, dims, expr)


@lowering(aten.bernoulli.default, aten.bernoulli_.Tensor)
def bernoulli_tensor(ctx: LoweringContext, x: T, *args: object) -> None:
    """``1`` with probability ``p[i]``: ``bernoulli(self)`` draws with ``self`` as the
    probabilities, ``bernoulli_(self, p)`` with the tensor ``p``."""
    out = ctx.out()
    p = x if ctx.target == aten.bernoulli.default else args[0]
    dims = dims_of(out.shape)
    u = draw(nest(dims, out.shape), "uniform", "float32", a=0.0, b=1.0)
    prob = ctx.operand(p, dims, "float32")
    assert prob is not None
    expr = call("cast", call("lt", u, prob), dtype=out.dtype)
    ctx.statement(nest(dims, out.shape), out, dims, expr)


@lowering(aten.native_dropout.default)
def native_dropout(ctx: LoweringContext, x: T, p: float, train: bool | None) -> None:
    """CUDA's fused dropout: ``mask = bernoulli(1 - p)``, ``out = x * mask / (1 - p)``, one
    kernel writing both (eval, ``train=False``: a copy and an all-true mask)."""
    val, mask_val = ctx.val  # type: ignore[misc]
    if torch._C._is_alias_of(val, ctx.node.args[0].meta["val"]):  # type: ignore[union-attr]
        # the fake decomposition returns its input (eval, p = 0); the CPU and CUDA kernels
        # return a clone of it, laid out as empty_like lays it out
        ctx.node.meta["val"] = (torch.empty_like(val), mask_val)
    out, mask = ctx.out(0), ctx.out(1)
    dims = dims_of(out.shape)
    loops = nest(dims, out.shape)
    value = ctx.load(x, dims)
    if train is False or p == 0:  # train=None is training, as in the CPU and CUDA kernels
        ctx.statement(loops, mask, dims, Const(True))
        ctx.statement(loops, out, dims, value)
        return
    if p >= 1:
        ctx.statement(loops, mask, dims, Const(False))
        ctx.statement(loops, out, dims, Const(0.0))
        return
    keep = draw(loops, "bernoulli", "bool", a=1.0 - p)
    ctx.statement(loops, mask, dims, keep)
    kept = call("mul", call("cast", ctx.load(mask, dims), dtype=out.dtype), value)
    scaled = call("mul", kept, Const(1.0 / (1.0 - p)))
    ctx.statement(loops, out, dims, scaled)


@lowering(aten.randperm.default, aten.randperm.generator)
def randperm(ctx: LoweringContext, n: int, *args: object) -> None:
    """A random permutation of ``0..n-1`` (an extern routine: ``n`` random keys, sorted)."""
    out = ctx.out()
    if n <= 0:
        return
    ctx.statement(
        [("i", n), ("j", n, True)],
        out,
        ["i"],
        Index(Affine.of("j")),
        extern="randperm",
    )


#: The random operators (their kernels' ``op`` names), for reports and validation.
RANDOM_OPS: frozenset[str] = frozenset(
    str(op)
    for op in (
        *_FACTORIES,
        aten.random_.default,
        aten.normal.Tensor_float,
        aten.normal.float_Tensor,
        aten.normal.Tensor_Tensor,
        aten.bernoulli.default,
        aten.bernoulli_.Tensor,
        aten.native_dropout.default,
        aten.randperm.default,
        aten.randperm.generator,
    )
)
