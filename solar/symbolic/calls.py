"""How the dims of a torch call's result follow from its arguments (for :mod:`.tracker`).

Each handler takes ``known`` (a tensor -> its dims as sympy expressions; raises
:class:`Unsupported` for a tensor whose dims are not followed) and the call's arguments, and
returns the result's dims, or raises :class:`Unsupported` when the arguments are not ones it
reads (the tracker then marks the result unknown). :data:`HANDLERS` maps each call's name to
its handler.
"""

from __future__ import annotations

from collections.abc import Callable

import sympy
import torch

from solar.algebra.size import Real, Size, expr_of, make

Dims = tuple[sympy.Expr, ...]
Known = Callable[[torch.Tensor], Dims]

FACTORIES = {"randn", "rand", "empty", "zeros", "ones"}  # (*size) or (size)
NEW = {"new_empty", "new_zeros", "new_ones"}  # (self, *size) or (self, size)
LIKE = {
    "empty_like",
    "zeros_like",
    "ones_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
}
DATA = {"tensor", "as_tensor", "asarray", "from_numpy", "scalar_tensor"}
#: elementwise calls: their tensors' dims broadcast
SAME_WORDS = (
    "neg __neg__ abs sign sgn exp log sigmoid tanh relu sqrt rsqrt sin cos square",
    "tril triu softmax log_softmax normalize polar complex atan2 where lerp masked_fill",
    "add sub mul div pow clamp __add__ __sub__ __mul__ __truediv__ __pow__ __radd__",
    "__rsub__ __rmul__ __rtruediv__ __rdiv__ __rpow__ __div__ __floordiv__ __rfloordiv__",
    "__mod__ eq ne lt le gt ge __eq__ __ne__ __lt__ __le__ __gt__ __ge__ logical_not",
    "logical_and logical_or __and__ __or__ __xor__ __invert__",
)
#: casts, copies and in-place calls: the first tensor's dims
FIRST_WORDS = (
    "to type type_as half float double bfloat16 int long bool short byte char cfloat cdouble",
    "contiguous clone cuda cpu pin_memory requires_grad_ detach detach_ data",
    "normal_ uniform_ zero_ fill_ bernoulli_ random_ exponential_ copy_ clamp_ abs_",
    "add_ sub_ mul_ div_ masked_fill_",
)
FIRST = {w for line in FIRST_WORDS for w in line.split()}
SAME = {w for line in SAME_WORDS for w in line.split()}


class Unsupported(Exception):
    """A call's arguments this tracker does not read (the dims are then unknown)."""


def number(x):
    return int.__int__(x) if isinstance(x, Size) else float.__float__(x)


def plain(obj):
    """``obj`` with every Size/Real a plain number, without a guard (data, not sizes)."""
    return map_sizes(obj, lambda x: number(x) if isinstance(x, (Size, Real)) else x)


def map_sizes(obj, fn):
    if isinstance(obj, torch.Size):
        return torch.Size([fn(x) for x in obj])
    if isinstance(obj, tuple):
        return tuple(map_sizes(x, fn) for x in obj)
    if isinstance(obj, list):
        return [map_sizes(x, fn) for x in obj]
    if isinstance(obj, dict):
        return {k: map_sizes(v, fn) for k, v in obj.items()}
    return fn(obj)


def leaves(obj):
    if isinstance(obj, (tuple, list)):
        for x in obj:
            yield from leaves(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from leaves(x)
    else:
        yield obj


def tensors(obj) -> list[torch.Tensor]:
    return [x for x in leaves(obj) if isinstance(x, torch.Tensor)]


def _shape_arg(args, kwargs, start: int) -> tuple:
    if "size" in kwargs:
        s = kwargs["size"]
    else:
        rest = args[start:]
        s = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in s):
        raise Unsupported
    return tuple(s)


def _exprs(shape) -> Dims:
    return tuple(expr_of(x) for x in shape)


def _factory(known: Known, args, kwargs) -> Dims:
    return _exprs(_shape_arg(args, kwargs, 0))


def _new(known: Known, args, kwargs) -> Dims:
    return _exprs(_shape_arg(args, kwargs, 1))


def _full(known: Known, args, kwargs) -> Dims:
    return _exprs(_shape_arg(args[:1], kwargs, 0))


def _new_full(known: Known, args, kwargs) -> Dims:
    return _exprs(_shape_arg(args[:2], kwargs, 1))


def _randint(known: Known, args, kwargs) -> Dims:
    if "size" in kwargs:
        return _exprs(_shape_arg((), kwargs, 0))
    if not args or not isinstance(args[-1], (tuple, list)):
        raise Unsupported
    return _exprs(_shape_arg(args[-1:], {}, 0))


