"""Calls and control flow, lowered in place.

- Calls (``jit``/``pjit``, ``closed_call``, ``core_call``, ``remat``/``checkpoint``,
  ``custom_jvp_call``, ``custom_vjp_call``): the body (the primal computation) is inlined; its
  equations become units like any other.
- ``scan``: cost = trip count x body. Two forms, same numbers and the same fused bound:

  * unrolled (``length`` copies of the body; what ``"auto"`` does while length x body
    equations <= :data:`UNROLL_BUDGET`): carries are loop state passed from one iteration to
    the next (updated in place when the body allows it), ``xs`` are read as slices ``xs[i]``
    (views), each iteration writes its ``ys`` slice straight into the stacked output, and
    known loop counters stay known (static slices). The unfused bound charges each
    iteration's kernels, as XLA's while loop launches them.
  * one looped kernel (``Kernel.loops``, :func:`scan_loop`; longer scans, or
    ``trace_jax(..., scan="loop")``): compact IR, and the whole loop is one kernel in the
    unfused bound (a looser lower bound). Nested scans inside it are unrolled; a body that
    cannot live in one looped kernel falls back to unrolling, with a note.
- ``while``: unrolled while its predicate is known at trace time (``fori_loop`` with static
  bounds, counters starting from constants); a predicate that depends on traced array values
  is a one-line error.
- ``cond``: a branch index known while tracing lowers that branch. Otherwise every branch is
  lowered on a scratch copy of the program and costed (operations per op class, DRAM bytes of
  its equations run one kernel each); the branch that is cheapest in every one of them is used,
  which keeps every bound a lower bound. If no branch dominates, the one with the fewest DRAM
  bytes (then fewest operations) is used and a note in the trace's ``assumptions`` says the
  bound holds for that branch. Either way, validation is exact only on inputs that take the
  chosen branch.
"""

from __future__ import annotations

from collections import Counter

from solar.frontend.jax.lower import Lowerer, LoweringContext, V, ir_dtype
from solar.frontend.jax.registry import DataDependentError, lowering
from solar.frontend.layout import dims_of, nest
from solar.ir.affine import Affine
from solar.ir.cost import kernel_io, statement_ops
from solar.ir.program import Dim, Guard, Program, ProgramBuilder, Statement

CALLS = {
    "pjit": "jaxpr",
    "jit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "remat": "jaxpr",
    "remat2": "jaxpr",
    "checkpoint": "jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_jvp_call_jaxpr": "fun_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "custom_lin": None,
}

MAX_TRIPS = 100_000


@lowering(*[c for c, p in CALLS.items() if p], kind="control")
def call(ctx: LoweringContext, *args: V, **params: object) -> None:
    body = params.get(CALLS[ctx.prim] or "") or params.get("call_jaxpr") or params.get("jaxpr")
    if body is None:
        ctx.fail("has no body jaxpr to inline")
    inner = getattr(body, "jaxpr", body)
    n = len(inner.invars)  # type: ignore[attr-defined]
    args = args[len(args) - n :]  # custom_* calls may pass consts first, counted in the body
    owned = [ctx.operand_dead(len(ctx.ins) - n + i) for i in range(n)]
    for i, v in enumerate(ctx.lower_jaxpr(body, args, owned=owned)):
        ctx.bind_out(i, v)


UNROLL_BUDGET = 2048  # "auto": unroll a scan when length x body equations is at most this


@lowering("scan", kind="control")
def scan(
    ctx: LoweringContext,
    *args: V,
    jaxpr,
    length: int,
    reverse: bool = False,
    num_consts: int | None = None,
    num_carry: int | None = None,
    ft_in=None,
    **_: object,
) -> None:
    if num_consts is None or num_carry is None:  # JAX >= 0.11: the operands' (consts, carry,
        num_consts, num_carry = (len(list(g)) for g in ft_in.elts[:2])  # xs) as a flat tree
    lw = ctx.lowerer
    body_eqns = len(getattr(jaxpr, "jaxpr", jaxpr).eqns)
    loop = lw.scan_mode == "loop" or (
        lw.scan_mode == "auto" and length * max(body_eqns, 1) > UNROLL_BUDGET
    )
    if loop and length > 1 and not lw.in_loop and not lw.scratch:
        snap = lw.snapshot()
        try:
            scan_loop(ctx, list(args), jaxpr, length, reverse, num_consts, num_carry)
            return
        except (ValueError, TypeError) as e:  # not expressible as one looped kernel: unroll
            lw.restore(snap)
            ctx.reset_outs()
            lw.notes.append(f"scan at {ctx.source or '?'} unrolled ({e})")
    scan_unrolled(ctx, list(args), jaxpr, length, reverse, num_consts, num_carry)


