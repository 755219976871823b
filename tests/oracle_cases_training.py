"""Oracle cases for the training-step lowerings: the ``_foreach_*`` family, the fused
optimizers, ``lerp`` and the backward operators, registered into
:data:`oracle_cases_torch.CASES` (that module imports this one at its end).

The foreach family is table-driven: :func:`foreach_build` reads the operator's schema and
draws every argument by its type. All ``Tensor[]`` arguments share one list of drawn item
shapes (0-dim, 1-D, 2-D items; sometimes an empty one), each list laid out as separate
tensors, contiguous views (a reshape of a flat tensor, a row slice at an offset) or slices of
ONE flat buffer (as flattened parameters are); a later list is sometimes the first list again
(``_foreach_mul_(xs, xs)``). A ``Scalar`` is a number, a ``Scalar[]`` one number per item, a
``Tensor`` operand a 0-dim tensor (``scalars`` of ``addcmul``/``addcdiv``: 1-D, one per item).

``multi_tensor_apply`` boundaries (:func:`solar.frontend.torch.ops.optim.launches`): the
``crossing`` cases give an op one tensor more than its depth's tensor limit, so it launches
twice (checked by tracing the case once), and ``_foreach_norm``'s gets a tensor of more than
one 65536-element chunk. A tensor straddling two launches needs the block limit (2240 chunks,
147M elements with CUDA >= 13; 21M with the 4 KB table), far beyond what the oracle can
enumerate; ``test_training.py`` checks that rule of ``launches`` by hand instead.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import torch
from hypothesis import strategies as st
from oracle_cases_torch import (
    Draw,
    broadcast_partner,
    case,
    idx,
    rand,
    shape,
    viewed,
)

from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.frontend.torch.ops.optim import ARG_SPACE, CHUNK, LIMITS

aten = torch.ops.aten
solar_ops = torch.ops.solar

SCALARS = st.sampled_from([1, 2.0, 0.5, -1.5, 0.3, 0.7, 3])
DTYPES = st.sampled_from([torch.float32, torch.bfloat16])

# ------------------------------------------------------------------------- tensor lists


def item_shapes(draw: Draw) -> list[tuple[int, ...]]:
    """One to four item shapes; now and then an empty item."""
    shapes = [shape(draw, 0, 2) for _ in range(draw(st.integers(1, 4)))]
    if draw(st.integers(0, 5)) == 0:
        shapes[draw(st.integers(0, len(shapes) - 1))] = (0, 2)
    return shapes


Make = Callable[[Sequence[torch.Tensor]], list[torch.Tensor]]


def contiguous_view(draw: Draw, shp: tuple[int, ...]) -> tuple[tuple[int, ...], Callable]:
    """A storage shape and a contiguous view of it with shape ``shp`` (foreach kernels address
    dense tensors): itself, a reshape of a flat tensor, or a row slice at an offset."""
    kind = draw(st.sampled_from(["plain", "reshape", "rows"]))
    if kind == "reshape":
        return (math.prod(shp),), lambda x: x.view(shp)
    if kind == "rows" and shp:
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 1))
        return (lo + shp[0] + hi, *shp[1:]), lambda x: x[lo : lo + shp[0]]
    return shp, lambda x: x


def tensor_list(
    draw: Draw, shapes: Sequence[tuple[int, ...]], dtype: torch.dtype, layout: str | None = None
) -> tuple[list[torch.Tensor], Make]:
    """Storage tensors and the function making the list's items (views of them) from them."""
    layout = layout or draw(st.sampled_from(["separate", "views", "shared"]))
    if layout == "shared":  # slices of one flat buffer, with gaps between them
        numels = [math.prod(s) for s in shapes]
        gaps = [draw(st.integers(0, 2)) for _ in shapes]
        ends = list(itertools.accumulate(g + n for g, n in zip(gaps, numels, strict=True)))
        starts = [e - n for e, n in zip(ends, numels, strict=True)]
        total = ends[-1] + draw(st.integers(0, 1))

        def make_shared(bases):
            return [
                bases[0][a : a + math.prod(s)].view(s) for a, s in zip(starts, shapes, strict=True)
            ]

        return [rand((total,), dtype)], make_shared
    if layout == "views":
        stores, views = zip(*(contiguous_view(draw, s) for s in shapes), strict=True)
        return [rand(s, dtype) for s in stores], lambda bs: [
            v(b) for v, b in zip(views, bs, strict=True)
        ]
    return [rand(s, dtype) for s in shapes], list


