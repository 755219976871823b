"""Structure cache: the cost facts of structurally identical kernels are computed once.

A transformer's layers lower to the same kernels over and over: the same loop nests, the same
accesses, tensors of the same shapes, strides and dtypes, only the tensor *names* differ. The
cost facts of a kernel (:func:`solar.ir.cost.statement_ops`, the footprint of every load,
:func:`solar.ir.cost.kernel_io`) read nothing else, so they are a function of the kernel's
*structure*:

- every statement with its tensors renamed to their order of first appearance (dims, output
  and load indices, the scalar expression, reduction, guards, precision, dtype, scan, extern
  routine and every other statement field);
- the kernel's sequential loops;
- per tensor touched (and the storage base of each view): shape, dtype, declared role, and
  for a view its base (by position), strides and offset;
- the counting limits in force (:func:`solar.ir.limits.current_limits`), on which the
  footprints' paths depend.

A key holding symbolic sizes is compared exactly (values and expressions, in entries of its
own) and a hit records again the guards the facts were computed under
(:mod:`solar.algebra.memo`).

:func:`kernel_facts` computes the facts on the first kernel of a structure and answers later
ones by renaming the stored result, so 80 identical layers cost one analysis and 79 lookups.
Results are identical to computing each kernel afresh (the facts are computed by the same
functions, on a kernel with the same structure). A kernel whose structure cannot be keyed
(an unknown expression node, an unhashable attribute) is computed directly. One lock guards
the table, so threads analysing different models share it safely.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import cache

from solar.algebra.memo import captured, exact_key, recording_active, replay
from solar.ir.affine import Affine
from solar.ir.cost import KernelIO, kernel_io, statement_kind, statement_ops
from solar.ir.footprint import Footprint, access_footprint
from solar.ir.limits import current_limits
from solar.ir.program import Dim, Guard, Kernel, Program, Statement, with_loops
from solar.ir.scalar import Call, Const, Expr, Index, Indirect, Load

MAX_ENTRIES = 4096  # distinct kernel structures kept (least recently used dropped first)

# Statement fields that hold tensor names (renamed); every other field of the statement's kind
# enters the key as is, after the kind.
_NAMED_FIELDS = ("out", "expr")


@cache
def _plain_fields(kind: type[Statement]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(kind) if f.name not in _NAMED_FIELDS)


@dataclass(frozen=True)
class KernelFacts:
    """Cost facts of one kernel, by the kernel's own tensor names.

    ``ops[i]``: :func:`~solar.ir.cost.statement_ops` of statement ``i``; ``footprints[i]``: the
    :func:`~solar.ir.footprint.access_footprint` of each distinct ``(tensor, index)`` load of
    statement ``i`` (in the order of ``dict.fromkeys((ld.tensor, ld.index) for ld in
    st.loads())``) over the whole kernel (its loop dims included); ``io``: its DRAM traffic;
    ``kinds[i]``: :func:`~solar.ir.cost.statement_kind` of statement ``i``."""

    io: KernelIO
    ops: tuple[dict[str, int], ...]
    footprints: tuple[tuple[Footprint, ...], ...]
    kinds: tuple[str, ...] = ()  # statement_kind of each statement


class _Unkeyable(Exception):
    pass


class _Canon:
    """Renames tensors to their position of first appearance while building a key."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.pos: dict[str, int] = {}
        self.names: list[str] = []
        self.literal = True  # whether every value in the key is a literal (see kernel_key)

    def check(self, value: object) -> object:
        """``value``, noting whether it is a literal."""
        if self.literal and not _is_literal(value):
            self.literal = False
        return value

    def tensor(self, name: str) -> int:
        i = self.pos.get(name)
        if i is None:
            i = self.pos[name] = len(self.names)
            self.names.append(name)
            view = self.program.tensors[name].view
            if view is not None:
                self.tensor(view.base)
        return i

    def affine(self, a: Affine) -> tuple:
        """``a`` as ``(terms, const)``, noting whether its numbers are plain ints (a symbolic
        size is not: the key then stays a tuple, compared exactly by its caller)."""
        if type(a) is not Affine:
            _bad()
        if self.literal and not (type(a.const) is int and all(type(k) is int for _, k in a.terms)):
            self.literal = False
        return (a.terms, a.const)

    def dims(self, dims: tuple[Dim, ...]) -> tuple:
        out = tuple((d.name, d.extent, d.reduction) if type(d) is Dim else _bad() for d in dims)
        if self.literal and not all(type(d.extent) is int for d in dims):
            self.literal = False
        return out

    def index(self, index: tuple) -> tuple:
        return tuple(
            self.affine(e)
            if type(e) is Affine
            else ("I", self.expr(e.expr))
            if type(e) is Indirect
            else _bad()
            for e in index
        )

    def expr(self, e: Expr) -> tuple:
        t = type(e)
        if t is Load:
            return ("L", self.tensor(e.tensor), self.index(e.index))
        if t is Call:
            return ("C", e.op, tuple(self.expr(a) for a in e.args), self.check(e.attrs))
        if t is Const:
            return ("K", repr(e.value))  # repr: 0.0 and -0.0, 1 and 1.0 and True differ
        if t is Index:
            return ("X", self.affine(e.expr))
        return _bad()

    def statement(self, st: Statement) -> tuple:
        out = (self.tensor(st.out.tensor), self.index(st.out.index))
        plain = tuple(self.plain(f, getattr(st, f)) for f in _plain_fields(type(st)))
        return (st.kind, out, self.expr(st.expr), plain)

    def plain(self, name: str, value: object) -> object:
        """A plain statement field's part of the key: dims and guards as tuples."""
        if name == "dims":
            return self.dims(value)  # type: ignore[arg-type]
        if name == "guards":
            return self.check(
                tuple(
                    (self.affine(g.expr), g.lo, g.hi) if type(g) is Guard else _bad()
                    for g in value  # type: ignore[attr-defined]
                )
            )
        return self.check(value)

    def table(self) -> tuple:
        rows = []
        for name in self.names:
            d = self.program.tensors[name]
            v = d.view
            view = None if v is None else (self.pos[v.base], v.strides, v.offset)
            rows.append(self.check((d.shape, d.dtype, d.role, view)))
        return tuple(rows)


