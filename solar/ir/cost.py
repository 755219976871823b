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
  into) before the kernel writes that element; it writes the union of its output accesses.
  Kernel-local tensors (role ``local``) are excluded. With ``W0`` the elements written before
  the kernel's first read of the base: when no write of the base falls between its first and
  last read, the reads are exactly ``|read ∪ W0| - |W0|`` (so a base written by an earlier
  statement and then read or accumulated into costs no read: addmm's ``out``); when writes and
  reads interleave, the larger of (reads before the first write) and ``|read ∪ written| -
  |written|`` (elements read and never written), a lower bound. A statement's reads come
  before its own write (in-place updates read).
- The program (fused view) reads every graph input, weight and constant element it loads that
  it has not written before (same rule, in program order), and writes every element of a graph
  output (``program.role(base) == "output"``) or of an input/weight/constant base that some
  kernel writes (an in-place update the caller observes), each element once. Intermediates
  and locals cost nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from solar.ir.affine import Affine
from solar.ir.dtypes import itemsize
from solar.ir.footprint import Footprint, _flat_form, distinct_tuples, union_footprint
from solar.ir.ops import REDUCTION_COMBINE_ALU, scalar_op
from solar.ir.program import Kernel, Program, Statement
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
    """The two loads of a contraction (``sum`` of ``mul`` of two optionally cast loads)."""
    e = st.expr
    if st.reduce != "sum" or not isinstance(e, Call) or e.op != "mul" or len(e.args) != 2:
        return None
    a, b = (_operand(x) for x in e.args)
    return (a, b) if a is not None and b is not None else None


def is_contraction(st: Statement, program: Program) -> bool:
    return contraction_operands(st) is not None


def contraction_class(st: Statement, program: Program) -> str:
    """Op class a contraction runs on (see the module docstring)."""
    ops = contraction_operands(st)
    if ops is None:
        raise ValueError("not a contraction")
    dts = [program.tensors[ld.tensor].dtype for ld in ops]
    dt = min(dts, key=itemsize)  # mixed dtypes: the narrower, faster unit (stable: first)
    if dt == "float32":
        return "tc_tf32" if st.precision == "tf32" else "cuda_fp32"
    return _TENSOR_CORE.get(dt) or cuda_class(dt)


def _load_form(program: Program, ld: Load) -> Affine:
    return _flat_form(program, ld.tensor, ld.index)


def _signature(program: Program, e: Expr) -> list[Affine]:
    """Affine forms whose values determine ``e``: loads' storage offsets, Index values."""
    forms = []
    for node in e.walk():
        if isinstance(node, Load):
            forms.append(_load_form(program, node))
        elif isinstance(node, Index):
            forms.append(node.expr)
    return forms


def _compute_dtype(program: Program, st: Statement) -> str:
    return st.dtype or program.tensors[st.out.tensor].dtype


def _call_dtype(program: Program, st: Statement, node: Expr) -> str:
    dt = _compute_dtype(program, st)
    if dt != "bool":
        return dt
    for ld in node.loads():
        ldt = program.tensors[ld.tensor].dtype
        if ldt != "bool":
            return ldt
    return "bool"


def statement_ops(program: Program, st: Statement) -> dict[str, int]:
    """Operations of one statement by op class (classes of :data:`OP_CLASSES` with a nonzero
    count only)."""
    ops = dict.fromkeys(OP_CLASSES, 0)
    pair = contraction_operands(st)
    if pair is not None:
        n = distinct_tuples(st, [_load_form(program, ld) for ld in pair]).elements
        ops[contraction_class(st, program)] += 2 * n
        return {k: v for k, v in ops.items() if v}
    seen: set[str] = set()
    for node in st.expr.walk():
        if not isinstance(node, Call) or str(node) in seen:
            continue  # identical subtrees (same printed form) are evaluated once
        seen.add(str(node))
        spec = scalar_op(node.op)
        if not spec.alu and not spec.sfu:
            continue
        forms = _signature(program, node)
        if not forms:
            continue  # constant: folded at compile time
        n = distinct_tuples(st, forms).elements
        ops[cuda_class(_call_dtype(program, st, node))] += spec.alu * n
        ops["sfu"] += spec.sfu * n
    out = _flat_form(program, st.out.tensor, st.out.index)
    if st.reduce is not None or st.accumulate:
        cls = cuda_class(_call_dtype(program, st, st.expr))
        terms = _signature(program, st.expr)
        if st.accumulate:
            n = distinct_tuples(st, [out, *terms]).elements
        else:
            n = distinct_tuples(st, terms).elements - distinct_tuples(st, [out]).elements
        ops[cls] += (REDUCTION_COMBINE_ALU if st.reduce else 1) * max(0, n)
    return {k: v for k, v in ops.items() if v}


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


_Acc = tuple[Statement, str, tuple[Affine, ...]]


def _dram_reads(
    program: Program, reads: Sequence[tuple[int, _Acc]], writes: Sequence[tuple[int, _Acc]]
) -> Footprint:
    """Elements whose value must come from DRAM: read before this code writes them.

    ``reads``/``writes`` carry a time (reads of statement i at 2i, its write at 2i+1). When no
    write falls between the first and the last read, that is exactly ``|R ∪ W0| - |W0|`` with
    ``W0`` the writes before the first read; otherwise the larger of the reads before the first
    write and ``|R ∪ W| - |W|`` (elements read but never written) is a lower bound."""
    r_acc = [a for _, a in reads]
    r0, r1 = min(t for t, _ in reads), max(t for t, _ in reads)
    early = [a for t, a in writes if t < r0]
    if not any(r0 < t < r1 for t, _ in writes):
        if not early:
            return union_footprint(program, r_acc)
        w = union_footprint(program, early)
        if w.exact:
            rw = union_footprint(program, r_acc + early)
            return Footprint(max(0, rw.elements - w.elements), rw.exact)
    w_acc = [a for _, a in writes]
    w = union_footprint(program, w_acc)
    diff = 0
    if w.exact:
        diff = max(0, union_footprint(program, r_acc + w_acc).elements - w.elements)
    first_write = min(t for t, _ in writes)
    pre = union_footprint(program, [a for t, a in reads if t < first_write])
    return Footprint(max(diff, pre.elements), False)


def _io(program: Program, statements: Sequence[Statement], read_ok, write_ok) -> KernelIO:
    reads: dict[str, list[tuple[int, _Acc]]] = {}
    writes: dict[str, list[tuple[int, _Acc]]] = {}
    for i, st in enumerate(statements):
        accs = [(ld.tensor, ld.index) for ld in st.loads()]
        if st.accumulate:
            accs.append((st.out.tensor, st.out.index))
        for t, idx in dict.fromkeys(accs):
            b = program.base(t)
            if read_ok(b):
                reads.setdefault(b, []).append((2 * i, (st, t, idx)))
        b = program.base(st.out.tensor)
        writes.setdefault(b, []).append((2 * i + 1, (st, st.out.tensor, st.out.index)))
    r = {b: _dram_reads(program, rs, writes.get(b, ())) for b, rs in reads.items()}
    r = {b: f for b, f in r.items() if f.elements or not f.exact}
    w = {b: union_footprint(program, [a for _, a in ws]) for b, ws in writes.items() if write_ok(b)}
    w = {b: f for b, f in w.items() if f.elements or not f.exact}
    sizes = {b: program.tensors[b].itemsize for b in [*r, *w]}
    return KernelIO(r, w, sizes)


def kernel_io(program: Program, kernel: Kernel) -> KernelIO:
    """DRAM traffic of one kernel on its own (the unfused view)."""

    def not_local(b: str) -> bool:
        return program.tensors[b].role != "local"

    return _io(program, kernel.statements, not_local, not_local)


def program_io(program: Program) -> KernelIO:
    """DRAM traffic of the whole program fused: graph inputs, weights and constants read once,
    graph outputs (and in-place updated inputs) written once."""
    outer = ("input", "weight", "constant")
    statements = [st for k in program.kernels for st in k.statements]
    return _io(
        program,
        statements,
        lambda b: program.role(b) in outer,
        lambda b: program.role(b) in (*outer, "output"),
    )
