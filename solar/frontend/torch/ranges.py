"""Python values read from tensors whose contents are unknown but bounded.

Fake tensors carry no values, so ``t.item()`` normally stops the trace (a data-dependent
operator). Many reads are checks whose outcome the program's structure already decides:
XLM asserts ``(ids != pad).sum(1).max().item() <= seq_len``, true for every input since a sum
of ``seq_len`` booleans is at most ``seq_len``. So while tracing, ``Tensor.item()`` of an
integer tensor computes the interval its values must lie in, by interval arithmetic over the
operators that made it in the traced graph (a boolean is 0 or 1, a sum of ``n`` values in
``[a, b]`` lies in ``[n a, n b]``, an argmax in ``[0, n - 1]``, ...), and returns a
:class:`RangedValue`:

- its integer value is the smallest possible one (the value a size made from it takes,
  as every data-dependent size is: :mod:`solar.frontend.torch.sizes`), and the report says so;
- a comparison with it (``<``, ``==``, ``if v:``) is decided only where every value of the
  interval decides it the same way; otherwise tracing stops with a one-line error naming the
  line and the interval (``observe=True`` with real inputs uses the real value);
- ``+``, ``-``, ``*`` and floor division by a positive constant keep the interval; any other use
  of it as a number is refused the same way.

Tensors with no derivable interval (float tensors, integer inputs) behave as before.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.fx as fx

aten = torch.ops.aten

Interval = tuple[int, int]

# operators whose output values are values of their first input (copies, views, gathers,
# reductions that pick an element)
SAME = {
    aten.alias, aten.clone, aten._to_copy, aten.view, aten._unsafe_view, aten.reshape,
    aten.expand, aten.select, aten.slice, aten.squeeze, aten.unsqueeze, aten.permute,
    aten.t, aten.transpose, aten.contiguous, aten.detach, aten.flatten, aten.index,
    aten.index_select, aten.gather, aten.max, aten.min, aten.amax, aten.amin, aten.sort,
    aten.topk, aten.narrow, aten.repeat, aten.roll, aten.flip, aten.lift_fresh_copy,
    aten.cummax, aten.cummin, aten.median, aten.kthvalue, aten.mode, aten.unbind,
    aten.split, aten.split_with_sizes, aten.chunk, aten.diagonal, aten.as_strided,
}  # fmt: skip
# (operator, output index) whose values are positions along the reduced dim (or the flat input)
POSITIONS = {
    (aten.argmax, 0), (aten.argmin, 0), (aten.max, 1), (aten.min, 1), (aten.sort, 1),
    (aten.topk, 1), (aten.cummax, 1), (aten.cummin, 1), (aten.median, 1), (aten.kthvalue, 1),
    (aten.mode, 1),
}  # fmt: skip
UNION = {aten.cat, aten.stack}
COMPARISONS = {
    aten.lt: operator.lt, aten.le: operator.le, aten.gt: operator.gt, aten.ge: operator.ge,
    aten.eq: operator.eq, aten.ne: operator.ne,
}  # fmt: skip


def _dtype_limits(dtype: torch.dtype) -> Interval | None:
    if dtype == torch.bool:
        return (0, 1)
    if dtype.is_floating_point or dtype.is_complex:
        return None
    info = torch.iinfo(dtype)
    return (info.min, info.max)


def _meet(a: Interval | None, b: Interval | None) -> Interval | None:
    if a is None or b is None:
        return a or b
    return (max(a[0], b[0]), min(a[1], b[1]))


def _join(*ranges: Interval | None) -> Interval | None:
    if not ranges or any(r is None for r in ranges):
        return None
    return (min(r[0] for r in ranges), max(r[1] for r in ranges))  # type: ignore[index]


def _scale(r: Interval, n: int) -> Interval:
    return (min(n * r[0], n * r[1]), max(n * r[0], n * r[1]))


def _mul(a: Interval, b: Interval) -> Interval:
    products = [x * y for x in a for y in b]
    return (min(products), max(products))


def _val(node: object) -> object:
    return node.meta.get("val") if isinstance(node, fx.Node) else None


class _Ranges:
    """Intervals of the integer values of a traced graph's nodes (memoized)."""

    def __init__(self) -> None:
        self.memo: dict[fx.Node, Interval | None] = {}

    def of(self, arg: object) -> Interval | None:
        if isinstance(arg, bool | int):
            return (int(arg), int(arg))
        if not isinstance(arg, fx.Node):
            return None
        stack = [arg]
        while stack:  # post-order without recursion: graphs are deep
            node = stack[-1]
            todo = [a for a in node.all_input_nodes if a not in self.memo]
            if todo and node not in self.memo:
                stack.extend(todo)
                continue
            stack.pop()
            if node not in self.memo:
                self.memo[node] = self._node(node)
        return self.memo[arg]

    def _node(self, node: fx.Node) -> Interval | None:
        if node.target is operator.getitem:
            source, index = node.args
            return self._output(source, index)  # type: ignore[arg-type]
        return self._output(node, 0)

    def _output(self, node: fx.Node, index: int) -> Interval | None:
        val = _val(node)
        if isinstance(val, list | tuple):
            val = val[index] if index < len(val) else None
        if not isinstance(val, torch.Tensor):
            return None
        limits = _dtype_limits(val.dtype)
        if limits is None:
            return None
        derived = self._rule(node, index) if node.op == "call_function" else None
        if val.dtype == torch.bool:  # a conversion to bool is "nonzero"
            return limits if derived is None else _truth(derived)
        if derived is None or not (limits[0] <= derived[0] and derived[1] <= limits[1]):
            return None  # values a narrower dtype wraps: unknown
        return derived

    def _rule(self, node: fx.Node, index: int) -> Interval | None:
        op = getattr(node.target, "overloadpacket", None)
        args = node.args
        memo = self.memo.get
        first = memo(args[0]) if args and isinstance(args[0], fx.Node) else None
        if (op, index) in POSITIONS:
            return _positions(node)
        if op in (aten.max, aten.min) and len(args) == 2 and isinstance(args[1], fx.Node):
            op = aten.maximum if op is aten.max else aten.minimum  # max(a, b): elementwise
        elif op in SAME:
            return first
        if op in UNION:
            return _join(*(memo(a) for a in args[0]))  # type: ignore[union-attr]
        if op is aten.where:
            return _join(self.of(args[1]), self.of(args[2]))
        if op is aten.sum and first is not None:
            return _scale(first, _reduced(node))
        if op is aten.count_nonzero:
            return (0, _reduced(node))
        if op in (aten.add, aten.sub) and len(args) >= 2:
            a, b = self.of(args[0]), self.of(args[1])
            alpha = int(node.kwargs.get("alpha", 1))
            if a is None or b is None:
                return None
            b = _scale(b, alpha if op is aten.add else -alpha)
            return (a[0] + b[0], a[1] + b[1])
        if op is aten.mul and len(args) >= 2:
            a, b = self.of(args[0]), self.of(args[1])
            return None if a is None or b is None else _mul(a, b)
        if op is aten.neg and first is not None:
            return (-first[1], -first[0])
        if op in (aten.clamp, aten.clamp_min, aten.clamp_max) and first is not None:
            low = args[1] if op is not aten.clamp_max and len(args) > 1 else None
            high = args[2] if op is aten.clamp and len(args) > 2 else None
            high = args[1] if op is aten.clamp_max else high
            lo = first[0] if low is None else max(first[0], int(low))
            hi = first[1] if high is None else min(first[1], int(high))
            return (min(lo, hi), max(lo, hi))
        if op in (aten.maximum, aten.minimum) and len(args) >= 2:
            a, b = self.of(args[0]), self.of(args[1])
            if a is None or b is None:
                return None
            pick = max if op is aten.maximum else min
            return (pick(a[0], b[0]), pick(a[1], b[1]))
        if op in (aten.zeros, aten.new_zeros, aten.zeros_like):
            return (0, 0)
        if op in (aten.ones, aten.new_ones, aten.ones_like):
            return (1, 1)
        if op in (aten.full, aten.new_full, aten.full_like, aten.scalar_tensor):
            fill = {aten.full: 1, aten.new_full: 2, aten.full_like: 1, aten.scalar_tensor: 0}
            value = args[fill[op]] if len(args) > fill[op] else None
            return (int(value), int(value)) if isinstance(value, int | bool) else None
        if op is aten.arange:
            return _arange(args)
        if op in COMPARISONS and len(args) >= 2:
            return _compare(COMPARISONS[op], self.of(args[0]), self.of(args[1]))
        if op in (aten.all, aten.any):
            return first
        if op is aten.logical_not and first is not None:
            truth = _truth(first)
            return (1 - truth[1], 1 - truth[0])
        return None