def scan_unrolled(ctx, args, jaxpr, length, reverse, num_consts, num_carry) -> None:
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = list(args[num_consts + num_carry :])
    n_ys = len(ctx.out_avals) - num_carry
    ys = [ctx.out(num_carry + k, stem="scan_ys") for k in range(n_ys)]
    owned = [ctx.operand_dead(num_consts + k) for k in range(num_carry)]
    for step in range(length):
        i = length - 1 - step if reverse else step
        x_i = [slice_leading(ctx, x, i) for x in xs]
        dests = {num_carry + k: leading_view(ctx, y, i) for k, y in enumerate(ys)}
        outs = ctx.lower_jaxpr(
            jaxpr,
            [*consts, *carry, *x_i],
            owned=[False] * num_consts + owned + [False] * len(xs),
            dests=dests,
        )
        carry = outs[:num_carry]
        owned = [v.owned for v in carry]
    for k, v in enumerate(carry):
        ctx.bind_out(k, v)
    last = len(ctx.lowerer.units) - 1
    for k, y in enumerate(ys):  # written by the iterations: produced by the last unit so far
        ctx.bind_out(num_carry + k, V(y.shape, y.dtype, y, owned=True, producer=last))


# A loop nest of the looped scan kernel, before it is a Statement:
# (dims, out tensor, index, expr, guards)
_Nest = tuple


def scan_loop(ctx, args, jaxpr, length, reverse, num_consts, num_carry) -> None:
    """The scan as ONE kernel with a sequential loop ``t < length`` (``Kernel.loops``)::

        c_hist[0] = init                       (t == 0 only)
        c_buf = c_hist[t];  x_buf = xs[i]      (i = t, or length-1-t when reversed)
        ... the body, on c_buf, x_buf and the consts ...
        c_hist[t+1] = new_carry;  ys[i] = y;  final = new_carry   (t == length-1 only)

    The carry history makes every iteration's values new (the cost of the body is counted
    ``length`` times); it lives on chip (kernel-local), so DRAM traffic is xs, consts and the
    initial carry read once, ys and the final carry written once."""
    consts = list(args[:num_consts])
    init = list(args[num_consts : num_consts + num_carry])
    xs = list(args[num_consts + num_carry :])
    t = Affine.of("t")
    step = Affine.of(length - 1) - t if reverse else t
    first, last = Guard(t, 0, 1), Guard(t, length - 1, length)
    pre, c_hist, c_buf, x_buf = _scan_inputs(ctx, init, xs, length, step, first)
    outs, body = _scan_body(ctx, jaxpr, consts, c_buf, x_buf)
    post = _scan_results(ctx, outs, c_hist, num_carry, step, last)
    _emit_scan_kernel(ctx, length, pre, body, post)


def _scan_inputs(
    ctx: LoweringContext, init: list[V], xs: list[V], length: int, step: Affine, first: Guard
) -> tuple[list[_Nest], list, list, list]:
    """The carry history ``c_hist`` (``length + 1`` states, ``init`` stored at the first
    step), the per-iteration buffers the body reads (``c_buf = c_hist[t]``, ``x_buf =
    xs[step]``), and the nests that fill them at the top of every iteration."""
    lw = ctx.lowerer
    pre: list[_Nest] = []
    c_hist, c_buf = [], []
    for c in init:
        dt = _dtype(c)
        hist = lw.fresh_tensor("scan_carry_hist", (length + 1, *c.shape), dt)
        buf = lw.fresh_tensor("scan_carry", c.shape, dt)
        d = dims_of(c.shape)
        pre.append((nest(d, c.shape), hist, [0, *d], ctx.operand(c, d, dt), [first]))
        pre.append((nest(d, c.shape), buf, d, ctx.load(hist, ["t", *d]), []))
        c_hist.append(hist)
        c_buf.append(buf)
    x_buf = []
    for x in xs:
        shape = x.shape[1:]
        buf = lw.fresh_tensor("scan_x", shape, _dtype(x))
        d = dims_of(shape)
        pre.append((nest(d, shape), buf, d, ctx.load(ctx.tensor(x), [step, *d]), []))
        x_buf.append(buf)
    return pre, c_hist, c_buf, x_buf


