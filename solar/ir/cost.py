"""Cost facts of the IR: operations per statement by op class, DRAM I/O per kernel and program.

Every count is exact or a proven lower bound (never more), so time bounds built on them stay
below reality. The rules, which are the bound's assumptions:

Operations (:func:`statement_ops`; op classes :data:`OP_CLASSES`):

- *Contraction*: ``reduce == "sum"`` and the expression is ``mul`` of exactly two loads, each
  optionally wrapped in ``cast``. It runs on the matrix unit of its operands' (loaded) dtype:
  float16 -> tc_fp16, bfloat16 -> tc_bf16, float8_* -> tc_fp8, (u)int8 -> tc_int8, float64 ->
  tc_fp64, float32 -> tc_tf32 when ``st.precision == "tf32"`` else cuda_fp32 (IEEE fp32 runs
  FMAs on CUDA cores); other dtypes -> cuda_int32. Mixed operand dtypes use the narrower
  operand's unit (the faster one: a lower bound). Count = 2 flops (one FMA) per distinct pair
  of operand elements over the executed instances (guards applied): for any ordinary
  contraction that is 2 x instances; an instance repeating an earlier operand pair (both
  operands broadcast along a dim) needs no new product.
- Otherwise each ``Call`` node costs ``SCALAR_OPS[op].alu`` flops on the CUDA-core class of the
  compute dtype (``st.dtype``, else the output's; a call in a bool statement uses the dtype of
  the loads below it): float32 -> cuda_fp32, float16 -> cuda_fp16, bfloat16 -> cuda_bf16,
  float64 -> cuda_fp64, float8 -> cuda_fp16, integers and bool -> cuda_int32; and
  ``SCALAR_OPS[op].sfu`` MUFU instructions on ``sfu``. A call is evaluated once per distinct
  tuple of the values it depends on: the storage elements of the loads below it and the
  values of the ``Index`` nodes below it, over the executed instances. So loop-invariant
  subexpressions are hoisted (a term of the row dim only is counted once per row), a
  broadcast (stride-0) operand counts once per element, identical subtrees once (CSE), and a
  call on constants only is folded (0).
- Reductions that are not contractions: combining costs ``REDUCTION_COMBINE_ALU`` per distinct
  term beyond the first of each output: (distinct terms - distinct outputs) when not
  accumulating, (distinct (output, term) pairs) when ``accumulate`` (combining into the
  existing contents); a term is the tuple of the expression's load elements and index values.
  On the compute dtype's CUDA-core class.
- Non-reduction ``accumulate`` statements: one add per distinct (output, term) pair, i.e. per
  executed instance for an injective output.
- Pure copies and casts cost 0.

DRAM traffic (:func:`kernel_io`, :func:`program_io`), per storage base, in elements (bytes =
elements x itemsize of the base's dtype):

- A kernel reads every element of a base that one of its statements loads (or accumulates
  into) before the kernel writes that element; it writes the union of its output accesses
  (over the executed instances; a reduction that does not accumulate writes its whole output
  box, the identity where no instance executes: :func:`written_instances`).
  Kernel-local tensors (role ``local``) are excluded. With ``W0`` the elements written before
  the kernel's first read of the base: when no write of the base falls between its first and
  last read, the reads are exactly ``|read ∪ W0| - |W0|`` (so a base written by an earlier
  statement and then read or accumulated into costs no read: addmm's ``out``); when writes and
  reads interleave, the larger of (reads before the first write) and ``|read ∪ written| -
  |written|`` (elements read and never written), a lower bound, exact when it meets the upper
  bound ``|read ∪ W0| - |W0|``; when the written elements are data-dependent (a scatter: the
  new token's slot of an in-place KV cache), ``|written|`` is replaced by the write
  instances, an upper bound of it (``|read| - instances``). A statement's reads come before
  its own write (in-place updates read).
- The program (fused view) reads every graph input, weight and constant element it loads that
  it has not written before (same rule, in program order), and writes every element of a graph
  output (``program.role(base) == "output"``) or of an input/weight/constant base that some
  kernel writes (an in-place update the caller observes), each element once. Intermediates
  and locals cost nothing.

Extensions:

- *Sequential kernel loops* (``Kernel.loops``): a statement's accesses and op counts range over
  the loop dims too (:func:`solar.ir.program.with_loops`: the loop dims are extra parallel dims
  of every statement). Values are identified by storage position, which a recurrence
  overwrites, so a load whose address does not move with the loop dims is *tagged* (counted
  as a new value every iteration) only when it provably is one: every element it reads is
  rewritten in every iteration by a statement that itself varies (reads something that moves
  with the loop, an ``Index`` of a loop dim, or a tagged load) with a loop-invariant output
  address and guards. A varying statement's output is a new value per iteration; anything
  else is loop-invariant and counted once (it could be hoisted). So an RNN step
  ``h[t+1] = tanh(W h[t] + x[t])`` costs T x the per-step ops, and a rolling buffer
  (``h[b, i]`` rewritten each step) costs the same. DRAM traffic: a base both read and written
  inside one loop (trip count > 1) is interleaved: reads are the larger of the elements read
  and never written and those read in the first iteration before the loop's first write of
  it (a lower bound).
- *Indirect indices* (gathers/scatters): index arithmetic is free; index-tensor loads are
  ordinary reads. The elements an indirect access touches are data-dependent: footprints
  count the provable minimum (all indices equal: one value per indirect entry) with
  ``exact=False`` (:mod:`solar.ir.footprint`), and op counts identify a gathered value by the
  same minimum (its affine part). An embedding ``out[i, j] = table[ids[i], j]`` reads at least
  one table row in the fused bound; the unfused bound still charges the gathered output's
  write (and its read by the consumer). A scatter-reduction without ``accumulate`` (positions
  hit get the reduction of the values sent there) counts (terms - parallel instances)
  combines: at most one output per instance. With ``accumulate`` one combine per distinct
  (output, term) pair, the output taken at its minimum.
- *Scans* (:class:`~solar.ir.program.Scan`): the expression's calls as usual, plus one
  combine (of the reduce operator's cost, :data:`solar.ir.ops.REDUCTION_COMBINE_COST`) per
  output element beyond the first of each row: (executed instances - distinct rows). A
  sequential scan needs exactly that; a work-efficient parallel scan does at most twice as
  many, so it is a lower bound for any scan algorithm (each output beyond a row's first
  combines >= 2 inputs).
- *Extern routines* (:class:`~solar.ir.program.Extern`): the row expression's calls as
  usual plus the routine's ``ops`` from :data:`solar.ir.extern.EXTERN_OPS` (zero for sort,
  topk, kthvalue, median: see that module); DRAM traffic from the accesses, as for any statement.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from math import prod

from solar.algebra.memo import memo
from solar.algebra.size import integer
from solar.ir.affine import Affine
from solar.ir.complex_cost import call_cost, complex_value, contraction_multiplier
from solar.ir.dtypes import itemsize, real_part_dtype
from solar.ir.extern import extern_op
from solar.ir.footprint import (
    Footprint,
    distinct_tuples,
    injective_layout,
    union_footprint,
)
from solar.ir.footprint import flat_form as _flat_form
from solar.ir.limits import Limits, current_limits
from solar.ir.ops import REDUCTION_COMBINE_COST
from solar.ir.program import (
    Dim,
    Extern,
    Kernel,
    Program,
    Scan,
    Statement,
    StatementVisitor,
    TensorDecl,
    with_loops,
)
from solar.ir.scalar import Call, Expr, Index, Load

OP_CLASSES = (
    "tc_fp64",
    "tc_tf32",
    "tc_bf16",
    "tc_fp16",
    "tc_fp8",
    "tc_int8",
    "cuda_fp64",
    "cuda_fp32",
    "cuda_fp16",
    "cuda_bf16",
    "cuda_int32",
    "sfu",
)

_TENSOR_CORE = {
    "float64": "tc_fp64",
    "float16": "tc_fp16",
    "bfloat16": "tc_bf16",
    "float8_e4m3fn": "tc_fp8",
    "float8_e5m2": "tc_fp8",
    "int8": "tc_int8",
    "uint8": "tc_int8",
}

_CUDA_CORE = {
    "float64": "cuda_fp64",
    "float32": "cuda_fp32",
    "float16": "cuda_fp16",
    "bfloat16": "cuda_bf16",
    "float8_e4m3fn": "cuda_fp16",
    "float8_e5m2": "cuda_fp16",
    "complex64": "cuda_fp32",  # complex arithmetic is real arithmetic on the parts
    "complex128": "cuda_fp64",
}


def cuda_class(dtype: str) -> str:
    """CUDA-core op class of arithmetic in ``dtype``."""
    return _CUDA_CORE.get(dtype, "cuda_int32")


def _operand(e: Expr) -> Load | None:
    if isinstance(e, Load):
        return e
    if isinstance(e, Call) and e.op == "cast" and len(e.args) == 1 and isinstance(e.args[0], Load):
        return e.args[0]
    return None


def contraction_operands(st: Statement) -> tuple[Load, Load] | None:
    """The two loads of a contraction (``sum`` of ``mul`` of two optionally cast loads; not a
    scan or an extern routine)."""
    e = st.expr
    if st.reduce != "sum" or not isinstance(e, Call) or e.op != "mul" or len(e.args) != 2:
        return None
    if st.kind != "nest":
        return None
    a, b = (_operand(x) for x in e.args)
    return (a, b) if a is not None and b is not None else None


def is_contraction(st: Statement, program: Program) -> bool:
    return contraction_operands(st) is not None


def statement_kind(st: Statement) -> str:
    """The einsum-graph node kind of a statement: extern, scatter, gather, scan, contraction,
    reduction, map (some arithmetic) or copy (loads and casts only)."""
    return _NodeKind().visit(st)


class _NodeKind(StatementVisitor[str]):
    def extern(self, st: Extern) -> str:
        return "extern"

    def scan(self, st: Scan) -> str:
        return "gather" if st.gathers else "scan"  # a scan never scatters

    def nest(self, st: Statement) -> str:
        if st.scatters:
            return "scatter"
        if st.gathers:
            return "gather"
        if contraction_operands(st) is not None:
            return "contraction"
        if st.reduce:
            return "reduction"
        calls = [e for e in st.expr.walk_values() if isinstance(e, Call) and e.op != "cast"]
        return "map" if calls else "copy"


def contraction_class(st: Statement, program: Program) -> str:
    """Op class a contraction runs on (see the module docstring)."""
    ops = contraction_operands(st)
    if ops is None:
        raise ValueError("not a contraction")
    # complex operands run on the unit of their parts' dtype (ZGEMM on the FP64 tensor cores,
    # CGEMM on TF32 ones when the math mode allows it)
    dts = [real_part_dtype(program.tensors[ld.tensor].dtype) for ld in ops]
    dt = min(dts, key=itemsize)  # mixed dtypes: the narrower, faster unit (stable: first)
    if dt == "float32":
        return "tc_tf32" if st.precision == "tf32" else "cuda_fp32"
    return _TENSOR_CORE.get(dt) or cuda_class(dt)


def _load_form(program: Program, ld: Load) -> Affine:
    """The storage position identifying a loaded value: its flat offset; for a gather, the
    provable minimum (the affine part, or a constant if the layout overlaps)."""
    if ld.indirect and not injective_layout(program, ld.tensor):
        return Affine()
    return _flat_form(program, ld.tensor, ld.index)


@dataclass(frozen=True)
class _Tags:
    """How a statement of a sequential loop tells iterations apart (see the module doc)."""

    loop_forms: tuple[Affine, ...] = ()  # one form per loop dim
    tagged: frozenset = frozenset()  # (tensor, index) of loads that are new every iteration
    varying: bool = False  # the statement computes new values every iteration

    def load(self, ld: Load) -> tuple[Affine, ...]:
        return self.loop_forms if (ld.tensor, ld.index) in self.tagged else ()

    @property
    def out(self) -> tuple[Affine, ...]:
        return self.loop_forms if self.varying else ()


_NO_TAGS = _Tags()


def _signature(program: Program, e: Expr, tags: _Tags = _NO_TAGS) -> list[Affine]:
    """Affine forms whose values determine ``e``: loads' storage offsets (and the loop dims
    for loads that are new every iteration), Index values. Index arithmetic inside indirect
    indices is not part of the value."""
    forms = []
    for node in e.walk_values():
        if isinstance(node, Load):
            forms.append(_load_form(program, node))
            forms.extend(tags.load(node))
        elif isinstance(node, Index):
            forms.append(node.expr)
    return forms


@dataclass(frozen=True)
class _LoopedKernel:
    """What :func:`_tags` reads of a looped kernel and its program, as a value: its
    statements and loops, the declarations of the tensors they touch (and of their bases),
    and the counting limits in force. Equal values have equal tags, whichever program or
    kernel object they come from."""

    statements: tuple[Statement, ...]
    loops: tuple[Dim, ...]
    decls: tuple[TensorDecl, ...]
    limits: Limits

    @staticmethod
    def of(program: Program, kernel: Kernel) -> _LoopedKernel:
        names = {t for st in kernel.statements for t in (st.out.tensor, *_loaded(st))}
        names |= {program.base(t) for t in names}
        decls = tuple(program.tensors[t] for t in sorted(names))
        return _LoopedKernel(tuple(kernel.statements), kernel.loops, decls, current_limits())


def _loaded(st: Statement) -> Iterable[str]:
    return (ld.tensor for ld in st.loads())


@memo(maxsize=256)
def _tags_of(looped: _LoopedKernel) -> tuple[_Tags, ...]:
    """:func:`_tags` of a looped kernel given as a value (a bounded memo keyed by structure,
    exact for symbolic sizes: a hit records the guards its computation decided)."""
    program = Program("", tensors={d.name: d for d in looped.decls})
    kernel = Kernel("", "", list(looped.statements), loops=looped.loops)
    return tuple(_tags(program, kernel))


def _loop_tags(program: Program, kernel: Kernel) -> tuple[_Tags, ...]:
    """Per statement of a looped kernel: its :class:`_Tags` (a fixpoint: tagging loads makes
    statements varying, whose rolling writes tag more loads), computed once per structure
    (every statement of the kernel asks)."""
    return _tags_of(_LoopedKernel.of(program, kernel))


def _tags(program: Program, kernel: Kernel) -> list[_Tags]:
    """:func:`_loop_tags`, computed."""
    names = {d.name for d in kernel.loops}
    forms = tuple(Affine.of(d.name) for d in kernel.loops)
    sts = kernel.statements
    aug = [with_loops(st, kernel.loops) for st in sts]

    def moves(ld: Load) -> bool:
        return bool(set(_flat_form(program, ld.tensor, ld.index).dims) & names)

    def index_moves(st: Statement) -> bool:
        nodes = [*st.expr.walk(), *(n for ld in st.loads() for n in ld.walk())]
        return any(isinstance(n, Index) and set(n.expr.dims) & names for n in nodes)

    tagged: set[tuple[int, str, tuple]] = set()
    varying = [any(moves(ld) for ld in st.loads()) or index_moves(st) for st in sts]
    changed = True
    while changed:
        changed = False
        rolling: dict[str, list] = {}
        for i, st in enumerate(sts):
            out_moves = set(_flat_form(program, st.out.tensor, st.out.index).dims) & names
            guard_moves = any(set(g.expr.dims) & names for g in st.guards)
            if varying[i] and not st.out.indirect and not out_moves and not guard_moves:
                acc = (aug[i], st.out.tensor, st.out.index)
                rolling.setdefault(program.base(st.out.tensor), []).append(acc)
        for i, st in enumerate(sts):
            for ld in st.loads():
                k = (i, ld.tensor, ld.index)
                b = program.base(ld.tensor)
                if k in tagged or b not in rolling or ld.indirect or moves(ld):
                    continue
                w = union_footprint(program, rolling[b])
                rw = union_footprint(program, [*rolling[b], (aug[i], ld.tensor, ld.index)])
                if w.exact and rw.exact and rw.elements == w.elements:
                    tagged.add(k)
                    changed = True
                    varying[i] = True
    return [
        _Tags(
            forms,
            frozenset((t, idx) for j, t, idx in tagged if j == i),
            varying[i],
        )
        for i in range(len(sts))
    ]


def _kernel_of(program: Program, st: Statement) -> Kernel | None:
    """The looped kernel holding ``st`` (None when it is in no looped kernel)."""
    for k in program.kernels:
        if k.loops and any(s is st for s in k.statements):
            return k
    return None


def _compute_dtype(program: Program, st: Statement) -> str:
    return st.dtype or program.tensors[st.out.tensor].dtype


def _call_dtype(program: Program, st: Statement, node: Expr) -> str:
    dt = _compute_dtype(program, st)
    if dt != "bool":
        return dt
    for ld in node.value_loads():
        ldt = program.tensors[ld.tensor].dtype
        if ldt != "bool":
            return ldt
    return "bool"


@dataclass(frozen=True)
class OpCounts:
    """Operations of one statement by op class; ``exact=False`` when some count is a proven
    lower bound (a gathered operand or a scattered output identified by its provable minimum,
    or a distinct-tuple count the footprint arithmetic could only bound from below)."""

    ops: dict[str, int]
    exact: bool


def statement_ops(program: Program, st: Statement, kernel: Kernel | None = None) -> dict[str, int]:
    """Operations of one statement by op class (classes of :data:`OP_CLASSES` with a nonzero
    count only), over all iterations of its kernel's sequential loops. ``kernel``: the kernel
    holding ``st`` (found in ``program`` when not given; only looped kernels matter)."""
    return op_counts(program, st, kernel).ops


def op_counts(program: Program, st: Statement, kernel: Kernel | None = None) -> OpCounts:
    """:func:`statement_ops` with its exactness."""
    if kernel is None:
        kernel = _kernel_of(program, st)
    tags = _NO_TAGS
    if kernel is not None and kernel.loops:
        i = next(j for j, s in enumerate(kernel.statements) if s is st)
        tags = _loop_tags(program, kernel)[i]
        st_all = with_loops(st, kernel.loops)
    else:
        st_all = st
    c = _OpCounter(program, st_all, tags)
    pair = contraction_operands(st)
    if pair is not None:
        forms = [f for ld in pair for f in (_load_form(program, ld), *tags.load(ld))]
        k = contraction_multiplier(program, pair)
        c.ops[contraction_class(st, program)] += 2 * k * c.distinct(forms, list(pair))
        return c.result()
    seen: set[str] = set()
    for node in st.expr.walk_values():
        if not isinstance(node, Call) or str(node) in seen:
            continue  # identical subtrees (same printed form) are evaluated once
        seen.add(str(node))
        alu, sfu = call_cost(program, node)
        if not alu and not sfu:
            continue
        forms = _signature(program, node, tags)
        if not forms:
            continue  # constant: folded at compile time
        n = c.distinct(forms, [node])
        c.ops[cuda_class(_call_dtype(program, st, node))] += alu * n
        c.ops["sfu"] += sfu * n
    c.visit(st)
    return c.result()


class _OpCounter(StatementVisitor[None]):
    """The op counts of one statement being summed (``ops``, ``exact``); visiting the
    statement adds what its kind combines beyond the calls of its expression (see the
    module doc: reductions, scans, extern routines)."""

    def __init__(self, program: Program, st_all: Statement, tags: _Tags) -> None:
        self.program, self.st_all, self.tags = program, st_all, tags
        self.ops = dict.fromkeys(OP_CLASSES, 0)
        self.exact = True

    def result(self) -> OpCounts:
        return OpCounts({k: v for k, v in self.ops.items() if v}, self.exact)

    def distinct(self, forms: list[Affine], nodes: Sequence[Expr] = ()) -> int:
        fp = distinct_tuples(self.st_all, forms)
        if not fp.exact or any(ld.indirect for n in nodes for ld in n.value_loads()):
            self.exact = False
        return fp.elements

    def at_most(self, forms: list[Affine]) -> int:
        """Distinct tuples, or (when only a lower bound is known) the box of their dims: an
        upper bound, so that subtracting it keeps a difference a lower bound."""
        fp = distinct_tuples(self.st_all, forms)
        if fp.exact:
            return fp.elements
        self.exact = False
        ext = self.st_all.extents
        return prod(integer(ext[d]) for d in {d for f in forms for d in f.dims})

    def _out(self, st: Statement) -> list[Affine]:
        return [_flat_form(self.program, st.out.tensor, st.out.index), *self.tags.out]

    def _cls(self, st: Statement) -> str:
        return cuda_class(_call_dtype(self.program, st, st.expr))

    def extern(self, st: Extern) -> None:
        ext = extern_op(st.routine)
        n = prod(integer(d.extent) for d in st.reduction_dims)
        m = st.parallel_dims[-1].extent
        rows = self.distinct([Affine.of(d.name) for d in self.st_all.parallel_dims[:-1]])
        for c, k in ext.ops(integer(n), integer(m), rows, dict(st.attrs)).items():
            self.ops[c] += k

    def scan(self, st: Scan) -> None:
        assert st.reduce is not None
        others = [Affine.of(d.name) for d in st.parallel_dims if d.name != st.along]
        n = self.distinct(self._out(st)) - self.at_most([*others, *self.tags.out])
        alu, sfu = REDUCTION_COMBINE_COST[st.reduce]
        if complex_value(self.program, st.expr):
            alu = {"sum": 2, "prod": 6}.get(st.reduce, alu)
        self.ops[self._cls(st)] += alu * max(0, n)
        self.ops["sfu"] += sfu * max(0, n)

    def nest(self, st: Statement) -> None:
        if st.reduce is None and not st.accumulate:
            return
        out = self._out(st)
        terms = _signature(self.program, st.expr, self.tags)
        if st.out.indirect:
            self.exact = False  # the positions a scatter combines into are data
        if st.accumulate:
            n = self.distinct([*out, *terms], [st.expr])
        else:
            if st.out.indirect:  # at most one distinct output per parallel instance
                out = [Affine.of(d.name) for d in st.parallel_dims] + list(self.tags.out)
            n = self.distinct(terms, [st.expr]) - self.at_most(out)
        alu, sfu = REDUCTION_COMBINE_COST[st.reduce] if st.reduce else (1, 0)
        if complex_value(self.program, st.expr):  # a complex combine: a sum's 2 adds, a product's 6
            alu = {"sum": 2, "prod": 6}.get(st.reduce or "sum", alu)
        self.ops[self._cls(st)] += alu * max(0, n)
        self.ops["sfu"] += sfu * max(0, n)


@dataclass(frozen=True)
class KernelIO:
    """DRAM elements read and written, keyed by storage base."""

    reads: dict[str, Footprint]
    writes: dict[str, Footprint]
    itemsizes: dict[str, int] = field(default_factory=dict)

    @property
    def read_bytes(self) -> int:
        return sum(f.elements * self.itemsizes[b] for b, f in self.reads.items())

    @property
    def write_bytes(self) -> int:
        return sum(f.elements * self.itemsizes[b] for b, f in self.writes.items())

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    @property
    def exact(self) -> bool:
        return all(f.exact for f in [*self.reads.values(), *self.writes.values()])


@dataclass(frozen=True)
class _Acc:
    """One access at a time: reads of statement i at 2i, its write at 2i+1. ``st`` ranges
    over the whole kernel (loop dims prepended); ``first`` over its first iteration only;
    ``group`` names the sequential loop (trip count > 1) it runs in, if any."""

    time: int
    st: Statement
    first: Statement
    tensor: str
    index: tuple
    group: int | None

    @property
    def acc(self) -> tuple:
        return (self.st, self.tensor, self.index)


def _write_instances(writes: Sequence[_Acc]) -> int:
    """An upper bound on the distinct elements ``writes`` touch: their parallel instances."""
    return sum(prod(integer(d.extent) for d in a.st.dims if not d.reduction) for a in writes)


def _dram_reads(program: Program, reads: Sequence[_Acc], writes: Sequence[_Acc]) -> Footprint:
    """Elements whose value must come from DRAM: read before this code writes them.

    When no write falls between the first and the last read (and no sequential loop both
    reads and writes the base), that is exactly ``|R ∪ W0| - |W0|`` with ``W0`` the writes
    before the first read; otherwise the larger of the reads before the first write (in a
    loop that writes it first: its first iteration's) and ``|R ∪ W| - |W|`` (elements read
    and never written) is a lower bound, exact when it meets ``|R ∪ W0| - |W0|`` (outside
    loops, an upper bound: an element written before the first read is never read from
    DRAM)."""
    r_acc = [a.acc for a in reads]
    r0, r1 = min(a.time for a in reads), max(a.time for a in reads)
    early = [a.acc for a in writes if a.time < r0]
    looped = {a.group for a in reads} & {a.group for a in writes} - {None}
    if not looped and not any(r0 < a.time < r1 for a in writes):
        if not early:
            return union_footprint(program, r_acc)
        w = union_footprint(program, early)
        if w.exact:
            rw = union_footprint(program, r_acc + early)
            return Footprint(max(0, rw.elements - w.elements), rw.exact)
    w_acc = [a.acc for a in writes]
    w = union_footprint(program, w_acc)
    if w.exact:
        diff = max(0, union_footprint(program, r_acc + w_acc).elements - w.elements)
    else:  # a scatter (a KV-cache update): |R ∪ W| - |W| >= |R| - (write instances)
        diff = max(0, union_footprint(program, r_acc).elements - _write_instances(writes))
    first = min(writes, key=lambda a: a.time)
    pre = union_footprint(
        program,
        [
            (a.first, a.tensor, a.index)
            if a.group is not None and a.group == first.group
            else a.acc
            for a in reads
            if a.time < first.time
        ],
    )
    lower = max(diff, pre.elements)
    if not looped:  # exact when it meets the upper bound |R ∪ W0| - |W0|
        w0 = union_footprint(program, early)
        upper = union_footprint(program, r_acc + early)
        if w0.exact and upper.exact and upper.elements - w0.elements == lower:
            return Footprint(lower, True)
    return Footprint(lower, False)


def written_instances(st: Statement) -> Statement:
    """The statement whose instances write ``st``'s output: ``st`` itself, except that a
    reduction that does not accumulate (nor scans, nor scatters) writes every output of its
    box, the reduction's identity where no instance executes: its guards dropped."""
    plain = st.kind == "nest" and not st.out.indirect
    if st.reduce is not None and not st.accumulate and plain and st.guards:
        return replace(st, guards=())
    return st


