"""The Affine Loop IR: programs of kernels of statements (loop nests).

A :class:`Program` declares tensors (graph inputs, weights, constants, intermediates, outputs,
kernel-local scratch, and zero-cost *views* of other tensors) and lists :class:`Kernel` s in
execution order. A kernel is what the framework launches for one source-level operator; it
holds one or more :class:`Statement` s. A statement is one loop nest::

    for m<M, n<N | k<K:   O[m,n] += A[m,k] * B[k,n]

parallel dims before the bar, reduction dims after, an output access, a scalar expression
over affine loads, a reduction operator and optional affine guards (instances outside a guard
do not execute). Views are declared, not computed: a view tensor is ``as_strided`` over a
contiguous base tensor, so reading it is reading the base at an affine offset. A view may
reinterpret its base's bytes as another element type (``Tensor.view(dtype)``,
``view_as_real``/``view_as_complex``): its strides and offset are then in its own elements.

Extensions beyond plain loop nests (each executed vectorised and costed soundly):

- *sequential kernel loops* (``Kernel.loops``): the kernel's statement list runs once per
  iteration, in order (a recurrence over time); statements may index with the loop dims.
- *indirect indices* (:class:`~solar.ir.scalar.Indirect`): a load or output index entry whose
  value is data (``table[ids[i], j]`` gathers, ``out[ids[i], j] += src[i, j]`` scatters).
- *scans* (:class:`Scan`): ``out[.., i] = ⊕_{i' <= i} expr[.., i']`` along one parallel
  dim, in increasing order of that dim (cumsum, cumprod, cummax, logcumsumexp).
- *extern statements* (:class:`Extern`): an opaque library routine over rows (sort, topk,
  kthvalue, median, FFTs, dense linear algebra) from :data:`solar.ir.extern.EXTERN_OPS`.

The statement kinds are distinct frozen types sharing :class:`Statement`'s fields; a pass
handles each kind in one method of a :class:`StatementVisitor` (both in
:mod:`solar.ir.statement_kinds`, re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from solar.algebra.size import integer
from solar.ir.affine import AffineLike, affines
from solar.ir.dtypes import itemsize
from solar.ir.ops import SCALAR_OPS
from solar.ir.printer import format_statement
from solar.ir.scalar import Call, Expr, Index, Load
from solar.ir.statement_kinds import (
    Access,
    Dim,
    Extern,
    Scan,
    Statement,
    StatementVisitor,
    interned_dims,
    new_statement,
)
from solar.ir.statement_kinds import Guard as Guard  # re-exported: the IR's names, from one place
from solar.ir.statement_kinds import with_loops as with_loops

ROLES = ("input", "weight", "constant", "intermediate", "output", "local")
# logsumexp combines a, b as log(exp(a) + exp(b)) (logcumsumexp, logsumexp).
REDUCE_OPS = ("sum", "max", "min", "prod", "logsumexp")


@dataclass(frozen=True)
class View:
    """``as_strided(base, shape, strides, offset)`` over a contiguous, non-view base.

    The strides and offset are in elements of the view's own dtype (its :class:`TensorDecl`'s),
    as torch reports them. When that dtype differs from the base's, the view reinterprets the
    base's bytes (``Tensor.view(dtype)``): the base is read as an array of the view's elements
    (one itemsize divides the other). Footprints stay in base elements (a wider element covers
    several, a narrower one lies inside one: :mod:`solar.ir.footprint`)."""

    base: str
    strides: tuple[int, ...]
    offset: int = 0


@dataclass(frozen=True)
class TensorDecl:
    name: str
    shape: tuple[int, ...]
    dtype: str
    role: str
    view: View | None = None

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * itemsize(self.dtype)

    @property
    def itemsize(self) -> int:
        return itemsize(self.dtype)


@dataclass
class Kernel:
    """One launched kernel: the statements a framework runs for one source-level operator."""

    name: str
    op: str
    statements: list[Statement]
    source: str = ""  # user code location, e.g. "model.py:12"
    module: str = ""  # module path, e.g. "layers.0 (Linear)"
    # Sequential loops around all statements (a recurrence over time): the statement list runs
    # once per iteration, in order, and each iteration sees the previous one's writes.
    # Statements may index with these dims; they are not part of ``Statement.dims``.
    loops: tuple[Dim, ...] = ()
    # A training step's kernels say which part of the step they belong to ("forward",
    # "backward", "recompute", "optimizer"; "" for programs that are not training steps) and
    # where they come from (the forward kernel a backward kernel differentiates, the
    # parameters an optimizer kernel updates).
    phase: str = ""
    origin: str = ""


@dataclass
class Program:
    name: str
    tensors: dict[str, TensorDecl] = field(default_factory=dict)
    kernels: list[Kernel] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # call order: weights, then inputs
    outputs: list[str] = field(default_factory=list)
    constants: dict[str, object] = field(default_factory=dict)  # values of "constant" tensors

    def base(self, name: str) -> str:
        """The storage tensor behind ``name`` (itself unless it is a view)."""
        v = self.tensors[name].view
        return v.base if v else name

    def role(self, name: str) -> str:
        """Role of the storage behind ``name``; graph outputs' bases count as outputs."""
        return self._role(self.base(name), {self.base(o) for o in self.outputs})

    def roles(self) -> dict[str, str]:
        """:meth:`role` of every declared tensor, in one pass over the outputs (``role``
        walks them on every call: a training step has hundreds)."""
        outputs = {self.base(o) for o in self.outputs}
        return {name: self._role(self.base(name), outputs) for name in self.tensors}

    def _role(self, base: str, outputs: set[str]) -> str:
        if base in outputs:
            decl = self.tensors[base]
            return decl.role if decl.role in ("input", "weight", "constant") else "output"
        return self.tensors[base].role

    def __str__(self) -> str:
        return format_program(self)


