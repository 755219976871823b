"""The counting oracle: a program's op counts and DRAM elements by enumeration.

:mod:`solar.ir.cost` and :mod:`solar.ir.footprint` derive counts analytically (closed forms,
arithmetic progressions, proven lower bounds). This module counts the same quantities by brute
force at small sizes, sharing nothing with those derivations, so that the two can disagree:
every executed instance of every statement is enumerated on numpy index grids (guards
evaluated), every access is mapped to storage offsets of its base (a view's offset and strides,
or row-major strides; indirect entries from the index data as the program computes it, read
through :func:`solar.interp.torch.execute.execute`'s observer), and each quantity the cost
rules define is counted as a set.

*Values.* Every storage element holds a value with an integer id. A write gives the elements
it writes new ids. In a kernel with sequential loops the new id is a *value number*: the id of
(statement, element, the ids of everything the element was computed from), so an iteration that
recomputes an element from the same inputs writes the same id: work that does not change with
the loop is recognised by its inputs, not by an argument about addresses (the cost rules tag
loads of rewritten storage instead, see :mod:`solar.ir.cost`).

*Ops* (per statement, over all iterations of its kernel's loops):

- a contraction (``sum`` of ``mul`` of two loads, each maybe cast): 2 per distinct pair of
  operand value ids;
- every other ``Call`` (identical printed forms once): its ``alu`` flops on the CUDA-core class
  of its dtype and ``sfu`` MUFU ops, per distinct tuple of (value ids of the loads below it,
  values of the ``Index`` nodes below it); none when that tuple is empty (a constant);
- combines of a reduction: distinct terms minus distinct outputs, or distinct (output, term)
  pairs when it accumulates (a term: the tuple of the expression's load ids and index values;
  an output: the id the statement writes);
- a scan: distinct outputs minus distinct rows, times its operator's combine cost;
- an extern routine: its row expression's calls, plus the routine's table entry for the rows.

*DRAM elements*: accesses are replayed in execution order (statements, and iterations of
looped kernels); an element is read when a statement loads it (or accumulates into it) before
the kernel (the program, for the fused view) has written it, and written when a statement's
executed instance writes it; a reduction that does not accumulate also writes the outputs no
instance reaches (the reduction's identity, as the executor does). Kernel-local storage does
not count; the program view counts reads of graph inputs, weights and constants and writes of
those and of graph outputs.

:func:`check` compares the oracle with the analytical counts (exact counts must agree, proven
lower bounds must not exceed the oracle) and returns the disagreements.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from solar.interp.torch.scalar import torch_op
from solar.ir.complex_cost import call_cost, complex_value, contraction_multiplier
from solar.ir.cost import contraction_class, cuda_class
from solar.ir.extern import extern_op
from solar.ir.ops import REDUCTION_COMBINE_COST
from solar.ir.program import Extern, Kernel, Program, Scan, Statement, StatementVisitor
from solar.ir.scalar import Call, Const, Expr, Index, Indirect, Load

MAX_INSTANCES = 1 << 20  # largest statement domain (per loop iteration) the oracle enumerates

Storage = Callable[[str], torch.Tensor]


class OracleError(ValueError):
    """The program cannot be counted by enumeration, or breaks an IR rule the oracle checks
    (an index outside its tensor dim at an executed instance)."""


@dataclass
class OracleCounts:
    """Counts by enumeration. ``ops[(k, s)]``: op class -> count of statement ``s`` of kernel
    ``k``; DRAM elements per storage base, per kernel and for the fused program."""

    ops: dict[tuple[int, int], dict[str, int]]
    kernel_reads: list[dict[str, int]]
    kernel_writes: list[dict[str, int]]
    program_reads: dict[str, int]
    program_writes: dict[str, int]


@dataclass
class _Rows:
    """Rows (instance tuples) collected over every iteration, counted distinct at the end."""

    parts: list[np.ndarray] = field(default_factory=list)

    def add(self, cols: list[np.ndarray], n: int) -> None:
        self.parts.append(np.stack(cols, axis=1) if cols else np.zeros((n, 0), np.int64))

    def distinct(self) -> int:
        if not self.parts:
            return 0
        rows = np.concatenate(self.parts)
        if rows.shape[1] == 0:
            return min(1, rows.shape[0])
        return int(np.unique(rows, axis=0).shape[0])


@dataclass
class _Tally:
    """One counted quantity of a statement: ``alu`` flops (on ``cls``) and ``sfu`` ops per
    distinct row of ``plus``, less the distinct rows of ``minus`` (at least 0) if given."""

    cls: str
    alu: int
    sfu: int
    plus: _Rows = field(default_factory=_Rows)
    minus: _Rows | None = None

    def count(self) -> int:
        n = self.plus.distinct()
        return n if self.minus is None else max(0, n - self.minus.distinct())


class _Counter:
    def __init__(self, program: Program) -> None:
        self.p = program
        self.vid: dict[str, np.ndarray] = {}
        self.next_id = 0
        self.numbers: dict[tuple, int] = {}
        self.tallies: dict[tuple, _Tally] = {}
        self.extern_rows: dict[tuple[int, int], _Rows] = defaultdict(_Rows)
        n = len(program.kernels)
        self.k_read: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
        self.k_written: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
        self.p_read: dict[str, np.ndarray] = {}
        self.p_written: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------------ storage
    def fresh(self, n: int) -> np.ndarray:
        ids = np.arange(self.next_id, self.next_id + n, dtype=np.int64)
        self.next_id += n
        return ids

    def ids(self, base: str) -> np.ndarray:
        if base not in self.vid:
            self.vid[base] = self.fresh(self.p.tensors[base].numel)
        return self.vid[base]

    def mask(self, masks: dict[str, np.ndarray], base: str) -> np.ndarray:
        if base not in masks:
            masks[base] = np.zeros(self.p.tensors[base].numel, dtype=bool)
        return masks[base]

    def layout(self, tensor: str) -> tuple[str, tuple[int, ...], tuple[int, ...], int]:
        decl = self.p.tensors[tensor]
        if decl.view is not None:
            if decl.itemsize != self.p.tensors[decl.view.base].itemsize:
                raise OracleError(
                    f"{tensor} reinterprets {decl.view.base} as {decl.dtype} (another element "
                    "size), which the oracle does not enumerate; footprints count it "
                    "(solar.ir.footprint._access_set)"
                )
            return decl.view.base, decl.shape, decl.view.strides, decl.view.offset
        strides = [math.prod(decl.shape[i + 1 :]) for i in range(len(decl.shape))]
        return tensor, decl.shape, tuple(strides), 0

    # ------------------------------------------------------------------ one statement
    def visit(self, ki: int, si: int, kernel: Kernel, env: Mapping[str, int], mem) -> None:
        st = kernel.statements[si]
        where = f"statement {si} of kernel {kernel.name}"
        inst = _Instances(self, st, env, mem, where)
        looped = bool(kernel.loops)
        if inst.n:
            loads = {id(ld): inst.offsets(ld.tensor, ld.index) for ld in _all_loads(st)}
            out_base, out_off = inst.offsets(st.out.tensor, st.out.index)
            load_ids = {k: self.ids(b)[off] for k, (b, off) in loads.items()}
            cur_out = self.ids(out_base)[out_off]
            self._dram(ki, st, loads, out_base, out_off)
            terms = _signature(st.expr, load_ids, inst)
            if st.accumulate:
                terms = [*terms, cur_out]
            new_out = self._write(ki, si, st, inst, out_base, out_off, terms, looped)
            self._ops(ki, si, st, inst, load_ids, new_out, env)
        self._identity_writes(ki, si, st, env, inst, where)

    def _identity_writes(self, ki, si, st: Statement, env, inst: _Instances, where) -> None:
        """A reduction that does not accumulate writes every output of its box: the
        identity where no instance executes (as the executor does)."""
        if st.reduce is None or st.accumulate or st.kind != "nest" or st.out.indirect:
            return
        box = _Instances(self, replace(st, dims=st.parallel_dims, guards=()), env, None, where)
        base, off = box.offsets(st.out.tensor, st.out.index)
        done = inst.offsets(st.out.tensor, st.out.index)[1] if inst.n else off[:0]
        idle = np.setdiff1d(off, done)
        if idle.size == 0:
            return
        self.mask(self.k_written[ki], base)[idle] = True
        self.mask(self.p_written, base)[idle] = True
        keys = [(ki, si, int(o), "identity") for o in idle]
        ids = [self.numbers.setdefault(k, int(self.fresh(1)[0])) for k in keys]
        self.ids(base)[idle] = np.asarray(ids, dtype=np.int64)

    def _dram(self, ki: int, st: Statement, loads, out_base: str, out_off: np.ndarray) -> None:
        """Reads before writes, per kernel and for the whole program (a statement reads
        before it writes)."""
        touched: dict[str, list[np.ndarray]] = defaultdict(list)
        for b, off in loads.values():
            touched[b].append(off)
        if st.accumulate:
            touched[out_base].append(out_off)
        for b, offs in touched.items():
            hit = np.zeros(self.p.tensors[b].numel, dtype=bool)
            hit[np.concatenate(offs)] = True
            self.mask(self.k_read[ki], b)[:] |= hit & ~self.mask(self.k_written[ki], b)
            self.mask(self.p_read, b)[:] |= hit & ~self.mask(self.p_written, b)
        self.mask(self.k_written[ki], out_base)[out_off] = True
        self.mask(self.p_written, out_base)[out_off] = True

    def _write(self, ki, si, st, inst, base, off, terms, looped) -> np.ndarray:
        """Give the written elements new value ids; return the id written per instance."""
        uniq, inverse = np.unique(off, return_inverse=True)
        if not looped:
            new = self.fresh(uniq.size)
        else:
            rows = np.stack(terms, axis=1) if terms else np.zeros((inst.n, 0), np.int64)
            groups = _contributors(st, inst, inverse, uniq.size)
            new = np.empty(uniq.size, dtype=np.int64)
            for j, members in enumerate(groups):
                r = np.unique(rows[members], axis=0)
                key = (ki, si, int(uniq[j]), r.shape, r.tobytes())
                if key not in self.numbers:
                    self.numbers[key] = int(self.fresh(1)[0])
                new[j] = self.numbers[key]
        self.ids(base)[uniq] = new
        return new[inverse]

    # -------------------------------------------------------------------------- ops
    def tally(self, key, label: str, cls: str, cost: tuple[int, int], minus=False) -> _Tally:
        if (key, label) not in self.tallies:
            self.tallies[(key, label)] = _Tally(cls, *cost, minus=_Rows() if minus else None)
        return self.tallies[(key, label)]

    def _ops(self, ki, si, st, inst, load_ids, new_out, env) -> None:
        key = (ki, si)
        pair = _contraction_pair(st)
        if pair is not None:
            k = contraction_multiplier(self.p, pair)  # real multiply-adds per complex pair
            t = self.tally(key, "pairs", contraction_class(st, self.p), (2 * k, 0))
            t.plus.add([load_ids[id(ld)] for ld in pair], inst.n)
            return
        seen: set[str] = set()
        for node in _value_nodes(st.expr):
            if not isinstance(node, Call) or str(node) in seen:
                continue
            seen.add(str(node))
            alu, sfu = call_cost(self.p, node)  # complex operands: COMPLEX_COST's row
            cols = _signature(node, load_ids, inst)
            if (alu or sfu) and cols:
                cls = cuda_class(_call_dtype(self.p, st, node))
                self.tally(key, str(node), cls, (alu, sfu)).plus.add(cols, inst.n)
        cls = cuda_class(_call_dtype(self.p, st, st.expr))
        combine = dict(REDUCTION_COMBINE_COST)
        if complex_value(self.p, st.expr):  # a complex combine: a sum's 2 adds, a product's 6
            combine.update(sum=(2, 0), prod=(6, 0))
        terms = _signature(st.expr, load_ids, inst)
        _Combines(self, key, inst, new_out, env, terms, cls, combine).visit(st)

    def totals(self) -> dict[tuple[int, int], dict[str, int]]:
        ops: dict[tuple[int, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for (key, _), t in self.tallies.items():
            n = t.count()
            ops[key][t.cls] += t.alu * n
            ops[key]["sfu"] += t.sfu * n
        for (ki, si), rows in self.extern_rows.items():
            st = self.p.kernels[ki].statements[si]
            assert isinstance(st, Extern)
            routine = extern_op(st.routine)
            n = math.prod(int(d.extent) for d in st.reduction_dims)
            m = int(st.parallel_dims[-1].extent)
            for c, k in routine.ops(n, m, rows.distinct(), dict(st.attrs)).items():
                ops[(ki, si)][c] += k
        return {k: {c: v for c, v in d.items() if v} for k, d in ops.items()}


@dataclass
class _Combines(StatementVisitor[None]):
    """What a statement combines beyond its expression's calls, by kind, tallied on the
    counter (or, for an extern routine, its rows collected for the routine's count)."""

    c: _Counter
    key: tuple[int, int]
    inst: _Instances
    new_out: np.ndarray
    env: Mapping[str, int]
    terms: list[np.ndarray]
    cls: str
    combine: dict[str, tuple[int, int]]

    def extern(self, st: Extern) -> None:
        batch = [self.inst.dim(d.name) for d in st.parallel_dims[:-1]]
        loop = [np.full(self.inst.n, v, np.int64) for v in self.env.values()]
        self.c.extern_rows[self.key].add([*loop, *batch], self.inst.n)

    def scan(self, st: Scan) -> None:  # distinct outputs less distinct rows
        assert st.reduce is not None
        t = self.c.tally(self.key, "combines", self.cls, self.combine[st.reduce], minus=True)
        t.plus.add([self.new_out], self.inst.n)
        t.minus.add(_scan_rows(st, self.inst, self.new_out), self.inst.n)  # type: ignore[union-attr]

    def nest(self, st: Statement) -> None:
        n = self.inst.n
        if st.accumulate:  # distinct (output, term) pairs
            cost = (
                self.combine[st.reduce]
                if st.reduce
                else self.combine["sum"]
                if complex_value(self.c.p, st.expr)
                else (1, 0)
            )
            self.c.tally(self.key, "combines", self.cls, cost).plus.add(
                [self.new_out, *self.terms], n
            )
        elif st.reduce is not None:  # distinct terms less distinct outputs
            t = self.c.tally(self.key, "combines", self.cls, self.combine[st.reduce], minus=True)
            t.plus.add(self.terms, n)
            t.minus.add([self.new_out], n)  # type: ignore[union-attr]


class _Instances:
    """The executed instances of one statement (one loop iteration): one array per dim."""

    def __init__(self, counter: _Counter, st: Statement, env, mem, where: str) -> None:
        self.c, self.st, self.mem, self.where = counter, st, mem, where
        extents = [int(d.extent) for d in st.dims]
        total = math.prod(extents)
        if total > MAX_INSTANCES:
            raise OracleError(f"{where}: {total} instances; the oracle enumerates small shapes")
        grid = np.indices(extents, dtype=np.int64).reshape(len(extents), total)
        self.env = {d: np.full(total, v, np.int64) for d, v in env.items()}
        self.env.update({d.name: grid[i] for i, d in enumerate(st.dims)})
        keep = np.ones(total, dtype=bool)
        for g in st.guards:
            v = self.affine(g.expr, total)
            keep &= (v >= g.lo) & (v < g.hi)
        self.env = {d: v[keep] for d, v in self.env.items()}
        self.n = int(keep.sum())

    def dim(self, d: str) -> np.ndarray:
        return self.env[d]

    def affine(self, e, n: int | None = None) -> np.ndarray:
        n = self.n if n is None else n
        acc = np.full(n, e.const, dtype=np.int64)
        for d, k in e.terms:
            acc = acc + k * self.env[d]
        return acc

    def offsets(self, tensor: str, index) -> tuple[str, np.ndarray]:
        """Storage base and offsets of ``tensor[index]`` at every instance, every index
        entry checked against its tensor dim."""
        base, shape, strides, offset = self.c.layout(tensor)
        off = np.full(self.n, offset, dtype=np.int64)
        for k, (e, size, stride) in enumerate(zip(index, shape, strides, strict=True)):
            v = self.indirect(e.expr) if isinstance(e, Indirect) else self.affine(e)
            if self.n and (int(v.min()) < 0 or int(v.max()) >= size):
                raise OracleError(
                    f"{self.where}: index {k} of {tensor}[{', '.join(map(str, index))}] takes "
                    f"values in [{int(v.min())}, {int(v.max())}], outside [0, {size})"
                )
            off = off + stride * v
        return base, off

    def indirect(self, e: Expr) -> np.ndarray:
        if self.mem is None:
            raise OracleError(f"{self.where}: indirect index {e} needs the program's values")
        v = self.value(e)
        return np.broadcast_to(v.to(torch.int64).cpu().numpy(), (self.n,)).astype(np.int64)

    def value(self, e: Expr) -> torch.Tensor:
        """An index expression's values (native dtypes, as the executor computes them)."""
        if isinstance(e, Load):
            base, off = self.offsets(e.tensor, e.index)
            return self.mem(base).cpu()[torch.from_numpy(off)]
        if isinstance(e, Const):
            return torch.tensor(e.value)
        if isinstance(e, Index):
            return torch.from_numpy(self.affine(e.expr))
        if isinstance(e, Call):
            return torch_op(e.op)(*(self.value(a) for a in e.args), **dict(e.attrs))
        raise OracleError(f"{self.where}: cannot evaluate {e!r}")


# ------------------------------------------------------------------------------ helpers


def _all_loads(st: Statement) -> list[Load]:
    """Every load of the statement: the expression's, their index loads, the output's index
    loads (one entry per distinct node)."""
    out: dict[int, Load] = {}

    def walk(e: Expr) -> None:
        if isinstance(e, Load):
            out.setdefault(id(e), e)
            for x in e.index:
                if isinstance(x, Indirect):
                    walk(x.expr)
        elif isinstance(e, Call):
            for a in e.args:
                walk(a)

    walk(st.expr)
    for x in st.out.index:
        if isinstance(x, Indirect):
            walk(x.expr)
    return list(out.values())


def _value_nodes(e: Expr):
    """Nodes that compute the value (not index arithmetic inside indirect entries)."""
    yield e
    if isinstance(e, Call):
        for a in e.args:
            yield from _value_nodes(a)


def _signature(e: Expr, load_ids: dict[int, np.ndarray], inst: _Instances) -> list[np.ndarray]:
    """Per instance: the value ids of the loads below ``e`` and the values of its Index
    nodes, one column each."""
    cols = []
    for node in _value_nodes(e):
        if isinstance(node, Load):
            cols.append(load_ids[id(node)])
        elif isinstance(node, Index):
            cols.append(inst.affine(node.expr))
    return cols


def _operand(e: Expr) -> Load | None:
    if isinstance(e, Call) and e.op == "cast" and len(e.args) == 1:
        e = e.args[0]
    return e if isinstance(e, Load) else None


def _contraction_pair(st: Statement) -> tuple[Load, Load] | None:
    e = st.expr
    if st.reduce != "sum" or st.kind != "nest" or not isinstance(e, Call):
        return None
    if e.op != "mul" or len(e.args) != 2:
        return None
    a, b = _operand(e.args[0]), _operand(e.args[1])
    return (a, b) if a is not None and b is not None else None


def _call_dtype(program: Program, st: Statement, node: Expr) -> str:
    dt = st.dtype or program.tensors[st.out.tensor].dtype
    if dt != "bool":
        return dt
    for n in _value_nodes(node):
        if isinstance(n, Load) and program.tensors[n.tensor].dtype != "bool":
            return program.tensors[n.tensor].dtype
    return "bool"


def _contributors(st: Statement, inst: _Instances, inverse: np.ndarray, n: int) -> list:
    """Per written element: the instances its value is computed from (for a scan, the
    instances of its row up to it; for an extern routine, its whole row)."""
    if st.kind == "nest":
        order = np.argsort(inverse, kind="stable")
        return np.split(order, np.cumsum(np.bincount(inverse, minlength=n))[:-1])
    prefix = isinstance(st, Scan)
    along = st.along if isinstance(st, Scan) else st.parallel_dims[-1].name
    others = [inst.dim(d.name) for d in st.parallel_dims if d.name != along]
    row = np.unique(np.stack(others, 1), axis=0, return_inverse=True)[1] if others else None
    row = np.zeros(inst.n, np.int64) if row is None else row.reshape(-1)
    groups: list = [None] * n
    pos = inst.dim(along)
    for j in range(inst.n):
        if prefix:
            members = np.flatnonzero((row == row[j]) & (pos <= pos[j]))
        else:
            members = np.flatnonzero(row == row[j])
        groups[inverse[j]] = members
    return groups


def _scan_rows(st: Scan, inst: _Instances, new_out: np.ndarray) -> list[np.ndarray]:
    """Per instance, its row: the other parallel dims and the id written at the row's last
    executed position (which changes whenever anything in the row does)."""
    others = [inst.dim(d.name) for d in st.parallel_dims if d.name != st.along]
    pos = inst.dim(st.along)
    key = np.stack(others, 1) if others else np.zeros((inst.n, 0), np.int64)
    _, row = np.unique(key, axis=0, return_inverse=True)
    row = row.reshape(-1)
    last = np.full(row.max() + 1 if inst.n else 0, -1, np.int64)
    np.maximum.at(last, row, pos)
    at_last = pos == last[row]
    final = np.empty_like(last)
    final[row[at_last]] = new_out[at_last]
    return [*others, final[row]]


# ---------------------------------------------------------------------------- driver


def _needs_values(program: Program) -> bool:
    return any(
        isinstance(e, Indirect)
        for k in program.kernels
        for st in k.statements
        for acc in [st.out.index, *(ld.index for ld in st.loads())]
        for e in acc
    )


def count(program: Program, values: Mapping[str, torch.Tensor] | None = None) -> OracleCounts:
    """Count ``program`` by enumeration. ``values`` (inputs and weights, as for
    :func:`solar.interp.torch.execute.execute`) are needed when it has indirect indices."""
    c = _Counter(program)
    if _needs_values(program):
        if values is None:
            raise OracleError(f"{program.name}: indirect indices need the program's values")
        from solar.interp.torch.execute import execute

        def observe(ki: int, si: int, env, storage: Storage) -> None:
            c.visit(ki, si, program.kernels[ki], env, storage)

        execute(program, values, observe=observe)
    else:
        for ki, k in enumerate(program.kernels):
            names = [d.name for d in k.loops]
            for it in itertools.product(*(range(int(d.extent)) for d in k.loops)):
                env = dict(zip(names, it, strict=True))
                for si in range(len(k.statements)):
                    c.visit(ki, si, k, env, None)
    return _result(program, c)


def _result(program: Program, c: _Counter) -> OracleCounts:
    def sizes(masks: dict[str, np.ndarray], ok: Callable[[str], bool]) -> dict[str, int]:
        return {b: int(m.sum()) for b, m in masks.items() if ok(b) and m.any()}

    def not_local(b: str) -> bool:
        return program.tensors[b].role != "local"

    outer = ("input", "weight", "constant")
    return OracleCounts(
        c.totals(),
        [sizes(r, not_local) for r in c.k_read],
        [sizes(w, not_local) for w in c.k_written],
        sizes(c.p_read, lambda b: program.role(b) in outer),
        sizes(c.p_written, lambda b: program.role(b) in (*outer, "output")),
    )


# ----------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Disagreement:
    """One analytical count that the oracle contradicts."""

    where: str  # "kernel conv_0 statement 1", "kernel conv_0 reads x", "program writes y"
    what: str  # op class, or "elements"
    analytical: int
    exact: bool  # the analytical count claims to be exact (else: a proven lower bound)
    oracle: int

    def __str__(self) -> str:
        claim = "exact" if self.exact else "lower bound"
        mine = f"analytical {self.analytical} ({claim})"
        return f"{self.where} {self.what}: {mine}, oracle {self.oracle}"


def _agree(analytical: int, exact: bool, oracle: int) -> bool:
    return analytical == oracle if exact else analytical <= oracle


def check(
    program: Program,
    values: Mapping[str, torch.Tensor] | None = None,
    counts: OracleCounts | None = None,
) -> list[Disagreement]:
    """Every analytical count of ``program`` (:func:`solar.ir.cost.op_counts`,
    :func:`~solar.ir.cost.kernel_io`, :func:`~solar.ir.cost.program_io`) against the
    oracle: an exact count must equal it, a lower bound must not exceed it."""
    from solar.ir.cost import kernel_io, op_counts, program_io

    counts = counts or count(program, values)
    bad: list[Disagreement] = []

    def compare(where: str, mine: dict, theirs: dict[str, int], exact: bool = True) -> None:
        for key in sorted({*mine, *theirs}):
            a, exact = mine.get(key, (0, exact))
            o = int(theirs.get(key, 0))
            if not _agree(a, exact, o):
                bad.append(Disagreement(where, key, a, exact, o))

    def elements(fps: dict) -> dict[str, tuple[int, bool]]:
        return {b: (f.elements, f.exact) for b, f in fps.items()}

    for ki, k in enumerate(program.kernels):
        for si, st in enumerate(k.statements):
            oc = op_counts(program, st, k)
            mine = {c: (n, oc.exact) for c, n in oc.ops.items()}
            theirs = counts.ops.get((ki, si), {})
            compare(f"kernel {k.name} statement {si}", mine, theirs, oc.exact)
        io = kernel_io(program, k)
        compare(f"kernel {k.name} reads", elements(io.reads), counts.kernel_reads[ki])
        compare(f"kernel {k.name} writes", elements(io.writes), counts.kernel_writes[ki])
    io = program_io(program)
    compare("program reads", elements(io.reads), counts.program_reads)
    compare("program writes", elements(io.writes), counts.program_writes)
    return bad