def _bad():
    raise _Unkeyable


# The key holds the IR records as tuples of their fields, which compare and hash as the
# records do, and is then one string: its repr, when every value in it is a literal (strings,
# numbers, None, tuples of them: distinct ones have distinct reprs). A string is an object
# Python's collector does not track, where a nested tuple is tracked until collections have
# untracked it level by level: the cache's keys would be thousands of long-lived tracked
# objects, each counting towards the next full collection. A symbolic size is no literal (an
# int subclass; its == records a guard): a key holding one stays a tuple, which the cache
# compares exactly (:mod:`solar.algebra.memo`), as before.

_LITERAL = (str, int, float, bool, type(None))


def _is_literal(value: object) -> bool:
    if type(value) is tuple:
        return all(_is_literal(v) for v in value)
    return type(value) in _LITERAL


def kernel_key(program: Program, kernel: Kernel) -> tuple[str | tuple, list[str]] | None:
    """``(key, names)``: the kernel's structure (hashable: a string, or a tuple where a value
    in it is not a literal) and its tensors in key order; None when the kernel cannot be
    keyed."""
    c = _Canon(program)
    try:
        body = tuple(c.statement(st) for st in kernel.statements)
        key = (body, c.dims(kernel.loops), c.table(), repr(current_limits()))
        if c.literal:
            return repr(key), c.names
        hash(key)
    except (_Unkeyable, TypeError):
        return None
    return key, c.names


def compute_facts(program: Program, kernel: Kernel) -> KernelFacts:
    """The facts of ``kernel``, computed directly (no cache)."""
    ops, fps = [], []
    for st in kernel.statements:
        ops.append(statement_ops(program, st, kernel))
        whole = with_loops(st, kernel.loops)
        loads = dict.fromkeys((ld.tensor, ld.index) for ld in st.loads())
        fps.append(tuple(access_footprint(program, whole, t, i) for t, i in loads))
    kinds = tuple(statement_kind(st) for st in kernel.statements)
    return KernelFacts(kernel_io(program, kernel), tuple(ops), tuple(fps), kinds)


