"""The Affine Loop IR: programs of kernels of statements (loop nests).

A :class:`Program` declares tensors (graph inputs, weights, constants, intermediates, outputs,
kernel-local scratch, and zero-cost *views* of other tensors) and lists :class:`Kernel` s in
execution order. A kernel is what the framework launches for one source-level operator; it
holds one or more :class:`Statement` s. A statement is one loop nest::

    for m<M, n<N | k<K:   O[m,n] += A[m,k] * B[k,n]

parallel dims before the bar, reduction dims after, an output access, a scalar expression
over affine loads, a reduction operator and optional affine guards (instances outside a guard
do not execute). Views are declared, not computed: a view tensor is ``as_strided`` over a
contiguous base tensor, so reading it is reading the base at an affine offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from solar.ir.affine import Affine, AffineLike, affines
from solar.ir.dtypes import itemsize
from solar.ir.scalar import Expr, Load

ROLES = ("input", "weight", "constant", "intermediate", "output", "local")
REDUCE_OPS = ("sum", "max", "min", "prod")


@dataclass(frozen=True)
class Dim:
    """A loop dimension ``name < extent``; reduction dims are summed (maxed, ...) away."""

    name: str
    extent: int
    reduction: bool = False


@dataclass(frozen=True)
class Access:
    tensor: str
    index: tuple[Affine, ...]

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(map(str, self.index))}]"


@dataclass(frozen=True)
class Guard:
    """``lo <= expr < hi``: the statement instance executes only where this holds."""

    expr: Affine
    lo: int
    hi: int

    def __str__(self) -> str:
        return f"{self.lo} <= {self.expr} < {self.hi}"


@dataclass(frozen=True)
class View:
    """``as_strided(base, shape, strides, offset)`` over a contiguous, non-view base."""

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
class Statement:
    dims: tuple[Dim, ...]
    out: Access
    expr: Expr
    reduce: str | None = None
    accumulate: bool = False
    guards: tuple[Guard, ...] = ()
    precision: str | None = None  # math mode of a contraction: None (native), "tf32", "ieee"
    dtype: str | None = None  # compute dtype of the scalar ops; None: promoted from the loads

    @property
    def extents(self) -> dict[str, int]:
        return {d.name: d.extent for d in self.dims}

    @property
    def parallel_dims(self) -> tuple[Dim, ...]:
        return tuple(d for d in self.dims if not d.reduction)

    @property
    def reduction_dims(self) -> tuple[Dim, ...]:
        return tuple(d for d in self.dims if d.reduction)

    @property
    def instances(self) -> int:
        return prod(d.extent for d in self.dims)

    def loads(self) -> list[Load]:
        return self.expr.loads()


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
        base = self.base(name)
        if base in {self.base(o) for o in self.outputs}:
            decl = self.tensors[base]
            return decl.role if decl.role in ("input", "weight", "constant") else "output"
        return self.tensors[base].role

    def __str__(self) -> str:
        from solar.ir.printer import format_program

        return format_program(self)


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
        shape = tuple(int(s) for s in shape)
        self.program.tensors[name] = TensorDecl(name, shape, dtype, role)
        if role in ("input", "weight"):
            self.program.inputs.append(name)
        return name

    def view(self, stem: str, of: str, shape, strides, offset: int = 0) -> str:
        """Declare a view of ``of``'s storage. ``strides`` and ``offset`` are in elements of
        the base storage (as torch reports them), so views of views need no composition."""
        base = self.program.base(of)
        name = self.fresh(stem)
        self.program.tensors[name] = TensorDecl(
            name,
            tuple(int(s) for s in shape),
            self.program.tensors[of].dtype,
            self.program.tensors[base].role,
            View(base, tuple(int(s) for s in strides), int(offset)),
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
    ) -> Statement:
        if self._kernel is None:
            raise RuntimeError("begin_kernel() before adding statements")
        if reduce is not None and reduce not in REDUCE_OPS:
            raise ValueError(f"unknown reduction {reduce!r}; one of {REDUCE_OPS}")
        dims = tuple(d if isinstance(d, Dim) else Dim(*d) for d in dims)
        st = Statement(
            dims,
            Access(out[0], affines(out[1])),
            expr,
            reduce,
            accumulate,
            tuple(guards),
            precision,
            dtype,
        )
        check_statement(st, self.program, self._kernel.loops)
        self._kernel.statements.append(st)
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
    for d in st.dims:
        if int(d.extent) < 1:
            raise ValueError(f"loop dim {d.name} has extent {d.extent} < 1")
    reduction = {d.name for d in st.reduction_dims}
    if reduction and st.reduce is None:
        raise ValueError("reduction dims given without a reduction operator")
    if any(set(e.dims) & reduction for e in st.out.index):
        raise ValueError(f"output {st.out} is indexed by a reduction dim")