# ---------------------------------------------------------------------------- foreach


Value = Callable[[Sequence[torch.Tensor]], object]  # an argument, from the case's inputs


def _constant(c: object) -> Value:
    return lambda xs: c


def _input(i: int) -> Value:
    return lambda xs: xs[i]


def _items(lo: int, n: int, make: Make) -> Value:
    return lambda xs: make(xs[lo : lo + n])


def foreach_build(op, shapes_of: Callable[[Draw], list] = item_shapes, layout=None):
    """A build for the foreach operator ``op``: its arguments drawn from its schema."""

    def build(draw: Draw):
        shapes = shapes_of(draw)
        dtype = draw(DTYPES)
        storages: list[torch.Tensor] = []
        args: list[tuple[str, bool, Value]] = []  # (name, kwarg-only, value)
        first_list: Value | None = None
        for a in op._schema.arguments:
            kind = str(a.type)
            if kind == "List[Tensor]":
                if first_list is not None and draw(st.integers(0, 4)) == 0:
                    value = first_list  # the same list again
                else:
                    bases, make = tensor_list(draw, shapes, dtype, layout)
                    value = _items(len(storages), len(bases), make)
                    storages += bases
                first_list = first_list or value
            elif kind == "Tensor":
                storages.append(rand((len(shapes),) if a.name == "scalars" else ()))
                value = _input(len(storages) - 1)
            elif kind == "number":
                value = _constant(draw(SCALARS))
            elif kind == "List[number]":
                value = _constant([draw(SCALARS) for _ in shapes])
            else:  # non_blocking
                continue
            args.append((a.name, a.kwarg_only, value))

        def fn(*xs):
            pos = [v(xs) for _, kw, v in args if not kw]
            return op(*pos, **{n: v(xs) for n, kw, v in args if kw})

        return fn, tuple(storages)

    return build


def _foreach_ops() -> list:
    from solar.frontend.torch import LOWERINGS

    return sorted(
        (k for k in LOWERINGS if str(k).startswith("aten._foreach_") and "norm" not in str(k)),
        key=str,
    )


# Scalars in a tensor: eager reads it on the host, fake tensors cannot run it (refused).
HOST_SCALARS = {
    getattr(aten, f"_foreach_{n}").Tensor for n in ("addcmul", "addcmul_", "addcdiv", "addcdiv_")
}
for _op in _foreach_ops():
    if _op in HOST_SCALARS:
        case(_op, examples=1, error=UnsupportedOperatorError)(foreach_build(_op))
    else:
        case(_op, examples=2)(foreach_build(_op))


def foreach_norm_build(op, shapes_of: Callable[[Draw], list] = item_shapes, layout=None):
    def build(draw: Draw):
        o = draw(st.sampled_from([1, 2, math.inf]))
        shapes = shapes_of(draw)
        if o == math.inf:  # PyTorch refuses the infinity norm of an empty tensor
            shapes = [s if math.prod(s) else (1,) for s in shapes]
        bases, make = tensor_list(draw, shapes, draw(DTYPES), layout)
        out = draw(st.sampled_from([None, torch.float32]))
        return (lambda *xs: op(make(xs), o, out)), tuple(bases)

    return build


case(aten._foreach_norm.Scalar, examples=3)(foreach_norm_build(aten._foreach_norm.Scalar))


# --------------------------------------------------------------------- fused optimizers


def _optimizer_lists(draw, shapes, names, dtype) -> tuple[list[torch.Tensor], list[Value]]:
    storages: list[torch.Tensor] = []
    makes = []
    for _ in names:
        bases, make = tensor_list(draw, shapes, dtype)
        makes.append(_items(len(storages), len(bases), make))
        storages += bases
    return storages, makes