def format_kernel(k: Kernel) -> str:
    """A kernel as its loop nests (the sequential loops around them)."""
    where = f"   # {k.op}" + (f" at {k.source}" if k.source else "")
    if k.phase:  # a training step's kernel: its phase and what it belongs to
        where += f"; {k.phase}" + (f": {k.origin}" if k.origin else "")
    body = [format_statement(st) for st in k.statements]
    if k.loops:
        seq = ", ".join(f"{d.name}<{d.extent}" for d in k.loops)
        body = [f"  for {seq} (sequential):"] + ["  " + ln for b in body for ln in b.split("\n")]
    return "\n".join([f"kernel {k.name}:{where}", *body])


def format_program(p: Program) -> str:
    """A program as docs/ir.md shows it: its declarations, then its kernels."""
    lines = [f"program {p.name}:"]
    for name, t in p.tensors.items():
        if t.view:
            v = t.view
            cast = f" {t.dtype}" if t.dtype != p.tensors[v.base].dtype else ""  # reinterpreted
            lines.append(
                f"  view   {name}{list(t.shape)}{cast} = as_strided({v.base}, "
                f"stride={list(v.strides)}, offset={v.offset})"
            )
        elif t.role != "intermediate" or name in p.outputs:
            lines.append(f"  {p.role(name):<6} {name}{list(t.shape)} {t.dtype}")
    lines.append(f"  outputs: {', '.join(p.outputs)}")
    return "\n".join(lines + [format_kernel(k) for k in p.kernels])


