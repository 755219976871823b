"""Which dims of the tensors a problem file builds come from which size constants, and where
a size constant is used as a plain number.

While a problem file's ``get_init_inputs()``, ``Model(...)`` and ``get_inputs()`` run with
some module constants replaced by :class:`~solar.algebra.size.Size` s, a :class:`Tracker` (a
``TorchFunctionMode``: it sees every torch call, methods and ``torch.nn.functional``
included) records for each tensor made the sympy expression of each of its dims, read off the
call exactly (:mod:`solar.symbolic.calls`): factories take them from their size arguments
(``2 * SEQ`` included), casts, copies and elementwise calls keep them, views, ``cat``, basic
indexing rearrange them as their arguments say. Reading a tracked tensor's ``shape``,
``size()``, ``numel()`` or ``len()`` gives ``Size`` s, except inside PyTorch's weight
initialisation (``torch.nn.init``, ``reset_parameters``), which computes values, not sizes.

Any other call that receives a ``Size`` or a tensor with symbolic dims makes tensors whose dims
are not followed: they are marked :class:`Unknown` with the call and the line, and the
``Size`` arguments pass as plain numbers with a guard saying the size was used as a plain
number there (the formula is then specialized to that value: sound, and said). Values that
are data, not sizes (``randint``'s bounds, ``full``'s fill value, a scalar multiplied in),
pass as plain numbers without a guard: solar's analysis never reads tensor values.

While the program is traced, :class:`PlainSizes` gives a size constant passed to a torch call
the trace's own ``SymInt`` (or specializes it, said); :func:`checked_range` is the problem
file's ``range``, which records a loop over a size constant (CPython's ``range`` reads an int
subclass without asking it).
"""

from __future__ import annotations

import sys
import types
import weakref
from dataclasses import dataclass
from pathlib import Path

import sympy
import torch
from torch.overrides import TorchFunctionMode

from solar.algebra.size import Real, Recording, Size, make
from solar.symbolic.calls import (
    HANDLERS,
    Dims,
    Unsupported,
    leaves,
    map_sizes,
    number,
    plain,
    tensors,
)

_SHAPE_READS = {"shape", "size", "numel", "__len__"}


@dataclass
class Unknown:
    """A tensor whose dims solar did not follow: made by ``call`` at ``where``."""

    call: str
    where: str


@dataclass
class Entry:
    ref: weakref.ref  # the tensor (to tell whether the program still holds it)
    dims: Dims | Unknown
    where: str  # the line of the problem file that made it
    storage: object  # its storage, kept alive: an alias made of it later finds it
    meta: tuple  # shape, strides, offset, dtype: what an alias must share


def user_line() -> str:
    """``file:line`` of the innermost frame outside torch and solar (the problem file)."""
    f = sys._getframe(1)
    torch_dir = str(Path(torch.__file__).parent)
    solar_dir = str(Path(__file__).parents[1])
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith((torch_dir, solar_dir)) and "importlib" not in name:
            return f"{Path(name).name}:{f.f_lineno}"
        f = f.f_back
    return "(unknown place)"


_NN = str(Path(torch.__file__).parent / "nn")
_DISPATCH = (__file__, str(Path(torch.__file__).parent / "overrides.py"))
_INIT_FUNCTIONS = {"reset_parameters", "_reset_parameters"}


