"""Optimizer operators: the ``_foreach_*`` family and the fused optimizers (``_fused_adam_``,
``_fused_adamw_``, ``_fused_sgd_``), ONE IR kernel per CUDA launch.

Eager CUDA runs a foreach op (and a fused optimizer) through ``multi_tensor_apply``
(``ATen/native/cuda/MultiTensorApply.cuh``): the tensors are cut into chunks of 65536 elements,
and one kernel is launched whenever the launch's chunk count reaches the block limit or its
tensor count reaches the tensor limit at a tensor's last chunk; a tensor can straddle two
launches. The limits depend on the launch-argument space, i.e. on the CUDA version:

=================  ================================  ================================
                   CUDA >= 13 (32 KB arguments)       CUDA < 13 (4 KB arguments)
=================  ================================  ================================
chunks per launch  2240                              320
tensors, depth d   770, 448, 336, 252, 210            110, 64, 48, 36, 30
(scalar lists)     672, 448, 336, 252, 210            96, 64, 48, 36, 30
=================  ================================  ================================

``depth`` is the number of tensor lists the kernel touches (an in-place op's lists; an
out-of-place op's inputs plus its output list; 4 for Adam, 5 with amsgrad). A CPU-only torch
build does not say which toolkit will run the program; solar assumes CUDA >= 13 then (set
:data:`ARG_SPACE`). :func:`launches` reproduces the rule; each launch becomes one IR kernel
with one statement per tensor piece it covers, over a flat view of the tensor, and its
``origin`` names the list items it covers (``tensors[a:b]``). Per element the statement
computes what the CUDA functor computes, in its ``opmath`` type (float32 for half types); per-
tensor scalars a fused optimizer derives from its step count (bias corrections) are computed
once per tensor into kernel-local scalars.

``_foreach_norm`` launches the chunked partial-norm kernel and then one cleanup kernel reducing
the per-chunk partials of every tensor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from solar.frontend.layout import contiguous_strides
from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import acc_dtype
from solar.frontend.torch.ops.elementwise import lerp
from solar.frontend.torch.registry import lowering
from solar.ir.affine import Affine
from solar.ir.scalar import Const, Expr, call

aten = torch.ops.aten

CHUNK = 65536
LIMITS = {
    "32KB": {
        "blocks": 2240,
        "tensors": (770, 448, 336, 252, 210),
        "scalars": (672, 448, 336, 252, 210),
    },  # noqa: E501
    "4KB": {"blocks": 320, "tensors": (110, 64, 48, 36, 30), "scalars": (96, 64, 48, 36, 30)},
}


def _arg_space() -> str:
    v = torch.version.cuda
    if v is None:
        return "32KB"
    return "32KB" if int(v.split(".")[0]) >= 13 else "4KB"


#: Which launch-argument table eager CUDA uses here (see the module docstring).
ARG_SPACE = _arg_space()

Piece = tuple[int, int, int]  # (list item, first element, end element)


def launches(
    numels: Sequence[int], depth: int, scalar_list: bool = False, arg_space: str | None = None
) -> list[list[Piece]]:
    """The launches ``multi_tensor_apply<depth>`` makes for tensors of ``numels`` elements:
    each a list of (item, first element, end element) pieces (empty tensors are skipped).
    ``arg_space``: ``"32KB"`` or ``"4KB"`` (default :data:`ARG_SPACE`)."""
    lim = LIMITS[arg_space or ARG_SPACE]
    max_tensors = lim["scalars" if scalar_list else "tensors"][depth - 1]
    max_blocks = lim["blocks"]
    out: list[list[Piece]] = []
    cur: list[Piece] = []
    tensors = blocks = 0
    for t, n in enumerate(numels):
        if n == 0:
            continue
        tensors += 1
        chunks = -(-n // CHUNK)
        start = 0
        while start < chunks:
            take = min(max_blocks - blocks, chunks - start)
            last = start + take == chunks
            # the last piece ends at n (not min(end of its chunks, n): no decision on whether
            # n fills its last chunk, which a symbolic n would record)
            cur.append((t, start * CHUNK, n if last else (start + take) * CHUNK))
            blocks += take
            start += take
            if blocks == max_blocks or (tensors == max_tensors and last):
                out.append(cur)
                cur, blocks = [], 0
                tensors = 0 if last else 1
    if cur:
        out.append(cur)
    return out


def flat(ctx: LoweringContext, t: T) -> T:
    """A 1-D view of a dense tensor (what a foreach kernel addresses)."""
    p = ctx.builder.program
    decl = p.tensors[t.name]
    base, offset = t.name, 0
    if decl.view is not None:
        strides = tuple(decl.view.strides)
        dense = [s for s, n in zip(strides, decl.shape, strict=True) if n != 1]
        dense_strides = contiguous_strides(decl.shape)
        want = [s for s, n in zip(dense_strides, decl.shape, strict=True) if n != 1]
        if dense != want:
            ctx.fail(f"has a non-contiguous tensor {t.name} in its list")
        base, offset = decl.view.base, decl.view.offset
    n = max(t.numel, 1)
    name = ctx.builder.view(f"{t.name}_flat", base, (n,), (1,), offset)
    return T(name, (n,), t.dtype)


def emit_launches(
    ctx: LoweringContext,
    lists: Sequence[Sequence[T]],
    outs: Sequence[T],
    depth: int,
    element: Callable[[int, list[Expr], str], Expr],
    *,
    scalar_list: bool = False,
    per_tensor: Callable[[int], None] | None = None,
    compute: str | None = None,
) -> None:
    """One kernel per launch; per piece ``outs[t][e] = element(t, loads of lists[k][t][e],
    piece dim)`` over the piece's elements. ``per_tensor(t)`` emits a tensor's scalar
    statements (once per piece) before its element statement."""
    flats = [[flat(ctx, x) for x in lst] for lst in lists]
    out_flats = [flat(ctx, x) for x in outs]
    for pieces in launches([x.numel for x in outs], depth, scalar_list):
        k = ctx.begin_kernel()
        items = [p[0] for p in pieces]
        k.origin = f"tensors[{min(items)}:{max(items) + 1}]"
        for t, lo, hi in pieces:
            if per_tensor is not None:
                per_tensor(t)
            i = Affine.of("i") + lo
            dtype = compute or acc_dtype(outs[t].dtype)  # CUDA's opmath: float32 for halves
            loads = [ctx.load(f[t], [i], dtype) for f in flats]
            expr = element(t, loads, dtype)
            if dtype != outs[t].dtype:
                expr = call("cast", expr, dtype=outs[t].dtype)
            ctx.statement([("i", hi - lo)], out_flats[t], [i], expr, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# The _foreach_* family


def _second(xs: list[Expr], s: dict[str, Expr]) -> Expr:
    """The second operand: a list item, or the scalar / per-item scalar / 0-dim tensor."""
    if len(xs) > 1:
        return xs[1]
    return next(s[k] for k in ("other", "scalar", "scalars", "exponent") if k in s)


def _binary(name: str) -> Callable[..., Expr]:
    return lambda xs, s: call(name, xs[0], _second(xs, s))


def _pow(xs: list[Expr], s: dict[str, Expr]) -> Expr:
    """``x ** e``; ``ScalarAndTensor`` (a scalar base ``self``, as Adam's ``β ** step``):
    ``self ** x``."""
    if "self" in s:
        return call("pow", s["self"], xs[0])
    return call("pow", xs[0], _second(xs, s))


ELEMENT: dict[str, Callable[..., Expr]] = {
    # name -> f(loads of the list items, {schema name: scalar operand}) -> Expr
    "add": lambda xs, s: call("add", xs[0], _scaled(_second(xs, s), s.get("alpha"))),
    "sub": lambda xs, s: call("sub", xs[0], _scaled(_second(xs, s), s.get("alpha"))),
    **{n: _binary(n) for n in ("mul", "div", "maximum", "minimum")},
    "pow": _pow,
    "clamp_min": _binary("maximum"),
    "clamp_max": _binary("minimum"),
    "addcmul": lambda xs, s: call(
        "add", xs[0], _scaled(call("mul", xs[1], xs[2]), s.get("value", s.get("scalars")))
    ),
    "addcdiv": lambda xs, s: call(
        "add", xs[0], _scaled(call("div", xs[1], xs[2]), s.get("value", s.get("scalars")))
    ),
    "lerp": lambda xs, s: lerp(xs[0], xs[1], xs[2] if len(xs) > 2 else s["weight"]),
    "copy": lambda xs, s: xs[-1],
    "zero": lambda xs, s: Const(0),
    **{
        n: (lambda name: lambda xs, s: call(name, xs[0]))(n)
        for n in ("sqrt", "rsqrt", "neg", "abs", "exp", "log", "reciprocal", "sign", "sigmoid")
    },
}


def _scaled(x: Expr, k: Expr | None) -> Expr:
    if k is None or (isinstance(k, Const) and k.value == 1):
        return x
    return call("mul", x, k)


def _foreach_ops() -> list[torch._ops.OpOverload]:
    ops = []
    for name in ELEMENT:
        for packet_name in (f"_foreach_{name}", f"_foreach_{name}_"):
            packet = getattr(aten, packet_name, None)
            if packet is None:
                continue
            ops += [getattr(packet, o) for o in packet.overloads()]
    return [
        o for o in ops if not any(a.alias_info and a.name == "out" for a in o._schema.arguments)
    ]


@lowering(*_foreach_ops())
def foreach(ctx: LoweringContext, *args: object) -> None:
    """A foreach op: per list item, the elementwise operator on the items of its lists."""
    schema = ctx.target._schema
    name = ctx.target.overloadpacket.__name__.removeprefix("_foreach_").rstrip("_")
    lists: list[list[T]] = []
    others: list[tuple[str, object]] = []
    scalar_list = False
    for a, v in zip(schema.arguments, args, strict=True):
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, T) for x in v):
            lists.append(list(v))
        elif a.name != "non_blocking":
            others.append((a.name, v))
            scalar_list |= isinstance(v, (list, tuple)) or (isinstance(v, T) and v.ndim == 1)
    inplace = bool(schema.arguments[0].alias_info)
    outs = lists[0] if inplace else [o for o in ctx.outs() if o is not None]
    reads = [] if name == "zero" else lists[1:] if name == "copy" else lists
    depth = len(lists) + (0 if inplace else 1)

    def element(t: int, loads: list[Expr], dtype: str) -> Expr:
        scalars: dict[str, Expr] = {}
        for key, v in others:
            # a 0-dim tensor, or a 1-D tensor of one scalar per item (addcmul/addcdiv's
            # .Tensor overloads, which a trace refuses first: see fused._refuse_host_scalars)
            if isinstance(v, T):
                scalars[key] = ctx.load(v, [t] if v.ndim == 1 else [], dtype)
            elif isinstance(v, (list, tuple)):
                scalars[key] = Const(v[t])
            elif isinstance(v, (int, float, bool)):
                scalars[key] = Const(v)
        return ELEMENT[name](loads, scalars)

    emit_launches(ctx, reads, outs, depth, element, scalar_list=scalar_list)


@lowering(aten._foreach_norm.Scalar)
def foreach_norm(ctx: LoweringContext, tensors: list[T], ord=2, dtype=None) -> None:
    """Chunked partial norms (``|x|^p`` summed per chunk, into a float32 buffer of
    ``len(tensors) x max chunks``), then one cleanup kernel: ``(Σ partials)^(1/p)``."""
    outs = [o for o in ctx.outs() if o is not None]
    p = float(ord)
    if p not in (1.0, 2.0, math.inf):
        ctx.fail(f"with ord={ord} is not supported (1, 2, inf)")
    reduce = "max" if p == math.inf else "sum"
    most = max((-(-x.numel // CHUNK) for x in tensors), default=1)
    partial = T(
        ctx.builder.tensor(f"{ctx.node.name}_partials", (len(tensors), most), "float32"),
        (len(tensors), most),
        "float32",
    )
    flats = [flat(ctx, x) for x in tensors]
    for pieces in launches([x.numel for x in tensors], 1):
        k = ctx.begin_kernel()
        items = [pc[0] for pc in pieces]
        k.origin = f"tensors[{min(items)}:{max(items) + 1}]"
        for t, lo, hi in pieces:
            # the whole chunks, then the partial last one: two boxes (no guard, so a
            # symbolic size is counted without enumerating its chunks)
            c0, whole = lo // CHUNK, (hi - lo) // CHUNK
            rest = hi - lo - whole * CHUNK
            for first, count, length in ((0, whole, CHUNK), (whole, 1, rest)):
                if not count or not length:
                    continue
                e = (Affine.of("c") + first) * CHUNK + "j" + lo
                x = ctx.load(flats[t], [e], "float32")
                term = call("abs", x) if p != 2 else call("square", x)
                ctx.statement(
                    [("c", count), ("j", length, True)],
                    partial,
                    [t, Affine.of("c") + c0 + first],
                    term,
                    reduce=reduce,
                    dtype="float32",
                )
    ctx.begin_kernel()
    for t, (x, o) in enumerate(zip(tensors, outs, strict=True)):
        nc = -(-x.numel // CHUNK)
        total = ctx.local(f"total{t}", (), "float32")
        ctx.statement([("c", nc, True)], total, [], ctx.load(partial, [t, "c"]), reduce=reduce)
        v = ctx.load(total, [])
        v = call("sqrt", v) if p == 2 else v
        ctx.statement([], o, [], call("cast", v, dtype=o.dtype), dtype="float32")


# ---------------------------------------------------------------------------------------------
# Fused optimizers


@lowering(aten._fused_adam_.default, aten._fused_adamw_.default, aten._fused_adam_.tensor_lr)
@lowering(aten._fused_adamw_.tensor_lr)
def fused_adam(
    ctx: LoweringContext,
    params: list[T],
    grads: list[T],
    exp_avgs: list[T],
    exp_avg_sqs: list[T],
    max_exp_avg_sqs: list[T],
    steps: list[T],
    lr,
    beta1: float,
    beta2: float,
    weight_decay: float,
    eps: float,
    amsgrad: bool,
    maximize: bool,
    grad_scale=None,
    found_inf=None,
) -> None:
    """``FusedAdamMathFunctor``: per element, in float32 (``opmath``)::

        g = ±grad (/ grad_scale);  (Adam: g += wd·p;  AdamW: p -= lr·wd·p)
        m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;  (amsgrad: vmax = max(vmax, v))
        p -= lr / (1 − β1^step) · m / (sqrt(v or vmax) / sqrt(1 − β2^step) + eps)

    with the bias corrections computed once per tensor from its device step count.
    """
    if found_inf is not None or grad_scale is not None:
        ctx.fail("with grad_scale/found_inf (AMP gradient scaling) is not supported")
    adamw = ctx.op.overloadpacket.__name__.startswith("_fused_adamw")
    lists = [params, grads, exp_avgs, exp_avg_sqs] + ([max_exp_avg_sqs] if amsgrad else [])
    bc1, bc2 = {}, {}

    def per_tensor(t: int) -> None:
        step = ctx.load(steps[t], [], "float32")
        bc1[t] = _local_scalar(
            ctx, f"bc1_{t}", call("sub", Const(1), call("pow", Const(beta1), step))
        )
        bc2[t] = _local_scalar(
            ctx, f"bc2_{t}", call("sqrt", call("sub", Const(1), call("pow", Const(beta2), step)))
        )

    def lr_of(t: int) -> Expr:
        return ctx.load(lr, [], "float32") if isinstance(lr, T) else Const(float(lr))

    _emit_adam(ctx, lists, per_tensor, bc1, bc2, lr_of, beta1, beta2, weight_decay, eps,
               amsgrad, maximize, adamw)  # fmt: skip


def _emit_adam(ctx, lists, per_tensor, bc1, bc2, lr_of, b1, b2, wd, eps, amsgrad, maximize, adamw):
    """One kernel per launch; per piece the new ``m`` and ``v`` (and ``vmax``) go to
    kernel-local buffers (registers in CUDA), are stored, and update ``p``."""
    params = lists[0]
    flats = [[flat(ctx, x) for x in lst] for lst in lists]
    f = "float32"
    for pieces in launches([x.numel for x in params], len(lists)):
        k = ctx.begin_kernel()
        items = [pc[0] for pc in pieces]
        k.origin = f"tensors[{min(items)}:{max(items) + 1}]"
        for t, lo, hi in pieces:
            per_tensor(t)
            i, dims = Affine.of("i") + lo, [("i", hi - lo)]
            p, g, m, v = (ctx.load(flats[j][t], [i], f) for j in range(4))
            g = call("neg", g) if maximize else g
            if wd and not adamw:
                g = call("add", g, call("mul", p, Const(wd)))
            m_loc = ctx.local(f"m{t}_{lo}", (hi - lo,), f)
            v_loc = ctx.local(f"v{t}_{lo}", (hi - lo,), f)
            m_new = call("add", call("mul", Const(b1), m), call("mul", Const(1 - b1), g))
            v_sq = call("mul", Const(1 - b2), call("square", g))
            ctx.statement(dims, m_loc, ["i"], m_new, dtype=f)
            ctx.statement(dims, v_loc, ["i"], call("add", call("mul", Const(b2), v), v_sq), dtype=f)
            m_e, v_e = ctx.load(m_loc, ["i"]), ctx.load(v_loc, ["i"])
            ctx.statement(dims, flats[2][t], [i], _cast(m_e, lists[2][t].dtype), dtype=f)
            ctx.statement(dims, flats[3][t], [i], _cast(v_e, lists[3][t].dtype), dtype=f)
            if amsgrad:
                v_e = call("maximum", ctx.load(flats[4][t], [i], f), v_e)
                ctx.statement(dims, v_loc, ["i"], v_e, dtype=f)
                v_e = ctx.load(v_loc, ["i"])
                ctx.statement(dims, flats[4][t], [i], _cast(v_e, lists[4][t].dtype), dtype=f)
            lr = lr_of(t)
            if wd and adamw:
                p = call("sub", p, call("mul", call("mul", lr, Const(wd)), p))
            denom = call("add", call("div", call("sqrt", v_e), ctx.load(bc2[t], [])), Const(eps))
            step = call("div", lr, ctx.load(bc1[t], []))
            new_p = call("sub", p, call("mul", step, call("div", m_e, denom)))
            ctx.statement(dims, flats[0][t], [i], _cast(new_p, params[t].dtype), dtype=f)


def _cast(e: Expr, dtype: str) -> Expr:
    return e if dtype == "float32" else call("cast", e, dtype=dtype)


def _local_scalar(ctx: LoweringContext, stem: str, value: Expr) -> T:
    t = ctx.local(stem, (), "float32")
    ctx.statement([], t, [], value, dtype="float32")
    return t


@lowering(aten._fused_sgd_.default, aten._fused_sgd_.tensor_lr)
def fused_sgd(
    ctx: LoweringContext,
    params: list[T],
    grads: list[T],
    bufs: list[T],
    weight_decay: float,
    momentum: float,
    lr,
    dampening: float,
    nesterov: bool,
    maximize: bool,
    is_first_step: bool,
    grad_scale=None,
    found_inf=None,
) -> None:
    """``FusedSgdMathFunctor`` per element: ``g = ±grad + wd·p``; with momentum ``buf = g``
    (first step) or ``momentum·buf + (1−dampening)·g``, ``g = g + momentum·buf`` (nesterov)
    or ``buf``; ``p -= lr·g``."""
    if found_inf is not None or grad_scale is not None:
        ctx.fail("with grad_scale/found_inf (AMP gradient scaling) is not supported")
    use_buf = momentum != 0
    lists = [params, grads] + ([bufs] if use_buf else [])
    flats = [[flat(ctx, x) for x in lst] for lst in lists]
    for pieces in launches([x.numel for x in params], len(lists)):
        k = ctx.begin_kernel()
        items = [pc[0] for pc in pieces]
        k.origin = f"tensors[{min(items)}:{max(items) + 1}]"
        for t, lo, hi in pieces:
            i = Affine.of("i") + lo
            dims, f = [("i", hi - lo)], "float32"
            p, g = ctx.load(flats[0][t], [i], f), ctx.load(flats[1][t], [i], f)
            g = call("neg", g) if maximize else g
            if weight_decay:
                g = call("add", g, call("mul", p, Const(weight_decay)))
            if use_buf:
                old = ctx.load(flats[2][t], [i], f)
                buf = (
                    g
                    if is_first_step
                    else call(
                        "add",
                        call("mul", Const(momentum), old),
                        call("mul", Const(1 - dampening), g),
                    )
                )
                b_loc = ctx.local(f"buf{t}_{lo}", (hi - lo,), f)
                ctx.statement(dims, b_loc, ["i"], buf, dtype=f)
                b = ctx.load(b_loc, ["i"])
                ctx.statement(dims, flats[2][t], [i], _cast(b, bufs[t].dtype), dtype=f)
                g = call("add", g, call("mul", Const(momentum), b)) if nesterov else b
            lr_e = ctx.load(lr, [], f) if isinstance(lr, T) else Const(float(lr))
            new_p = call("sub", p, call("mul", lr_e, g))
            ctx.statement(dims, flats[0][t], [i], _cast(new_p, params[t].dtype), dtype=f)