@dataclass
class _Stored:
    """Facts with tensors by key position, as flat tuples of numbers (which the collector
    stops tracking, as it does the string keys)."""

    reads: tuple[int | bool, ...]  # position, elements, exact; position, elements, exact; ...
    writes: tuple[int | bool, ...]
    itemsizes: tuple[int, ...]  # position, itemsize; ...
    ops: tuple[dict[str, int], ...]
    footprints: tuple[tuple[int | bool, ...], ...]  # per statement: elements, exact; ...
    kinds: tuple[str, ...]
    guards: tuple = ()  # symbolic sizes: the guards computing the facts decided (replayed)


def _flat_footprints(items) -> tuple:
    return tuple(x for f in items for x in (f.elements, f.exact))


def _footprints(flat: tuple) -> tuple[Footprint, ...]:
    return tuple(Footprint(flat[i], flat[i + 1]) for i in range(0, len(flat), 2))


def _by_name(flat: tuple, names: list[str]) -> dict[str, Footprint]:
    return {names[flat[i]]: Footprint(flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)}


class StructureCache:
    """Kernel structure -> cost facts, least recently used dropped beyond ``max_entries``."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.enabled = True
        self._data: OrderedDict[str | tuple, _Stored] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.unkeyed = 0

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = self.unkeyed = 0

    def stats(self) -> dict[str, int]:
        return {
            "entries": len(self._data),
            "hits": self.hits,
            "misses": self.misses,
            "unkeyed": self.unkeyed,
        }

    def facts(self, program: Program, kernel: Kernel) -> KernelFacts:
        if not self.enabled:
            return compute_facts(program, kernel)
        keyed = kernel_key(program, kernel)
        if keyed is None:
            self.unkeyed += 1
            return compute_facts(program, kernel)
        key, names = keyed
        sized = exact_key(key) if recording_active() else None
        if sized is not None:  # symbolic sizes: compared exactly, in entries of their own
            key = ("sized", sized)
        with self._lock:
            stored = self._data.get(key)
            if stored is not None:
                self.hits += 1
                self._data.move_to_end(key)
        if stored is not None:
            replay(stored.guards)
            sizes = stored.itemsizes
            io = KernelIO(
                _by_name(stored.reads, names),
                _by_name(stored.writes, names),
                {names[sizes[i]]: sizes[i + 1] for i in range(0, len(sizes), 2)},
            )
            ops = tuple(dict(o) for o in stored.ops)  # callers may mutate their copy
            fps = tuple(_footprints(fs) for fs in stored.footprints)
            return KernelFacts(io, ops, fps, stored.kinds)
        with captured() as rec:  # outside the lock: threads compute at once
            facts = compute_facts(program, kernel)
        pos = {n: i for i, n in enumerate(names)}
        io = facts.io
        stored = _Stored(
            tuple(x for b, f in io.reads.items() for x in (pos[b], f.elements, f.exact)),
            tuple(x for b, f in io.writes.items() for x in (pos[b], f.elements, f.exact)),
            tuple(x for b, s in io.itemsizes.items() for x in (pos[b], s)),
            tuple(dict(o) for o in facts.ops),
            tuple(_flat_footprints(fs) for fs in facts.footprints),
            facts.kinds,
            tuple(rec.guards.items()),
        )
        with self._lock:
            self.misses += 1
            self._data[key] = stored
            if len(self._data) > self.max_entries:
                self._data.popitem(last=False)
        return facts


CACHE = StructureCache()


def kernel_facts(program: Program, kernel: Kernel) -> KernelFacts:
    """Cost facts of ``kernel`` (see the module docstring), through the process-wide cache."""
    return CACHE.facts(program, kernel)


@contextmanager
def structure_cache(enabled: bool) -> Iterator[StructureCache]:
    """Turn the process-wide structure cache on or off inside a ``with`` block (benchmarks
    and tests compare both)."""
    old = CACHE.enabled
    CACHE.enabled = enabled
    try:
        yield CACHE
    finally:
        CACHE.enabled = old