def _scan_body(
    ctx: LoweringContext, jaxpr, consts: list[V], c_buf: list, x_buf: list
) -> tuple[list[V], list[Statement]]:
    """Lower the body once on the buffers (the carries owned, so updated in place where the
    body allows it); returns its results and its statements, taken out of the units the body
    lowered into (they run inside the loop kernel)."""
    lw = ctx.lowerer
    start = len(lw.units)
    lw.in_loop = True
    try:
        outs = ctx.lower_jaxpr(
            jaxpr,
            [
                *consts,
                *(V(b.shape, b.dtype, b, owned=True) for b in c_buf),
                *(V(b.shape, b.dtype, b) for b in x_buf),
            ],
            owned=[False] * len(consts) + [True] * len(c_buf) + [False] * len(x_buf),
        )
    finally:
        lw.in_loop = False
    body = [st for u in lw.units[start:] for st in u.kernel.statements]
    for u in lw.units[start:]:
        u.kernel.statements = []
    return outs, body


def _scan_results(
    ctx: LoweringContext, outs: list[V], c_hist: list, num_carry: int, step: Affine, last: Guard
) -> list[_Nest]:
    """The nests at the bottom of every iteration: the new carry into ``c_hist[t+1]`` (and
    into the final carry at the last step), each ``y`` into ``ys[step]``."""
    post: list[_Nest] = []
    finals = [ctx.out(k) for k in range(num_carry)]
    for k, v in enumerate(outs[:num_carry]):
        d = dims_of(v.shape)
        post.append(
            (
                nest(d, v.shape),
                c_hist[k],
                [Affine.of("t") + 1, *d],
                ctx.operand(v, d, c_hist[k].dtype),
                [],
            )
        )
        post.append((nest(d, v.shape), finals[k], d, ctx.operand(v, d, finals[k].dtype), [last]))
    for k, v in enumerate(outs[num_carry:]):
        y = ctx.out(num_carry + k, stem="scan_ys")
        d = dims_of(v.shape)
        post.append((nest(d, v.shape), y, [step, *d], ctx.operand(v, d, y.dtype), []))
    return post


def _emit_scan_kernel(
    ctx: LoweringContext, length: int, pre: list[_Nest], body: list[Statement], post: list[_Nest]
) -> None:
    """One unit (kernel) looped over ``t < length``: the input nests, the body, the result
    nests (a nest with an empty dim runs nothing and is skipped); it produces every output."""
    lw = ctx.lowerer
    unit = lw.begin_unit("scan", "loop", ctx.source, ctx.module, loops=(Dim("t", length),))

    def add(dims, out, index, expr, guards) -> None:
        dims = [Dim(*x) for x in dims]
        if any(x.extent == 0 for x in dims):
            return
        lw.builder.statement(dims, (out.name, index), expr, guards=guards, kernel=unit.kernel)

    for item in pre:
        add(*item)
    for st in body:
        lw.emit(unit, st)
    for item in post:
        add(*item)
    for v in ctx.outs():
        v.producer = unit.index


def _dtype(v: V) -> str:
    return ir_dtype(v.dtype, "a scan carry")


def leading_view(ctx: LoweringContext, y, i: int):
    """``y[i]`` as a view (the slot iteration ``i`` writes)."""
    _, strides, offset = ctx.lowerer.layout(y)
    return ctx.view(y, y.shape[1:], strides[1:], offset + i * strides[0], "scan_y")


def slice_leading(ctx: LoweringContext, x: V, i: int) -> V:
    """``x[i]``: a view of a tensor, a slice of a known value."""
    if x.known is not None and x.t is None:
        return V(x.shape[1:], x.dtype, known=x.known[i])
    t = ctx.tensor(x)
    _, strides, offset = ctx.lowerer.layout(t)
    v = ctx.view(t, x.shape[1:], strides[1:], offset + i * strides[0], "scan_x")
    return V(x.shape[1:], x.dtype, v, producer=x.producer)