def _in_init() -> bool:
    """Whether the torch call being handled comes from weight initialisation in PyTorch's
    own modules (``torch.nn.init``, a module's ``reset_parameters``), which reads weights'
    shapes to compute their initial values: data, not sizes."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename in _DISPATCH:
        f = f.f_back
    if f is None or not f.f_code.co_filename.startswith(_NN):
        return False
    return f.f_code.co_filename.endswith("init.py") or f.f_code.co_name in _INIT_FUNCTIONS


def _name(func) -> str:
    owner = getattr(func, "__self__", None)
    if isinstance(owner, types.GetSetDescriptorType):  # a property: t.shape, t.T, t.data
        return owner.__name__
    return getattr(func, "__name__", "")


def _free(dims: Dims | Unknown) -> bool:
    return isinstance(dims, Unknown) or any(not d.is_number for d in dims)


class Tracker(TorchFunctionMode):
    """Records the dims of the tensors made while it is active (see the module docstring);
    decisions on sizes made meanwhile (``range(N)``, ``if N > 4``) go to ``recording``."""

    def __init__(self, recording: Recording) -> None:
        super().__init__()
        self.recording = recording
        self.entries: dict[int, Entry] = {}  # id(tensor) -> what it is, while it lives
        self.by_storage: dict[int, list[Entry]] = {}  # storage -> what was made on it

    # -- what is known ----------------------------------------------------------------

    def dims(self, t: torch.Tensor) -> Dims | Unknown | None:
        """The dims of ``t`` (or of a tracked tensor it aliases with the same metadata, such
        as the ``nn.Parameter`` made of it, even after that one is gone), or None for a
        tensor never seen (made before the sizes were symbols, or by no call with sizes: a
        constant)."""
        e = self.entries.get(id(t))
        if e is not None and e.ref() is t:
            return e.dims
        meta = _meta(t)
        for e in reversed(self.by_storage.get(storage_key(t), [])):
            if e.meta == meta:
                return e.dims
        return None

    def live(self) -> list[tuple[torch.Tensor, Entry]]:
        """The tracked tensors still alive whose dims are symbolic or unknown."""
        out = []
        for e in self.entries.values():
            t = e.ref()
            if t is not None and _free(e.dims):
                out.append((t, e))
        return out

    def _set(self, out: object, dims: Dims | Unknown, where: str) -> None:
        if not isinstance(out, torch.Tensor):
            return
        if isinstance(dims, tuple) and len(dims) != out.dim():
            dims = Unknown("a call of unexpected rank", where)
        key = id(out)
        ref = weakref.ref(out, lambda _, k=key: self._drop(k))
        storage = _storage(out)
        e = Entry(ref, dims, where, storage, _meta(out))
        self.entries[key] = e
        if storage is not None:
            self.by_storage.setdefault(storage._cdata, []).append(e)

    def _drop(self, key: int) -> None:
        e = self.entries.get(key)
        if e is not None and e.ref() is None:
            del self.entries[key]

    def _known(self, t: torch.Tensor) -> Dims:
        d = self.dims(t)
        if d is None:
            return tuple(sympy.Integer(int(n)) for n in t.shape)
        if isinstance(d, Unknown):
            raise Unsupported  # made by a call not followed: so is what is made of it
        return d

    # -- the calls ----------------------------------------------------------------------

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        if getattr(func, "__module__", None) == "torch.nn.init":  # weights' values only
            return func(*plain(args), **plain(kwargs))
        if name in _SHAPE_READS and args and isinstance(args[0], torch.Tensor):
            return self._read_shape(name, func, args, kwargs)
        if not self._involved(args, kwargs):  # no size in sight: a constant shape
            return func(*args, **kwargs)
        where = user_line()
        handler = HANDLERS.get(name)
        dims = None
        if handler is not None:
            try:
                dims = handler(self._known, args, kwargs)
            except Unsupported:
                dims = None
        if dims is not None:
            out = func(*plain(args), **plain(kwargs))
            self._set(out, dims, where)
            return out
        out = func(*self._escaped(args, name, where), **self._escaped(kwargs, name, where))
        inputs = {id(t) for t in tensors((args, kwargs))}
        for t in tensors(out):
            if id(t) not in inputs:  # an in-place call keeps what is known of its tensor
                self._set(t, Unknown(_qualname(func), where), where)
        return out

    def _involved(self, args, kwargs) -> bool:
        """Whether a call gets a Size, or a tensor whose dims are symbolic or unknown."""
        for x in leaves((args, kwargs)):
            if isinstance(x, (Size, Real)):
                return True
            if isinstance(x, torch.Tensor):
                d = self.dims(x)
                if d is not None and _free(d):
                    return True
        return False

    def _escaped(self, obj, name: str, where: str):
        return escaped(self.recording, obj, name, where)

    def _read_shape(self, name, func, args, kwargs):
        t = args[0]
        out = func(*args, **kwargs)
        dims = self.dims(t)
        if dims is None or isinstance(dims, Unknown) or not _free(dims) or _in_init():
            return out
        sizes = [make(int(n), e) for n, e in zip(t.shape, dims, strict=True)]
        if name == "shape" or (name == "size" and len(args) == 1 and "dim" not in kwargs):
            return torch.Size(sizes)
        if name == "size":
            d = args[1] if len(args) > 1 else kwargs["dim"]
            return sizes[d]
        if name == "numel":
            return make(int(out), sympy.Mul(*dims))
        return sizes[0]  # __len__


def escaped(recording: Recording, obj, name: str, where: str):
    """``obj`` with its sizes as plain numbers, each recorded on ``recording`` as a size used
    as a plain number by ``name`` at ``where`` (the formula is specialized there)."""

    def plain(x):
        if isinstance(x, (Size, Real)):
            with recording.at(f"used as a plain number by {name} at {where}"):
                recording.add(sympy.Eq(x.expr, number(x)))
            return number(x)
        return x

    return map_sizes(obj, plain)


class PlainSizes(TorchFunctionMode):
    """While a program is traced: a size constant passed to a torch call (``x.view(B, S)``,
    ``F.layer_norm(x, (WIDTH,))``, ``torch.zeros(L)``) would reach PyTorch as a plain number
    (C++ reads an int subclass without asking it). It goes as the trace's own ``SymInt`` of its
    expression where the trace has one (a polynomial in symbols that dims of the tensors seen
    so far carry: ``translate`` maps PyTorch's symbols to the sizes'); otherwise as a plain
    number, recorded as used so at that line (the formula is specialized to it)."""

    def __init__(self, recording: Recording, translate=None) -> None:
        super().__init__()
        self.recording = recording
        self.translate = translate
        self.symints: dict[sympy.Symbol, torch.SymInt] = {}  # size symbol -> a traced dim

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        kwargs = kwargs or {}
        found = list(leaves((args, kwargs)))
        if not any(isinstance(x, (Size, Real)) for x in found):
            return func(*args, **kwargs)
        self._harvest(found)
        where, name = user_line(), _qualname(func)

        def convert(x):
            if isinstance(x, Size):
                sym = self._symint(x.expr)
                if sym is not None:
                    return sym
            return escaped(self.recording, x, name, where)

        return func(*map_sizes(args, convert), **map_sizes(kwargs, convert))

    def _harvest(self, found: list) -> None:
        if self.translate is None:
            return
        for t in found:
            if isinstance(t, torch.Tensor):
                for d in t.shape:
                    if isinstance(d, torch.SymInt):
                        e = self.translate(d.node.expr)
                        if isinstance(e, sympy.Symbol) and e not in self.symints:
                            self.symints[e] = d

    def _symint(self, e: sympy.Expr):
        """``e`` as a SymInt of the trace, or None (a symbol not seen on a tensor yet, or not
        a polynomial with integer coefficients)."""
        free = sorted(e.free_symbols, key=str)
        if not set(free) <= set(self.symints):
            return None
        try:
            poly = sympy.Poly(e, *free)
        except sympy.PolynomialError:
            return None
        if not all(c.is_Integer for c in poly.coeffs()):
            return None
        out = 0
        for powers, c in poly.terms():
            term = int(c)
            for s, k in zip(free, powers, strict=True):
                for _ in range(k):
                    term = term * self.symints[s]
            out = out + term
        return out


def checked_range(recording: Recording):
    """A ``range`` for a problem file's namespace: ``range(N)`` of a size constant is a
    Python loop over it (CPython reads an int subclass without asking it), so record that N
    is used as a plain number there."""

    def range_(*args):
        if any(isinstance(a, Size) for a in args):
            args = escaped(recording, args, "range()", user_line())
        return range(*args)

    return range_


def _qualname(func) -> str:
    name = _name(func)
    owner = getattr(func, "__self__", None)
    if isinstance(owner, types.GetSetDescriptorType) or "TensorBase" in str(func):
        return f"Tensor.{name}"
    module = getattr(func, "__module__", None) or "torch"
    return f"{module}.{name}"


def _storage(t: torch.Tensor):
    try:
        return t.untyped_storage()
    except (RuntimeError, NotImplementedError, TypeError):  # a tensor without storage
        return None


def storage_key(t: torch.Tensor) -> int | None:
    s = _storage(t)
    return None if s is None else s._cdata


def _meta(t: torch.Tensor) -> tuple:
    try:
        return (tuple(t.shape), t.stride(), t.storage_offset(), t.dtype)
    except (RuntimeError, NotImplementedError):
        return (tuple(t.shape), None, None, t.dtype)


# -- reading a call's dims --------------------------------------------------------------


__all__ = [
    "Entry",
    "PlainSizes",
    "Tracker",
    "Unknown",
    "checked_range",
    "escaped",
    "storage_key",
    "user_line",
]