def fused_adam_build(op, shapes_of: Callable[[Draw], list] = item_shapes, amsgrad=None):
    def build(draw: Draw):
        shapes = shapes_of(draw)
        ams = draw(st.booleans()) if amsgrad is None else amsgrad
        lists = ["params", "grads", "exp_avgs", "exp_avg_sqs"] + (["max_sqs"] if ams else [])
        storages, makes = _optimizer_lists(draw, shapes, lists, draw(DTYPES))
        steps = [rand(()).add(draw(st.integers(0, 5))) for _ in shapes]
        lr = rand(()) if "tensor_lr" in str(op) else draw(st.sampled_from([1e-3, 0.1]))
        kw = {
            "beta1": draw(st.sampled_from([0.9, 0.5])),
            "beta2": draw(st.sampled_from([0.999, 0.9])),
            "weight_decay": draw(st.sampled_from([0.0, 0.01])),
            "eps": 1e-8,
            "amsgrad": ams,
            "maximize": draw(st.booleans()),
        }
        n = len(storages)

        def fn(*xs):
            p, g, m, v, *vmax = (make(xs) for make in makes)
            rate = xs[-1] if isinstance(lr, torch.Tensor) else lr
            op(p, g, m, v, vmax[0] if vmax else [], list(xs[n : n + len(shapes)]), lr=rate, **kw)

        return fn, (*storages, *steps, *([lr] if isinstance(lr, torch.Tensor) else []))

    return build


def fused_sgd_build(op, shapes_of: Callable[[Draw], list] = item_shapes, momentum=None):
    def build(draw: Draw):
        shapes = shapes_of(draw)
        mom = draw(st.sampled_from([0.0, 0.9])) if momentum is None else momentum
        names = ["params", "grads"] + (["bufs"] if mom else [])
        storages, makes = _optimizer_lists(draw, shapes, names, draw(DTYPES))
        lr = rand(()) if "tensor_lr" in str(op) else draw(st.sampled_from([1e-3, 0.1]))
        kw = {
            "weight_decay": draw(st.sampled_from([0.0, 0.01])),
            "momentum": mom,
            "dampening": draw(st.sampled_from([0.0, 0.1])),
            "nesterov": bool(mom) and draw(st.booleans()),
            "maximize": draw(st.booleans()),
            "is_first_step": draw(st.booleans()),
        }

        def fn(*xs):
            p, g, *bufs = (make(xs) for make in makes)
            rate = xs[-1] if isinstance(lr, torch.Tensor) else lr
            op(p, g, bufs[0] if bufs else [], lr=rate, **kw)

        return fn, (*storages, *([lr] if isinstance(lr, torch.Tensor) else []))

    return build


for _op in (aten._fused_adam_, aten._fused_adamw_):
    for _overload in ("default", "tensor_lr"):
        case(getattr(_op, _overload), examples=4)(fused_adam_build(getattr(_op, _overload)))
for _overload in ("default", "tensor_lr"):
    case(getattr(aten._fused_sgd_, _overload), examples=4)(
        fused_sgd_build(getattr(aten._fused_sgd_, _overload))
    )


# ------------------------------------------------------------- launch boundaries crossed


def crossing(op, build_of: Callable, depth: int, scalar_list: bool = False, big: int = 0):
    """A case giving ``op`` (of ``depth`` tensor lists) one one-element tensor more than its
    tensor limit, after a drawn item (and ``big`` elements more than a chunk in one tensor):
    two launches. The build checks, by tracing, that the program launches ``op`` twice."""
    limit = LIMITS[ARG_SPACE]["scalars" if scalar_list else "tensors"][depth - 1]

    def shapes_of(draw):
        return [*([(CHUNK + big,)] if big else []), shape(draw, 0, 2), *[(1,)] * limit]

    inner = build_of(op, shapes_of)

    def build(draw):
        fn, inputs = inner(draw)
        kernels = trace_torch(fn, inputs).program.kernels
        launched = sum(k.op == str(op) for k in kernels)
        assert launched >= 2 + (op == aten._foreach_norm.Scalar), f"{op}: {launched} kernels"
        return fn, inputs

    case(op, examples=1)(build)