def _compare(test, a: Interval | None, b: Interval | None) -> Interval | None:  # noqa: ANN001
    """A comparison's outcome over two intervals: one value where every pair decides it alike."""
    if a is None or b is None:
        return None
    outcome = _outcome(test, a, b)
    return (0, 1) if outcome is None else (int(outcome), int(outcome))


def _outcome(test, a: Interval, b: Interval, b_ends: tuple | None = None) -> bool | None:  # noqa: ANN001
    """``test(x, y)`` for every ``x`` in ``a`` and ``y`` in ``b``, where all pairs agree, else
    None; ``b_ends`` are the values to compare with in place of ``b``'s ends (a solar Size
    itself, so that the comparison records its guard)."""
    outcomes = {bool(test(x, y)) for x in a for y in (b if b_ends is None else b_ends)}
    return outcomes.pop() if len(outcomes) == 1 and _decides(test, a, b) else None


def _reduced(node: fx.Node) -> int:
    """How many input elements each output element of a reduction combines."""
    src, out = _val(node.args[0]), _val(node)
    if not isinstance(src, torch.Tensor) or not isinstance(out, torch.Tensor):
        return 0
    return src.numel() // out.numel() if out.numel() else 0


def _truth(r: Interval) -> Interval:
    """The interval of ``x != 0`` for ``x`` in ``r``."""
    if r == (0, 0):
        return (0, 0)
    return (1, 1) if r[0] > 0 or r[1] < 0 else (0, 1)