@lowering("while", kind="control")
def while_loop(
    ctx: LoweringContext,
    *args: V,
    cond_jaxpr,
    body_jaxpr,
    cond_nconsts: int,
    body_nconsts: int,
    **_: object,
) -> None:
    cconsts = list(args[:cond_nconsts])
    bconsts = list(args[cond_nconsts : cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts :])
    base = cond_nconsts + body_nconsts
    owned = [ctx.operand_dead(base + k) for k in range(len(carry))]
    for _trip in range(MAX_TRIPS + 1):
        (pred,) = ctx.lower_jaxpr(cond_jaxpr, [*cconsts, *carry])
        p = pred.scalar()
        if p is None:
            raise DataDependentError(
                "while",
                ctx.source,
                "its trip count depends on traced values: the predicate is not known while "
                "tracing (use fori_loop/scan with static bounds)",
            )
        if not p:
            break
        carry = ctx.lower_jaxpr(
            body_jaxpr, [*bconsts, *carry], owned=[False] * body_nconsts + owned
        )
        owned = [v.owned for v in carry]
    else:
        ctx.fail(f"runs more than {MAX_TRIPS} iterations")
    for k, v in enumerate(carry):
        ctx.bind_out(k, v)


@lowering("cond", kind="control")
def cond(ctx: LoweringContext, index: V, *args: V, branches, **_: object) -> None:
    k = index.scalar()
    if k is not None:
        chosen = min(max(int(k), 0), len(branches) - 1)
    else:
        costs = [branch_cost(ctx, b, list(args)) for b in branches]
        chosen = cheapest(ctx, costs)
    for i, v in enumerate(ctx.lower_jaxpr(branches[chosen], list(args))):
        ctx.bind_out(i, v)


def branch_cost(ctx: LoweringContext, branch: object, args: list[V]) -> dict[str, int]:
    """Operations per op class and DRAM bytes of lowering ``branch`` (one kernel per equation),
    on a scratch copy of the program that is then discarded."""
    lw = ctx.lowerer
    scratch = Lowerer(lw.program.name, lw.policy)
    scratch.scratch = True
    p = lw.program
    scratch.builder = _fork(lw.builder)
    scratch.base_refs = Counter(lw.base_refs)
    scratch.equations = lw.equations
    scratch_args = [V(a.shape, a.dtype, a.t, a.known) for a in args]
    jaxpr = getattr(branch, "jaxpr", branch)
    consts = [scratch.known_value(c) for c in getattr(branch, "consts", ())]
    scratch.lower_jaxpr(jaxpr, consts, scratch_args, scope=ctx.module, source=ctx.source)
    prog = scratch.program
    total: Counter[str] = Counter()
    for k in prog.kernels[len(p.kernels) :]:
        for st in k.statements:
            total.update(statement_ops(prog, st, k))
        total["dram_bytes"] += kernel_io(prog, k).bytes
    return dict(total)


def _fork(b: ProgramBuilder) -> ProgramBuilder:
    f = ProgramBuilder(b.program.name)
    p = b.program
    f.program = Program(
        p.name,
        dict(p.tensors),
        list(p.kernels),
        list(p.inputs),
        list(p.outputs),
        dict(p.constants),
    )
    f._counts = dict(b._counts)  # type: ignore[attr-defined]
    return f


def cheapest(ctx: LoweringContext, costs: list[dict[str, int]]) -> int:
    keys = sorted({k for c in costs for k in c})
    for i, c in enumerate(costs):
        if all(all(c.get(k, 0) <= o.get(k, 0) for k in keys) for o in costs):
            return i
    order = sorted(
        range(len(costs)),
        key=lambda i: (costs[i].get("dram_bytes", 0), sum(costs[i].values())),
    )
    ctx.lowerer.notes.append(
        f"cond at {ctx.source or '?'}: no branch is cheapest in every unit; the bound uses "
        f"branch {order[0]} (fewest DRAM bytes), which is a lower bound only for inputs "
        "that take it"
    )
    return order[0]