def _separate(build_of):
    return lambda op, shapes_of, **kw: build_of(op, shapes_of, layout="separate", **kw)


crossing(aten._foreach_add_.Scalar, _separate(foreach_build), depth=1)
crossing(aten._foreach_addcdiv_.ScalarList, foreach_build, depth=3, scalar_list=True)
crossing(aten._foreach_lerp.List, foreach_build, depth=4)
crossing(aten._fused_adamw_.default, lambda op, s: fused_adam_build(op, s, amsgrad=True), 5)
crossing(aten._fused_sgd_.default, lambda op, s: fused_sgd_build(op, s, momentum=0.9), 3)
crossing(aten._foreach_norm.Scalar, _separate(foreach_norm_build), depth=1, big=7)  # 2 chunks


# ------------------------------------------------------------------------------- lerp


@case(aten.lerp.Scalar)
def _lerp_scalar(draw):
    shp = shape(draw)
    store, view = viewed(draw, shp)
    w = draw(st.sampled_from([0.3, 0.7, -0.2, 1.5]))
    end = rand(broadcast_partner(draw, shp))
    return (lambda a, b: aten.lerp.Scalar(view(a), b, w)), (rand(store), end)


@case(aten.lerp.Tensor)
def _lerp_tensor(draw):
    shp = shape(draw)
    store, view = viewed(draw, shp)
    end, w = rand(broadcast_partner(draw, shp)), rand(broadcast_partner(draw, shp))
    return (lambda a, b, w: aten.lerp.Tensor(view(a), b, w)), (rand(store), end, w)


# ------------------------------------------------------------------ pointwise backward


def _grad_and_input(draw: Draw, dtype=torch.float32):
    """A gradient (maybe a zero-stride expand, as the gradient of a sum is) and an input of
    one drawn shape, each through a drawn view: (storages, views)."""
    shp = shape(draw)
    (gs, gv), (xs, xv) = viewed(draw, shp), viewed(draw, shp)
    return (rand(gs, dtype), rand(xs, dtype)), (gv, xv)


for _op, _extra, _kw in (
    (aten.threshold_backward.default, (st.sampled_from([0.0, 0.4]),), {}),
    (aten.gelu_backward.default, (), {"approximate": st.sampled_from(["none", "tanh"])}),
    (aten.silu_backward.default, (), {}),
    (aten.sigmoid_backward.default, (), {}),
    (aten.tanh_backward.default, (), {}),
):

    def _pointwise_grad(draw, op=_op, extra=_extra, kwargs=_kw):
        (g, x), (gv, xv) = _grad_and_input(draw, draw(DTYPES))
        static = [draw(e) for e in extra]
        kw = {k: draw(v) for k, v in kwargs.items()}
        return (lambda g, x: op(gv(g), xv(x), *static, **kw)), (g, x)

    case(_op)(_pointwise_grad)


@case(aten.mse_loss_backward.default)
def _mse_backward(draw):
    (_, x), (_, xv) = _grad_and_input(draw)
    shp = xv(x).shape
    red = draw(st.integers(0, 2))
    g = rand(shp if red == 0 else ())
    target = rand(tuple(shp))
    return (lambda g, x, t: aten.mse_loss_backward.default(g, xv(x), t, red)), (g, x, target)


for _op in (aten._softmax_backward_data.default, aten._log_softmax_backward_data.default):

    def _softmax_grad(draw, op=_op):
        dtype = draw(DTYPES)
        (g, y), (gv, yv) = _grad_and_input(draw, dtype)
        d = draw(st.integers(-1, yv(y).ndim - 1))
        return (lambda g, y: op(gv(g), yv(y), d, dtype)), (g, y)

    case(_op)(_softmax_grad)


# --------------------------------------------------------------- normalization backward