def _io(
    program: Program, items: Iterable[tuple[Statement, int, tuple[Dim, ...]]], read_ok, write_ok
) -> KernelIO:
    """``items``: (statement, kernel index, the kernel's sequential loops), in order. Writes
    are kept for the bases that count (``read_ok``: what is read before a write is not a DRAM
    read; ``write_ok``), not for the others (a whole program's intermediates)."""
    reads: dict[str, list[_Acc]] = {}
    writes: dict[str, list[_Acc]] = {}
    for i, (st, ki, loops) in enumerate(items):
        whole = with_loops(st, loops)
        first = with_loops(st, tuple(Dim(d.name, 1) for d in loops))
        group = ki if loops and prod(integer(d.extent) for d in loops) > 1 else None
        accs = [(ld.tensor, ld.index) for ld in st.loads()]
        if st.accumulate:
            accs.append((st.out.tensor, st.out.index))
        for t, idx in dict.fromkeys(accs):
            b = program.base(t)
            if read_ok(b):
                reads.setdefault(b, []).append(_Acc(2 * i, whole, first, t, idx, group))
        b = program.base(st.out.tensor)
        if not (read_ok(b) or write_ok(b)):
            continue
        wst = written_instances(st)
        wall, wfirst = with_loops(wst, loops), with_loops(wst, tuple(Dim(d.name, 1) for d in loops))
        out = _Acc(2 * i + 1, wall, wfirst, st.out.tensor, st.out.index, group)
        writes.setdefault(b, []).append(out)
    r = {b: _dram_reads(program, rs, writes.get(b, ())) for b, rs in reads.items()}
    r = {b: f for b, f in r.items() if f.elements or not f.exact}
    w = {
        b: union_footprint(program, [a.acc for a in ws]) for b, ws in writes.items() if write_ok(b)
    }
    w = {b: f for b, f in w.items() if f.elements or not f.exact}
    sizes = {b: program.tensors[b].itemsize for b in [*r, *w]}
    return KernelIO(r, w, sizes)


def kernel_io(program: Program, kernel: Kernel) -> KernelIO:
    """DRAM traffic of one kernel on its own (the unfused view)."""

    def not_local(b: str) -> bool:
        return program.tensors[b].role != "local"

    items = [(st, 0, kernel.loops) for st in kernel.statements]
    return _io(program, items, not_local, not_local)


def program_io(program: Program) -> KernelIO:
    """DRAM traffic of the whole program fused: graph inputs, weights and constants read once,
    graph outputs (and in-place updated inputs) written once."""
    outer = ("input", "weight", "constant")
    items = ((st, ki, k.loops) for ki, k in enumerate(program.kernels) for st in k.statements)
    roles = program.roles()
    return _io(
        program,
        items,
        lambda b: roles[b] in outer,
        lambda b: roles[b] in (*outer, "output"),
    )