class ProgramBuilder:
    """Incremental construction of a :class:`Program` with fresh names and checks."""

    def __init__(self, name: str) -> None:
        self.program = Program(name)
        self._counts: dict[str, int] = {}
        self._kernel: Kernel | None = None

    def fresh(self, stem: str) -> str:
        stem = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in stem) or "t"
        n = self._counts.get(stem, 0)
        self._counts[stem] = n + 1
        name = stem if n == 0 else f"{stem}_{n}"
        return self.fresh(stem) if name in self.program.tensors else name

    def tensor(self, stem: str, shape, dtype: str, role: str = "intermediate") -> str:
        if role not in ROLES:
            raise ValueError(f"unknown tensor role {role!r}; one of {ROLES}")
        itemsize(dtype)
        name = self.fresh(stem)
        shape = tuple(integer(s) for s in shape)
        self.program.tensors[name] = TensorDecl(name, shape, dtype, role)
        if role in ("input", "weight"):
            self.program.inputs.append(name)
        return name

    def view(
        self, stem: str, of: str, shape, strides, offset: int = 0, dtype: str | None = None
    ) -> str:
        """Declare a view of ``of``'s storage. ``strides`` and ``offset`` are in elements of
        the storage seen as the view's dtype (as torch reports them), so views of views need
        no composition. ``dtype``: reinterpret the storage's bytes as that element type
        (default: ``of``'s dtype)."""
        base = self.program.base(of)
        dtype = self.program.tensors[of].dtype if dtype is None else dtype
        a, b = itemsize(dtype), itemsize(self.program.tensors[base].dtype)
        if max(a, b) % min(a, b):
            raise ValueError(f"cannot view {of} ({b}-byte elements) as {dtype} ({a} bytes)")
        name = self.fresh(stem)
        self.program.tensors[name] = TensorDecl(
            name,
            tuple(integer(s) for s in shape),
            dtype,
            self.program.tensors[base].role,
            View(base, tuple(integer(s) for s in strides), integer(offset)),
        )
        return name

    def begin_kernel(
        self, op: str, source: str = "", module: str = "", *, loops=(), name: str | None = None
    ) -> Kernel:
        stem = op.split(".")[-1] if "." in op else op
        if stem in ("default", "Tensor", "Scalar", "int", "dim", "self"):
            stem = op.split(".")[-2]
        loops = tuple(d if isinstance(d, Dim) else Dim(*d) for d in loops)
        k = Kernel(name or f"{stem}_{len(self.program.kernels)}", op, [], source, module, loops)
        self.program.kernels.append(k)
        self._kernel = k
        return k

    def statement(
        self,
        dims,
        out: tuple[str, tuple[AffineLike, ...]],
        expr: Expr,
        *,
        reduce: str | None = None,
        accumulate: bool = False,
        guards=(),
        precision: str | None = None,
        dtype: str | None = None,
        scan: str | None = None,
        extern: str | None = None,
        extern_attrs=(),
        kernel: Kernel | None = None,
        before: Statement | None = None,
    ) -> Statement:
        """Add a statement to the open kernel (or to ``kernel``, one opened earlier: a JAX
        unit filled while a nested call opened others), appended or inserted ``before`` one of
        its statements: a :class:`Scan` along ``scan``, an :class:`Extern` running ``extern``
        with ``extern_attrs`` (a dict or a tuple of pairs), else a plain :class:`Statement`.
        Checked (:func:`check_statement`); an error names the kernel."""
        k = kernel if kernel is not None else self._kernel
        if k is None:
            raise RuntimeError("begin_kernel() before adding statements")
        if reduce is not None and reduce not in REDUCE_OPS:
            raise ValueError(f"unknown reduction {reduce!r}; one of {REDUCE_OPS}")
        dims = interned_dims(dims)
        st = new_statement(
            dims,
            Access(out[0], affines(out[1])),
            expr,
            reduce=reduce,
            accumulate=accumulate,
            guards=guards,
            precision=precision,
            dtype=dtype,
            scan=scan,
            extern=extern,
            extern_attrs=extern_attrs,
        )
        try:
            check_statement(st, self.program, k.loops)
        except ValueError as e:
            raise ValueError(f"kernel {k.name}: {e}") from None
        if before is None:
            k.statements.append(st)
        else:
            k.statements.insert(k.statements.index(before), st)
        return st