def _output_mask(draw: Draw, *possible: bool) -> list[bool]:
    """Which gradients to compute: each possible one drawn, at least one."""
    mask = [p and draw(st.booleans()) for p in possible]
    if not any(mask):
        mask[0] = True
    return mask


@case(aten.native_layer_norm_backward.default)
def _layer_norm_backward(draw):
    shp = shape(draw, 1, 3)
    k = draw(st.integers(1, len(shp)))
    ns, lead = list(shp[-k:]), shp[:-k]
    stats = (*lead, *[1] * k)
    w, b = (rand(tuple(ns)) if draw(st.booleans()) else None for _ in range(2))
    mask = _output_mask(draw, True, w is not None, b is not None)
    g_store, gv = viewed(draw, shp)

    def fn(g, x, mean, rstd, w, b):
        return aten.native_layer_norm_backward.default(gv(g), x, ns, mean, rstd, w, b, mask)

    return fn, (rand(g_store), rand(shp), rand(stats), rand(stats), w, b)


def _bn_backward_inputs(draw: Draw):
    shp = (draw(st.integers(1, 3)), draw(st.integers(1, 3)), *shape(draw, 0, 2))
    c = (shp[1],)
    return shp, [rand(c) for _ in range(5)]


@case(aten.native_batch_norm_backward.default)
def _batch_norm_backward(draw):
    shp, (w, rm, rv, sm, si) = _bn_backward_inputs(draw)
    train = draw(st.booleans())
    w = w if draw(st.booleans()) else None
    rm, rv = (rm, rv) if not train or draw(st.booleans()) else (None, None)
    mask = _output_mask(draw, True, True, True)
    g_store, gv = viewed(draw, shp)

    def fn(g, x, w, rm, rv, sm, si):
        return aten.native_batch_norm_backward.default(
            gv(g), x, w, rm, rv, sm, si, train, 1e-5, mask
        )

    return fn, (rand(g_store), rand(shp), w, rm, rv, sm, si)


@case(aten.cudnn_batch_norm_backward.default)
def _cudnn_batch_norm_backward(draw):
    shp, (w, rm, rv, sm, sv) = _bn_backward_inputs(draw)
    reserve = torch.empty(0, dtype=torch.uint8)

    def fn(x, g, w, rm, rv, sm, sv, r):
        return aten.cudnn_batch_norm_backward.default(x, g, w, rm, rv, sm, sv, 1e-5, r)

    return fn, (rand(shp), rand(shp), w, rm, rv, sm, sv, reserve)


@case(solar_ops.rms_norm_backward.default)
def _rms_norm_backward(draw):
    shp = shape(draw, 1, 3)
    ns = list(shp[-draw(st.integers(1, len(shp))) :])
    w = rand(tuple(ns)) if draw(st.booleans()) else None
    eps = draw(st.sampled_from([None, 1e-6]))
    dtype = draw(DTYPES)

    def fn(g, x, w):
        return solar_ops.rms_norm_backward.default(g, x, ns, w, eps)

    return fn, (rand(shp, dtype), rand(shp, dtype), w if w is None else w.to(dtype))


# -------------------------------------------------------------------- scatter backward


@case(aten.embedding_dense_backward.default)
def _embedding_backward(draw):
    v, d = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    ids = idx(v, shape(draw, 1, 2))
    pad = draw(st.sampled_from([-1, 0, v - 1]))

    def fn(g, i):
        return aten.embedding_dense_backward.default(g, i, v, pad, False)

    return fn, (rand((*ids.shape, d)), ids)


@case(aten.nll_loss_backward.default)
def _nll_backward(draw):
    c = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (draw(st.integers(1, 4)),)]))
    red, ignore = draw(st.integers(0, 2)), draw(st.sampled_from([-100, 0]))
    w = rand((c,)) if draw(st.booleans()) else None
    g = rand(batch if red == 0 else ())

    def fn(g, x, t, w, total):
        return aten.nll_loss_backward.default(g, x, t, w, red, ignore, total)

    return fn, (g, rand((*batch, c)), idx(c, batch), w, rand(()))


