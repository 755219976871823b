"""Oracle cases for the lowerings that model graphs reach beyond single aten kernels: the
``<view>_copy`` packets (functionalized graphs, ``torch.export``), ``as_strided_`` and
``as_strided_scatter``, the random operators, the kernels of PyTorch's fused transformer path
(``_addmm_activation``, ``_transform_bias_rescale_qkv``, ``_masked_softmax``) and the RNN cell
kernels (``solar.lstm_cell``, ``solar.gru_cell``), registered into
:data:`oracle_cases_torch.CASES` (that module imports this one at its end).

The view copies are table-driven: :data:`VIEW_ARGS` draws, for an input shape, the overload and
arguments of each view (``squeeze_copy.dim``/``.dims``, ``split_copy.Tensor``, ...), and one
builder calls the copy on a view of the input (contiguous, transposed, strided, expanded), so
``view_copy`` also meets inputs no view can reshape (torch's reshape copy). A packet's registry
key (``aten.view_copy``) is covered by a traced overload of it (``aten.view_copy.default``).

The random operators are tables too: :data:`FACTORIES` (sizes in, a fresh tensor out) and
:data:`RANDOM` (tensor operands: ``_like`` forms, in-place fills of a view of the input,
``bernoulli``/``normal`` with tensor parameters), each argument drawn by its kind. Every operator
with a ``generator`` argument gets a ``torch.Generator`` (always for the ``.generator``
overloads, now and then otherwise). Values do not enter the counts (a value drawn is one
``random`` op of its position), so only shapes, dtypes and parameters are drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from hypothesis import strategies as st
from oracle_cases_torch import Draw, broadcast_partner, case, rand, shape, viewed

aten = torch.ops.aten
solar_ops = torch.ops.solar


def view_of(draw: Draw, shp: tuple[int, ...]) -> tuple[tuple[int, ...], Callable]:
    """:func:`oracle_cases_torch.viewed`, a 0-dim shape as itself."""
    return viewed(draw, shp) if shp else ((), lambda x: x)


def dim(draw: Draw, shp: tuple[int, ...]) -> int:
    return draw(st.integers(-len(shp), len(shp) - 1))


def composition(draw: Draw, n: int) -> list[int]:
    """Positive parts summing to ``n`` (one part ``0`` now and then)."""
    parts = []
    while n > 0:
        parts.append(draw(st.integers(1, n)))
        n -= parts[-1]
    if draw(st.integers(0, 3)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), 0)
    return parts


def strided(draw: Draw, numel: int) -> tuple[list[int], list[int], int]:
    """Sizes, strides (0 and overlaps included) and a storage offset of an ``as_strided``
    view inside a storage of ``numel`` elements."""
    sizes, strides, room = [], [], numel - 1
    for _ in range(draw(st.integers(1, 3))):
        stride = draw(st.integers(0, 3))
        size = draw(st.integers(1, min(4, 1 + room // stride) if stride else 3))
        room -= (size - 1) * stride
        sizes.append(size)
        strides.append(stride)
    return sizes, strides, draw(st.integers(0, room))


# ----------------------------------------------------------------------- view copies


def _view(draw: Draw, shp, numel):
    if draw(st.integers(0, 3)) == 0:
        return "dtype", (torch.float32,)  # the input's own dtype (another one is refused)
    sizes, rest = [], math.prod(shp)
    for _ in range(draw(st.integers(0, 2))):
        sizes.append(draw(st.sampled_from([k for k in range(1, rest + 1) if rest % k == 0])))
        rest //= sizes[-1]
    sizes.append(rest)
    if draw(st.booleans()):
        sizes[draw(st.integers(0, len(sizes) - 1))] = -1
    return "default", (draw(st.permutations(sizes)),)


def _expand(draw: Draw, shp, numel):
    sizes = [draw(st.integers(1, 3)) if s == 1 else draw(st.sampled_from([s, -1])) for s in shp]
    return "default", ([draw(st.integers(1, 2)) for _ in range(draw(st.integers(0, 1)))] + sizes,)


def _diagonal(draw: Draw, shp, numel):
    d1, d2 = draw(st.permutations(range(len(shp))))[:2]
    return "default", (draw(st.integers(-2, 2)), d1 - len(shp) * draw(st.integers(0, 1)), d2)


def _narrow(draw: Draw, shp, numel):
    d = dim(draw, shp)
    start = draw(st.integers(0, shp[d] - 1))
    return "default", (d, start, draw(st.integers(0, shp[d] - start)))


def _slice(draw: Draw, shp, numel):
    d = dim(draw, shp)
    ends = st.one_of(st.none(), st.integers(-shp[d] - 1, shp[d] + 1))
    return "Tensor", (d, draw(ends), draw(ends), draw(st.integers(1, 3)))


def _squeeze(draw: Draw, shp, numel):
    which = draw(st.sampled_from(["default", "dim", "dims"]))
    if which == "default" or not shp:
        return "default", ()
    if which == "dim":
        return which, (dim(draw, shp),)
    return which, (sorted(draw(st.sets(st.integers(0, len(shp) - 1), max_size=len(shp)))),)


def _unfold(draw: Draw, shp, numel):
    d = dim(draw, shp)
    return "default", (d, draw(st.integers(1, shp[d])), draw(st.integers(1, 3)))


#: view name -> (fewest dims, most dims, draw(shape, storage numel) -> (overload, arguments))
VIEW_ARGS: dict[str, tuple[int, int, Callable]] = {
    "alias": (0, 3, lambda draw, shp, n: ("default", ())),
    "detach": (0, 3, lambda draw, shp, n: ("default", ())),
    "as_strided": (0, 3, lambda draw, shp, n: ("default", strided(draw, n))),
    "diagonal": (2, 3, _diagonal),
    "expand": (0, 3, _expand),
    "narrow": (1, 3, _narrow),
    "permute": (0, 3, lambda draw, shp, n: ("default", (draw(st.permutations(range(len(shp)))),))),
    "select": (1, 3, lambda draw, shp, n: ("int", (d := dim(draw, shp), draw(st.integers(-shp[d], shp[d] - 1))))),  # noqa: E501
    "slice": (1, 3, _slice),
    "split": (1, 3, lambda draw, shp, n: ("Tensor", (draw(st.integers(1, 5)), dim(draw, shp)))),
    "split_with_sizes": (1, 3, lambda draw, shp, n: ("default", (composition(draw, shp[d := dim(draw, shp)]), d))),  # noqa: E501
    "squeeze": (0, 3, _squeeze),
    "t": (0, 2, lambda draw, shp, n: ("default", ())),
    "transpose": (1, 3, lambda draw, shp, n: ("int", (dim(draw, shp), dim(draw, shp)))),
    "unbind": (1, 3, lambda draw, shp, n: ("int", (dim(draw, shp),))),
    "unfold": (1, 3, _unfold),
    "unsqueeze": (0, 3, lambda draw, shp, n: ("default", (draw(st.integers(-len(shp) - 1, len(shp))),))),  # noqa: E501
    "view": (0, 3, _view),
}  # fmt: skip

for _name, (_lo, _hi, _args) in VIEW_ARGS.items():

    def _view_copy(draw, name=_name, lo=_lo, hi=_hi, args=_args):
        shp = shape(draw, lo, hi)
        store, view = view_of(draw, shp)
        overload, a = args(draw, shp, math.prod(store))
        op = getattr(getattr(aten, f"{name}_copy"), overload)
        return (lambda x: op(view(x), *a)), (rand(store),)

    case(getattr(aten, f"{_name}_copy"))(_view_copy)


@case(aten.as_strided_.default)
def _as_strided_(draw):
    """New sizes and strides for the input (or a clone of it), consumed by a kernel or not."""
    shp = shape(draw, 0, 3)
    store, view = view_of(draw, shp)
    clone, use = draw(st.booleans()), draw(st.booleans())
    sizes, strides, offset = strided(draw, math.prod(shp if clone else store))

    def fn(x):
        v = aten.clone.default(view(x)) if clone else view(x)
        y = aten.as_strided_.default(v, sizes, strides, offset)
        return aten.mul.Scalar(y, 2.0) if use else y

    return fn, (rand(store),)


@case(aten.as_strided_scatter.default)
def _as_strided_scatter(draw):
    shp = shape(draw, 1, 3)
    store, view = view_of(draw, shp)
    sizes, strides, offset = strided(draw, math.prod(shp))
    fn = lambda x, s: aten.as_strided_scatter.default(view(x), s, sizes, strides, offset)  # noqa: E731
    return fn, (rand(store), rand(tuple(sizes)))


# --------------------------------------------------------------------------- random

FLOATS = st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64])
INTEGERS = st.sampled_from([torch.int64, torch.int32, torch.int16, torch.float32])
ANY = st.sampled_from(
    [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool]
)  # noqa: E501
PROBS = st.sampled_from([0.0, 0.3, 0.5, 1.0])
MEANS = st.sampled_from([0.0, 1.0, -2.5])
STDS = st.sampled_from([1.0, 0.5, 2.0])


# torch's fake kernel of exponential_ (a _refs decomposition) asserts "generator is not
# supported in refs": with a generator it cannot be traced at all, on any device
NO_FAKE_GENERATOR = {aten.exponential_.default}


def generator(draw: Draw, op) -> dict:
    """``generator=`` for an operator that takes one: always where it is required (the
    ``.generator`` overloads), now and then where it is optional."""
    arg = next((a for a in op._schema.arguments if a.name == "generator"), None)
    if op in NO_FAKE_GENERATOR or arg is None or (arg.has_default_value() and draw(st.booleans())):
        return {}
    return {"generator": torch.Generator().manual_seed(draw(st.integers(0, 9)))}


def _sizes(draw: Draw) -> list[int]:
    return list(shape(draw, 0, 3))


def _ints(draw: Draw) -> dict:
    return {"dtype": draw(INTEGERS)}


#: factory -> draw() -> (positional arguments, keywords); each ``.generator`` overload
#: takes the arguments of its plain one
FACTORIES: dict[object, Callable[[Draw], tuple[tuple, dict]]] = {
    aten.rand.default: lambda draw: ((_sizes(draw),), {"dtype": draw(FLOATS)}),
    aten.randn.default: lambda draw: ((_sizes(draw),), {"dtype": draw(FLOATS)}),
    aten.randint.default: lambda draw: ((draw(st.integers(1, 9)), _sizes(draw)), _ints(draw)),
    aten.randint.low: lambda draw: (
        (draw(st.integers(-4, 0)), draw(st.integers(1, 9)), _sizes(draw)),
        _ints(draw),
    ),
    aten.normal.float_float: lambda draw: ((draw(MEANS), draw(STDS), _sizes(draw)), {}),
    aten.randperm.default: lambda draw: (
        (draw(st.integers(0, 6)),),
        {"dtype": draw(st.sampled_from([torch.int64, torch.int32]))},
    ),
}
FACTORIES.update(
    {
        aten.rand.generator: FACTORIES[aten.rand.default],
        aten.randn.generator: FACTORIES[aten.randn.default],
        aten.randint.generator: FACTORIES[aten.randint.default],
        aten.randint.low_generator: FACTORIES[aten.randint.low],
        aten.randperm.generator: FACTORIES[aten.randperm.default],
    }
)

for _op, _args in FACTORIES.items():

    def _factory(draw, op=_op, args=_args):
        a, kw = args(draw)
        kw |= generator(draw, op)
        return (lambda: op(*a, **kw)), ()

    case(_op)(_factory)


def _fill_dtype(op) -> st.SearchStrategy:
    return ANY if op.overloadpacket is aten.random_ else FLOATS


#: operator -> its arguments, each a kind: "x" the input through a view (any dtype of the
#: operator's), "self" a writable view of it (no expand: written in place), "p" probabilities
#: through a view, "y" a tensor broadcasting against the input; a strategy draws a value (a
#: tuple is spliced in)
RANDOM: dict[object, list] = {
    aten.rand_like.default: ["x"],
    aten.randn_like.default: ["x"],
    aten.randint_like.default: ["x", st.integers(1, 9)],
    aten.randint_like.low_dtype: ["x", st.integers(-4, 0), st.integers(1, 9)],
    aten.uniform_.default: ["self", st.sampled_from([(0.0, 1.0), (-2.0, 3.0)])],
    aten.normal_.default: ["self", MEANS, STDS],
    aten.exponential_.default: ["self", st.sampled_from([1.0, 2.5])],
    aten.random_.default: ["self"],
    getattr(aten.random_, "from"): ["self", st.sampled_from([(0, 5), (-3, 3), (1, 2)])],
    aten.random_.to: ["self", st.integers(1, 9)],
    aten.bernoulli_.float: ["self", PROBS],
    aten.bernoulli_.Tensor: ["self", "y"],
    aten.bernoulli.default: ["p"],
    aten.bernoulli.p: ["x", PROBS],
    aten.normal.Tensor_Tensor: ["x", "y"],
    aten.normal.Tensor_float: ["x", STDS],
    aten.normal.float_Tensor: [MEANS, "x"],
}
RANDOM.update(
    {
        aten.rand_like.generator: RANDOM[aten.rand_like.default],
        aten.randn_like.generator: RANDOM[aten.randn_like.default],
        aten.randint_like.generator: RANDOM[aten.randint_like.default],
        aten.randint_like.low_generator_dtype: RANDOM[aten.randint_like.low_dtype],
    }
)
LIKE_DTYPES = {  # dtype= of the _like forms (None: the input's)
    aten.rand_like: st.sampled_from([None, torch.float16, torch.bfloat16]),
    aten.randn_like: st.sampled_from([None, torch.float16, torch.float64]),
    aten.randint_like: st.sampled_from([None, torch.int32, torch.int64, torch.float16]),
}

for _op, _kinds in RANDOM.items():

    def _random(draw, op=_op, kinds=_kinds):
        shp = shape(draw, 0, 3)
        store, view = view_of(draw, shp)
        if "self" in kinds and view(torch.empty(store)).stride().count(0):
            store, view = shp, lambda x: x  # written in place: not through an expand
        dtype = draw(_fill_dtype(op) if "self" in kinds else FLOATS)
        inputs = [torch.rand(store).to(dtype) if "p" in kinds else rand(store, dtype)]
        parts: list[Callable] = []  # each argument, from the inputs
        for k in kinds:
            if k in ("x", "self", "p"):
                parts.append(lambda xs: view(xs[0]))
            elif k == "y":
                j = len(inputs)
                parts.append(lambda xs, j=j: xs[j])
                inputs.append(rand(broadcast_partner(draw, shp)).mul(0.5))
            else:
                v = draw(k)
                parts.extend(lambda xs, c=c: c for c in (v if isinstance(v, tuple) else (v,)))
        kw = generator(draw, op)
        if op.overloadpacket in LIKE_DTYPES:
            kw["dtype"] = draw(LIKE_DTYPES[op.overloadpacket])
        return (lambda *xs: op(*(f(xs) for f in parts), **kw)), tuple(inputs)

    case(_op)(_random)


@case(aten.native_dropout.default)
def _dropout(draw):
    shp = shape(draw, 0, 3)
    store, view = view_of(draw, shp)
    p = draw(st.sampled_from([0.0, 0.2, 0.5, 0.999, 1.0]))
    train = draw(st.sampled_from([True, False, None]))
    dtype = draw(st.sampled_from([torch.float32, torch.bfloat16]))
    return (lambda x: aten.native_dropout.default(view(x), p, train)), (rand(store, dtype),)


# -------------------------------------------------------------------- transformer path


@case(aten._addmm_activation.default)
def _addmm_activation(draw):
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    a_store, a_view = viewed(draw, (m, k))
    b_store, b_view = viewed(draw, (k, n))
    bias = rand(broadcast_partner(draw, (m, n)))
    beta, alpha = draw(st.sampled_from([1, 0.5, 0])), draw(st.sampled_from([1, 2.0]))
    gelu = draw(st.booleans())

    def fn(c, a, b):
        return aten._addmm_activation.default(
            c, a_view(a), b_view(b), beta=beta, alpha=alpha, use_gelu=gelu
        )

    return fn, (bias, rand(a_store), rand(b_store))


@case(aten._transform_bias_rescale_qkv.default)
def _transform_bias_rescale_qkv(draw):
    b, t, heads, head = (draw(st.integers(1, 3)) for _ in range(4))
    store, view = viewed(draw, (b, t, 3 * heads * head))
    bias = rand((3 * heads * head,))
    return (lambda q, c: aten._transform_bias_rescale_qkv.default(view(q), c, heads)), (
        rand(store),
        bias,
    )


@case(aten._masked_softmax.default, examples=8)
def _masked_softmax(draw):
    """``mask_type`` 0: an ``(L, L)`` mask of a ``(B, H, L, L)`` input; 1: a ``(B, L)``
    key-padding mask; otherwise (2, None) a mask of the input's shape."""
    mask_type = draw(st.sampled_from([0, 1, 2, None]))
    if mask_type in (0, 1):
        b, h, n = (draw(st.integers(1, 3)) for _ in range(3))
        shp = (b, h, n, n)
        mshape = (n, n) if mask_type == 0 else (b, n)
    else:
        shp = shape(draw, 1, 4)
        mshape = shp
    store, view = view_of(draw, shp)
    d = draw(st.sampled_from([len(shp) - 1, -1, None]))
    return (lambda x, m: aten._masked_softmax.default(view(x), m, d, mask_type)), (
        rand(store),
        rand(mshape, torch.bool),
    )


# ------------------------------------------------------------------------- RNN cells

for _op, _gates in ((solar_ops.lstm_cell.default, 4), (solar_ops.gru_cell.default, 3)):

    def _cell(draw, op=_op, gates=_gates):
        """Gate blocks ``(B, gates·H)`` through views, the state, each bias or none."""
        b, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        (i_store, i_view), (h_store, h_view) = (viewed(draw, (b, gates * h)) for _ in range(2))
        biases = [rand((gates * h,)) if draw(st.booleans()) else None for _ in range(2)]

        def fn(ig, hg, state, b_ih, b_hh):
            return op(i_view(ig), h_view(hg), state, b_ih, b_hh)

        return fn, (rand(i_store), rand(h_store), rand((b, h)), *biases)

    case(_op)(_cell)