# (position of the dim argument, its default: None = the flattened input) of each operator
# whose output is positions along a dim
DIM_ARGUMENT = {
    aten.argmax: (1, None), aten.argmin: (1, None), aten.max: (1, None), aten.min: (1, None),
    aten.sort: (1, -1), aten.topk: (2, -1), aten.cummax: (1, None), aten.cummin: (1, None),
    aten.median: (1, None), aten.kthvalue: (2, -1), aten.mode: (1, -1),
}  # fmt: skip


def _positions(node: fx.Node) -> Interval | None:
    src = _val(node.args[0])
    if not isinstance(src, torch.Tensor):
        return None
    at, default = DIM_ARGUMENT[node.target.overloadpacket]  # type: ignore[union-attr]
    dim = node.args[at] if len(node.args) > at else node.kwargs.get("dim", default)
    n = src.numel() if not isinstance(dim, int) or src.dim() == 0 else src.shape[dim]
    return (0, max(int(n) - 1, 0))


def _arange(args: tuple) -> Interval | None:
    ints = [a for a in args if isinstance(a, int | bool)]
    if len(ints) != len(args) or not args:
        return None
    start, end, step = (
        (0, ints[0], 1) if len(ints) == 1 else (*ints[:2], ints[2] if len(ints) > 2 else 1)
    )
    if step == 0 or (end - start) * step <= 0:
        return None
    last = start + ((end - start - (1 if step > 0 else -1)) // step) * step
    return (min(start, last), max(start, last))


class RangedValue(int):
    """A Python integer read from a tensor: only its interval ``[lo, hi]`` is known. Its int
    value is ``lo``; decisions on it must hold over the whole interval."""

    lo: int
    hi: int
    where: str

    def __new__(cls, lo: int, hi: int, where: str) -> RangedValue:
        value = super().__new__(cls, lo)
        value.lo, value.hi, value.where = lo, hi, where
        return value

    def __repr__(self) -> str:
        return int.__repr__(self)

    # -- decisions -------------------------------------------------------------------
    def _decide(self, what: str, other: object, test) -> bool:  # noqa: ANN001
        b = _interval(other)
        if b is None:
            return NotImplemented  # type: ignore[return-value]
        # a plain (or solar Size) int is compared as itself: a Size records its guard
        ends = b if isinstance(other, RangedValue) else (other,)
        outcome = _outcome(test, (self.lo, self.hi), b, ends)
        if outcome is None:
            raise _undecided(self, f"{what} {_show(other)}")
        return outcome

    def __lt__(self, other: object) -> bool:
        return self._decide("<", other, operator.lt)

    def __le__(self, other: object) -> bool:
        return self._decide("<=", other, operator.le)

    def __gt__(self, other: object) -> bool:
        return self._decide(">", other, operator.gt)

    def __ge__(self, other: object) -> bool:
        return self._decide(">=", other, operator.ge)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self._decide("==", other, operator.eq)

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        return self._decide("!=", other, operator.ne)

    def __bool__(self) -> bool:
        return self._decide("!=", 0, operator.ne)

    __hash__ = int.__hash__

    # -- arithmetic that keeps the interval ----------------------------------------------
    def _combine(self, other: object, fn, swap: bool = False) -> RangedValue:  # noqa: ANN001
        b = _interval(other)
        if b is None:
            return NotImplemented  # type: ignore[return-value]
        if isinstance(other, float):
            raise _undecided(self, f"{fn.__name__} {_show(other)}")
        pairs = [(x, y) for x in (self.lo, self.hi) for y in b]
        values = [fn(y, x) if swap else fn(x, y) for x, y in pairs]
        return RangedValue(min(values), max(values), self.where)

    def __add__(self, other: object) -> RangedValue:
        return self._combine(other, operator.add)

    __radd__ = __add__

    def __sub__(self, other: object) -> RangedValue:
        return self._combine(other, operator.sub)

    def __rsub__(self, other: object) -> RangedValue:
        return self._combine(other, operator.sub, swap=True)

    def __mul__(self, other: object) -> RangedValue:
        return self._combine(other, operator.mul)

    __rmul__ = __mul__

    def __neg__(self) -> RangedValue:
        return RangedValue(-self.hi, -self.lo, self.where)

    def __floordiv__(self, other: object) -> RangedValue:
        if not isinstance(other, int) or isinstance(other, RangedValue) or other <= 0:
            raise _undecided(self, f"// {_show(other)}")
        return RangedValue(self.lo // other, self.hi // other, self.where)


def _refuse(symbol: str):  # noqa: ANN202
    def method(self: RangedValue, *args: object) -> object:
        raise _undecided(self, f"{symbol} {_show(args[0])}" if args else symbol)

    return method


for _name, _symbol in {
    "__truediv__": "/", "__rtruediv__": "/ (reflected)", "__mod__": "%", "__rmod__": "%",
    "__pow__": "**", "__rpow__": "**", "__rfloordiv__": "//", "__and__": "&", "__or__": "|",
    "__xor__": "^", "__lshift__": "<<", "__rshift__": ">>", "__abs__": "abs()",
    "__float__": "float()", "__round__": "round()", "__divmod__": "divmod()",
}.items():  # fmt: skip
    setattr(RangedValue, _name, _refuse(_symbol))


def _decides(test, a: Interval, b: Interval) -> bool:  # noqa: ANN001
    """Whether the interval ends suffice to decide ``test`` for every pair: orderings are
    monotone; equality is decided only when both are one value, or they do not overlap."""
    if test not in (operator.eq, operator.ne):
        return True
    return (a[0] == a[1] and b[0] == b[1]) or a[1] < b[0] or b[1] < a[0]


def _interval(other: object) -> Interval | None:
    if isinstance(other, RangedValue):
        return (other.lo, other.hi)
    if isinstance(other, bool | int):
        return (int(other), int(other))
    if isinstance(other, float):
        return (other, other)  # type: ignore[return-value]
    return None


def _show(other: object) -> str:
    if isinstance(other, RangedValue):
        return f"another such value (in [{other.lo}, {other.hi}])"
    return repr(other)


def _undecided(value: RangedValue, what: str) -> Exception:
    from solar.frontend.torch.provenance import caller_source
    from solar.frontend.torch.registry import DataDependentOperatorError

    line = caller_source(3)
    error = DataDependentOperatorError("aten._local_scalar_dense", line)
    error.args = (
        f"aten._local_scalar_dense at {value.where}: the program uses a value read from "
        f"tensor contents (.item(): anywhere in [{value.lo}, {value.hi}]) in `value {what}` at "
        f"{line or 'an unknown line'}, which that interval does not decide: trace "
        "with observe=True on real inputs to use the value they produce",
    )
    return error


class RangedItems:
    """While tracing: ``Tensor.item()`` of an integer tensor with a derivable interval returns
    a :class:`RangedValue` (each one read is appended to ``chosen`` as an
    :class:`~solar.frontend.torch.sizes.AssumedSize`), or the value itself where the interval
    is one value; ``bool(t)`` (``if t:``, ``assert t``) of a tensor whose interval decides it
    returns that decision. Tensors with known values (``known``), and anything else, read as
    before. Called by the trace's torch-function mode (:func:`host_read`), so that modes
    entered inside it (a definition's real index values) answer first."""

    def __init__(self, known: object, chosen: list) -> None:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode

        self.known, self.chosen = known, chosen
        self.proxy = get_proxy_mode()
        self.ranges = _Ranges()

    def read(self, func: object, args: tuple) -> object | None:
        """The value of the host read ``func(*args)``, or None where it reads as before."""
        if len(args) != 1 or not isinstance(args[0], torch.Tensor):
            return None
        if func is torch.Tensor.item:
            return self._item(args[0])
        return self._truth(args[0])

    def _interval(self, t: torch.Tensor) -> Interval | None:
        from torch.fx.experimental.proxy_tensor import get_proxy_slot

        if self.proxy is None or t in self.known or t.numel() != 1:
            return None
        slot = get_proxy_slot(t, self.proxy.tracer, None)
        node = getattr(getattr(slot, "proxy", None), "node", None)
        return self.ranges.of(node) if node is not None else None

    def _item(self, t: torch.Tensor) -> object | None:
        from solar.frontend.torch.provenance import caller_source
        from solar.frontend.torch.sizes import AssumedSize

        span = self._interval(t)
        if span is None or (t.dtype == torch.bool and span[0] != span[1]):
            return None
        lo, hi = span
        if lo == hi:  # one possible value: exact
            return bool(lo) if t.dtype == torch.bool else lo
        where = caller_source(3)
        why = (
            f"its smallest possible value, of [{lo}, {hi}]; decisions on it hold over the whole "
            "interval; observe=True with real inputs uses the real value"
        )
        self.chosen.append(AssumedSize("aten._local_scalar_dense", where, lo, False, why))
        return RangedValue(lo, hi, where)

    def _truth(self, t: torch.Tensor) -> bool | None:
        span = self._interval(t)
        if span is not None and (span[0] > 0 or span[1] < 0 or span == (0, 0)):
            return span != (0, 0)
        return None


HOST_READS = frozenset({torch.Tensor.item, torch.Tensor.__bool__})
#: the :class:`RangedItems` of the trace running in this thread (traces in other threads have
#: their own)
_ACTIVE: ContextVar[RangedItems | None] = ContextVar("solar_ranged_items", default=None)


def host_read(func: object, args: tuple) -> object | None:
    """What the running :func:`ranged_items` gives for a :data:`HOST_READS` call, else None."""
    if func not in HOST_READS:
        return None
    active = _ACTIVE.get()
    return active.read(func, args) if active is not None else None


@contextmanager
def ranged_items(known: object, chosen: list) -> Iterator[None]:
    """Trace with :class:`RangedItems` (``known``: the tensors whose values are known)."""
    token = _ACTIVE.set(RangedItems(known, chosen))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