@case(aten.nll_loss2d_backward.default)
def _nll2d_backward(draw):
    n, c, h, w_ = (draw(st.integers(1, 3)) for _ in range(4))
    red, ignore = draw(st.integers(0, 2)), draw(st.sampled_from([-100, 0]))
    w = rand((c,)) if draw(st.booleans()) else None
    g = rand((n, h, w_) if red == 0 else ())

    def fn(g, x, t, w, total):
        return aten.nll_loss2d_backward.default(g, x, t, w, red, ignore, total)

    return fn, (g, rand((n, c, h, w_)), idx(c, (n, h, w_)), w, rand(()))


for _fwd, _bwd, _nsp in (
    (aten.max_pool2d_with_indices, aten.max_pool2d_with_indices_backward, 2),
    (aten.max_pool3d_with_indices, aten.max_pool3d_with_indices_backward, 3),
):

    def _max_pool_backward(draw, fwd=_fwd.default, op=_bwd.default, nsp=_nsp):
        """The indices are the forward's on the same input (as autograd saves them)."""
        k = [draw(st.integers(1, 3)) for _ in range(nsp)]
        s = [draw(st.integers(1, 3)) for _ in range(nsp)]
        p = [draw(st.integers(0, kk // 2)) for kk in k]
        d = [draw(st.integers(1, 2)) for _ in range(nsp)]
        size = [draw(st.integers(dd * (kk - 1) + 1, dd * (kk - 1) + 3)) for kk, dd in zip(k, d)]
        ceil = draw(st.booleans())
        lead = (draw(st.integers(1, 2)),) * draw(st.integers(0, 1)) + (2,)
        x = rand((*lead, *size))
        out, indices = fwd(x, k, s, p, d, ceil)
        return (lambda g, x, i: op(g, x, k, s, p, d, ceil, i)), (rand(out.shape), x, indices)

    case(_bwd.default, examples=6)(_max_pool_backward)


# ---------------------------------------------------------------- convolution backward


@case(aten.convolution_backward.default, examples=25)
def _conv_backward(draw):
    nsp = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    side = {1: 7, 2: 5, 3: 3}[nsp]
    k = [draw(st.integers(1, 3)) for _ in range(nsp)]
    stride = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dil = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pad = [draw(st.integers(0, kk // 2 + 1)) for kk in k]
    size = [
        max(draw(st.integers(1, side)), dil[i] * (k[i] - 1) + 1 - 2 * pad[i]) for i in range(nsp)
    ]
    out = [(size[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    n = draw(st.integers(1, 2))
    mask = _output_mask(draw, True, True, True)
    bias = [cout] if mask[2] else None

    def fn(g, x, w):
        return aten.convolution_backward.default(
            g, x, w, bias, stride, pad, dil, False, [0] * nsp, groups, mask
        )

    return fn, (rand((n, cout, *out)), rand((n, cin, *size)), rand((cout, cin // groups, *k)))


# ------------------------------------------------------------------ attention backward


@case(solar_ops.sdpa_backward.default, examples=12)
def _sdpa_backward(draw):
    b, h, lq, lk, e, ev = (draw(st.integers(1, 3)) for _ in range(6))
    gqa = draw(st.booleans()) and h > 1
    kvh = 1 if gqa else h
    causal = draw(st.booleans())
    mask = None
    if not causal and draw(st.booleans()):
        mask = rand((lq, lk), torch.bool) if draw(st.booleans()) else rand((1, h, lq, lk))
    scale = draw(st.sampled_from([None, 0.3]))
    q, k, v = rand((b, h, lq, e)), rand((b, kvh, lk, e)), rand((b, kvh, lk, ev))
    g, o = rand((b, h, lq, ev)), rand((b, h, lq, ev))

    def fn(g, q, k, v, o, m):
        return solar_ops.sdpa_backward.default(g, q, k, v, o, m, 0.0, causal, scale, gqa)

    return fn, (g, q, k, v, o, mask)