def _eye(known: Known, args, kwargs) -> Dims:
    n = kwargs.get("n", args[0] if args else None)
    m = kwargs.get("m", args[1] if len(args) > 1 and isinstance(args[1], int) else n)
    return _exprs((n, m))


def _arange(known: Known, args, kwargs) -> Dims:
    nums = [a for a in args if isinstance(a, (int, float))]
    start = kwargs.get("start", nums[0] if len(nums) > 1 else 0)
    end = kwargs.get("end", nums[1] if len(nums) > 1 else nums[0] if nums else None)
    step = kwargs.get("step", nums[2] if len(nums) > 2 else 1)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end, step)):
        raise Unsupported  # a float range: its length is not a size expression
    if isinstance(step, Size):
        raise Unsupported
    n = expr_of(end) - expr_of(start)
    return (n if step == 1 else sympy.ceiling(n / step),)


def _like(known: Known, args, kwargs) -> Dims:
    return known(args[0])


def _data(known: Known, args, kwargs) -> Dims:
    data = args[0] if args else kwargs.get("data")
    if isinstance(data, torch.Tensor):
        return known(data)
    return tuple(sympy.Integer(n) for n in _data_shape(data))


def _data_shape(data) -> tuple[int, ...]:
    if isinstance(data, (list, tuple)):
        return (len(data), *(_data_shape(data[0]) if data else ()))
    return ()


def _same(known: Known, args, kwargs) -> Dims:
    """Elementwise: the tensors' dims broadcast (a size among the arguments is a value here,
    ``x * SEQ``: data). A cast (``x.to(y)``: y gives the dtype) and an in-place call (the
    others broadcast into it) keep the first tensor's dims."""
    out: Dims = ()
    for t in tensors((args, kwargs)):
        out = _broadcast(out, known(t))
    return out


def _first(known: Known, args, kwargs) -> Dims:
    """A cast or copy (``x.to(y)``: y gives only the dtype) or an in-place call (the others
    broadcast into it): the first tensor's dims."""
    return known(tensors((args, kwargs))[0])


def _broadcast(a: Dims, b: Dims) -> Dims:
    """PyTorch's broadcasting of two shapes, where each pair of dims is equal or one is 1."""
    n = max(len(a), len(b))
    a = (sympy.Integer(1),) * (n - len(a)) + a
    b = (sympy.Integer(1),) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise Unsupported  # equal only at these sizes, perhaps: not followed
    return tuple(out)


def _view(known: Known, args, kwargs) -> Dims:
    dims = known(args[0])
    shape = _shape_arg(args, kwargs, 1)
    total = sympy.Mul(*dims)
    given = [expr_of(s) for s in shape if not (isinstance(s, int) and int.__int__(s) == -1)]
    if len(given) == len(shape):
        return tuple(given)
    rest = sympy.cancel(total / sympy.Mul(*given))
    return tuple(rest if int.__int__(s) == -1 else expr_of(s) for s in shape)


def _expand(known: Known, args, kwargs) -> Dims:
    dims = known(args[0])
    shape = _shape_arg(args, kwargs, 1)
    lead = len(shape) - len(dims)
    return tuple(
        dims[i - lead] if int.__int__(s) == -1 else expr_of(s) for i, s in enumerate(shape)
    )


def _unsqueeze(known: Known, args, kwargs) -> Dims:
    dims = list(known(args[0]))
    d = args[1] if len(args) > 1 else kwargs["dim"]
    d = int.__int__(d)
    d = d if d >= 0 else d + len(dims) + 1
    dims.insert(d, sympy.Integer(1))
    return tuple(dims)


def _transpose(known: Known, args, kwargs) -> Dims:
    dims = list(known(args[0]))
    if len(args) < 3:
        raise Unsupported
    a, b = (int.__int__(x) % len(dims) for x in args[1:3])
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def _permute(known: Known, args, kwargs) -> Dims:
    dims = known(args[0])
    order = _shape_arg(args, kwargs, 1) if "dims" not in kwargs else tuple(kwargs["dims"])
    return tuple(dims[int.__int__(i) % len(dims)] for i in order)


def _sizes(known: Known, t: torch.Tensor) -> list[int]:
    """The dims of ``t`` as Sizes (decisions on them are then guards)."""
    return [make(int(n), e) for n, e in zip(t.shape, known(t), strict=True)]


def _getitem(known: Known, args, kwargs) -> Dims:
    """Basic indexing: ints, slices, None and ``...`` (a tensor index is not followed)."""
    t, index = args[0], args[1]
    index = index if isinstance(index, tuple) else (index,)
    dims = _sizes(known, t)
    if any(isinstance(i, (torch.Tensor, list, bool)) for i in index):
        raise Unsupported
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    out: list[int] = []
    d = 0
    for i in index:
        if i is None:
            out.append(1)
        elif i is Ellipsis:
            k = len(dims) - n_real
            out += dims[d : d + k]
            d += k
        elif isinstance(i, slice):
            out.append(_slice_length(dims[d], i))
            d += 1
        elif isinstance(i, int):
            d += 1
        else:
            raise Unsupported
    out += dims[d:]
    return _exprs(out)