def check_statement(st: Statement, program: Program, loops: tuple[Dim, ...] = ()) -> None:
    """Reject malformed statements early with a message naming the problem."""
    names = [d.name for d in (*loops, *st.dims)]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate loop dims in {names}")
    known = set(names)
    accesses = [st.out, *(Access(ld.tensor, ld.index) for ld in st.loads())]
    for acc in accesses:
        if acc.tensor not in program.tensors:
            raise ValueError(f"statement accesses undeclared tensor {acc.tensor!r}")
        decl = program.tensors[acc.tensor]
        if len(acc.index) != len(decl.shape):
            raise ValueError(
                f"{acc} has {len(acc.index)} indices; {acc.tensor} has shape {decl.shape}"
            )
        for e in acc.index:
            if not set(e.dims) <= known:
                raise ValueError(f"{acc} uses loop dims {set(e.dims) - known} not in the nest")
    for d in (*loops, *st.dims):
        if integer(d.extent) < 1:
            raise ValueError(f"loop dim {d.name} has extent {d.extent} < 1")
    for node in st.expr.walk():
        if isinstance(node, Index) and not set(node.expr.dims) <= known:
            raise ValueError(f"{node} uses loop dims {set(node.expr.dims) - known} not in the nest")
        if isinstance(node, Call):
            _check_call(node)
    reduction = {d.name for d in st.reduction_dims}
    if reduction and st.reduce is None and not isinstance(st, Extern):  # an extern's row dims
        raise ValueError("reduction dims given without a reduction operator")
    if any(set(e.dims) & reduction for e in st.out.index):
        raise ValueError(f"output {st.out} is indexed by a reduction dim")
    if st.out.indirect and st.reduce == "logsumexp":
        raise ValueError(f"output {st.out}: a logsumexp scatter is not supported")
    _KindCheck().visit(st)


def _check_call(node: Call) -> None:
    """A call names an operator of the scalar table with its arity."""
    op = SCALAR_OPS.get(node.op)
    if op is None:
        raise ValueError(
            f"call of unknown scalar operator {node.op!r} (add a row to solar/ir/ops.py)"
        )
    if len(node.args) != op.arity:
        raise ValueError(f"{node.op} takes {op.arity} arguments, got {len(node.args)}")


def verify(program: Program) -> None:
    """Check every statement of every kernel (declared tensors, ranks, loop dims, operators and
    their arity, scan and extern forms); the error names the kernel. Run when a program is
    lifted, whichever frontend built it and however its statements were made."""
    for k in program.kernels:
        for st in k.statements:
            try:
                check_statement(st, program, k.loops)
            except ValueError as e:
                raise ValueError(f"kernel {k.name}: {e}") from None


class _KindCheck(StatementVisitor[None]):
    """The rules of each statement kind."""

    def nest(self, st: Statement) -> None:
        pass

    def scan(self, st: Scan) -> None:
        where = f"scan statement writing {st.out}"
        if st.along not in {d.name for d in st.parallel_dims}:
            raise ValueError(f"{where}: scan dim {st.along!r} is not a parallel dim of the nest")
        if st.reduce is None or st.reduction_dims or st.accumulate:
            raise ValueError(
                f"{where}: a scan needs a reduce operator, no reduction dims and no accumulate"
            )
        if st.out.indirect:
            raise ValueError(f"{where}: a scan cannot scatter")

    def extern(self, st: Extern) -> None:
        from solar.ir.extern import extern_op

        extern_op(st.routine)
        where = f"extern statement {st.routine} writing {st.out}"
        par, red = st.parallel_dims, st.reduction_dims
        if not red or not par:
            raise ValueError(f"{where}: needs parallel dims (*batch, pos) and row (reduction) dims")
        if st.reduce is not None or st.accumulate or st.guards or st.out.indirect:
            raise ValueError(f"{where}: takes no reduce, accumulate, guards or scatter")
        pos = par[-1].name
        used = {d for n in st.expr.walk() for d in _expr_node_dims(n)}
        if pos in used:
            raise ValueError(f"{where}: the row expression uses the output position dim {pos}")


def _expr_node_dims(e: Expr) -> set[str]:
    if isinstance(e, Load):
        return {d for x in e.index for d in x.dims}
    if isinstance(e, Index):
        return set(e.expr.dims)
    return set()