def _slice_length(n: int, s: slice) -> int:
    """``len(range(n)[s])`` for a step >= 1, with sizes (the comparisons become guards)."""
    step = 1 if s.step is None else s.step
    if step < 1:
        raise Unsupported

    def clamp(x, default):
        if x is None:
            return default
        x = x + n if x < 0 else x
        return 0 if x < 0 else (n if x > n else x)

    start, stop = clamp(s.start, 0), clamp(s.stop, n)
    return (stop - start + step - 1) // step if stop > start else 0


def _cat(known: Known, args, kwargs) -> Dims:
    ts = args[0] if args else kwargs["tensors"]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    dims = [known(t) for t in ts if t.dim() > 1 or t.shape[0] != 0]
    dim = int.__int__(dim) % len(dims[0])
    if any(len(x) != len(dims[0]) for x in dims) or any(
        x[:dim] + x[dim + 1 :] != dims[0][:dim] + dims[0][dim + 1 :] for x in dims
    ):
        raise Unsupported
    return (*dims[0][:dim], sympy.Add(*(x[dim] for x in dims)), *dims[0][dim + 1 :])


def _stack(known: Known, args, kwargs) -> Dims:
    ts = args[0] if args else kwargs["tensors"]
    dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    dims = [known(t) for t in ts]
    if any(x != dims[0] for x in dims):
        raise Unsupported
    dim = int.__int__(dim) % (len(dims[0]) + 1)
    return (*dims[0][:dim], sympy.Integer(len(dims)), *dims[0][dim:])


def _outer(known: Known, args, kwargs) -> Dims:
    a, b = (known(t) for t in args[:2])
    return (a[0], b[0])


def _flatten(known: Known, args, kwargs) -> Dims:
    dims = known(args[0])
    start = int.__int__(args[1] if len(args) > 1 else kwargs.get("start_dim", 0))
    end = int.__int__(args[2] if len(args) > 2 else kwargs.get("end_dim", -1))
    if not dims:
        return (sympy.Integer(1),)
    start, end = start % len(dims), end % len(dims)
    return (*dims[:start], sympy.Mul(*dims[start : end + 1]), *dims[end + 1 :])


def _squeeze(known: Known, args, kwargs) -> Dims:
    """``squeeze()`` drops the dims that are 1 (a symbolic one is not followed);
    ``squeeze(d)`` drops dim ``d`` if it is 1."""
    dims = known(args[0])
    d = args[1] if len(args) > 1 else kwargs.get("dim")
    if d is None:
        if any(not e.is_number and int(n) == 1 for e, n in zip(dims, args[0].shape, strict=True)):
            raise Unsupported
        return tuple(e for e in dims if e != 1)
    picked = {int.__int__(i) % len(dims) for i in (d if isinstance(d, (tuple, list)) else (d,))}
    if any(not dims[i].is_number and int(args[0].shape[i]) == 1 for i in picked):
        raise Unsupported
    return tuple(e for i, e in enumerate(dims) if not (i in picked and e == 1))


def _t(known: Known, args, kwargs) -> Dims:
    return tuple(reversed(known(args[0])))


def _mt(known: Known, args, kwargs) -> Dims:
    dims = known(args[0])
    return (*dims[:-2], dims[-1], dims[-2])


HANDLERS = {
    **dict.fromkeys(FACTORIES, _factory),
    **dict.fromkeys(NEW, _new),
    **dict.fromkeys(LIKE, _like),
    **dict.fromkeys(DATA, _data),
    **dict.fromkeys(SAME, _same),
    **dict.fromkeys(FIRST, _first),
    "full": _full,
    "new_full": _new_full,
    "randint": _randint,
    "eye": _eye,
    "arange": _arange,
    "view": _view,
    "reshape": _view,
    "expand": _expand,
    "unsqueeze": _unsqueeze,
    "transpose": _transpose,
    "swapaxes": _transpose,
    "permute": _permute,
    "t": _t,
    "T": _t,
    "__getitem__": _getitem,
    "cat": _cat,
    "concat": _cat,
    "concatenate": _cat,
    "stack": _stack,
    "outer": _outer,
    "ger": _outer,
    "flatten": _flatten,
    "squeeze": _squeeze,
    "mT": _mt,
}

__all__ = ["HANDLERS", "Unsupported", "leaves", "map_sizes", "number", "plain", "tensors"]
