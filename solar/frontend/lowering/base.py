"""The lowering context and lowerer every frontend builds on.

A frontend's :class:`Lowerer` walks its framework's graph (an fx graph, a jaxpr) and, for each
operation, hands a :class:`LoweringContext` to the operation's registered lowering. What both
frontends need lives here: the :class:`~solar.ir.program.ProgramBuilder` every statement is
built through, the precision policy, where the operation came from (source line, module path),
the assumption notes the trace reports, failing with the frontend's error, and the final
:func:`~solar.ir.program.verify`. A frontend's subclasses add what differs: how operands and
outputs are bound, and which kernel an operation's statements go into (PyTorch: one kernel per
aten node; JAX: a provisional unit that fusion groups later).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, NoReturn

from solar.algebra.size import integer
from solar.frontend.layout import T
from solar.frontend.lowering.errors import UnsupportedOperatorError
from solar.frontend.lowering.exprs import cast
from solar.frontend.lowering.precision import PrecisionPolicy
from solar.ir.affine import Affine, AffineLike, affines
from solar.ir.program import Dim, Guard, Kernel, Program, ProgramBuilder, Statement, verify
from solar.ir.scalar import Const, Expr, Load

# what a reduction over no terms writes (torch's sum/prod of an empty tensor)
EMPTY_REDUCTION = {
    "sum": 0,
    "prod": 1,
    "max": float("-inf"),
    "min": float("inf"),
    "logsumexp": float("-inf"),
}


class Lowerer:
    """Lowers one program: the builder its kernels go into, the precision policy its
    contractions follow, and the assumption notes its trace reports."""

    def __init__(self, name: str, policy: PrecisionPolicy) -> None:
        self.builder = ProgramBuilder(name)
        self.policy = policy
        self.notes: list[str] = []

    @property
    def program(self) -> Program:
        return self.builder.program

    def fresh_tensor(
        self, stem: str, shape: Sequence[int], dtype: str, role: str = "intermediate"
    ) -> T:
        """A new tensor of the program (a fresh name from ``stem``)."""
        shape = tuple(integer(s) for s in shape)
        return T(self.builder.tensor(stem, shape, dtype, role), shape, dtype)

    def verified(self) -> Program:
        """The program, once every statement of every kernel has been checked again
        (:func:`solar.ir.program.verify`; an ill-formed one fails here, naming its kernel)."""
        verify(self.program)
        return self.program


class LoweringContext:
    """What a lowering sees of the operation it lowers: where it came from, the precision
    policy, its outputs and operands, and statements into the operation's kernel. The
    lowering library (:mod:`solar.frontend.lowering.pointwise`, ``.sort``, ``.conv``,
    :mod:`solar.frontend.routines`) is written against this interface alone.

    Subclasses set ``error`` (the frontend's :class:`UnsupportedOperatorError`) and define
    :meth:`kernel`; ``empty_reductions_write_identity``: a reduction over no terms writes its
    identity (PyTorch's ``sum`` of an empty tensor is 0) instead of being skipped."""

    error: ClassVar[type[UnsupportedOperatorError]] = UnsupportedOperatorError
    empty_reductions_write_identity: ClassVar[bool] = False

    def __init__(self, lowerer: Lowerer, operator: object, *, source: str, module: str) -> None:
        self.lowerer = lowerer
        self.operator = operator  # as the trace recorded it (an aten overload, a primitive)
        self.source = source  # the user's file:line
        self.module = module  # the module path (``layers.0.mlp``)
        self.policy: PrecisionPolicy = lowerer.policy
        self.builder: ProgramBuilder = lowerer.builder

    def fail(self, reason: str) -> NoReturn:
        """Give up on this operation: the frontend's error, naming it and ``reason``."""
        raise self.error(self.operator, self.source, reason)

    def kernel(self) -> Kernel:
        """The kernel this operation's statements go into (opened on first use)."""
        raise NotImplementedError

    def out(self, i: int = 0) -> T:
        """The operation's output ``i`` as an IR tensor (declared on first use)."""
        raise NotImplementedError

    def operand(self, x: object, dims: Sequence[str], dtype: str | None) -> Expr | None:
        """An operand of an elementwise statement over loop dims ``dims``: a tensor broadcast
        (numpy rules) and cast to ``dtype``, a known value or number as a constant."""
        raise NotImplementedError

    def local_stem(self) -> str:
        """The prefix of this operation's kernel-local tensor names."""
        return str(self.operator)

    def local(self, stem: str, shape: Sequence[int], dtype: str) -> T:
        """Kernel-local scratch (row maxima, accumulators): never leaves the chip."""
        return self.lowerer.fresh_tensor(f"{self.local_stem()}_{stem}", shape, dtype, "local")

    def view(
        self, x: T, shape: Sequence[int], strides: Sequence[int], offset: int = 0, stem: str = ""
    ) -> T:
        """A view of ``x``'s storage (``strides``/``offset`` in elements), named from ``stem``
        (default: ``x``'s name)."""
        shape = tuple(shape)
        name = self.builder.view(stem or f"{x.name}_rows", x.name, shape, strides, offset)
        return T(name, shape, x.dtype)

    def storage(self, t: T, batch: int) -> tuple[T, tuple[int, ...]]:
        """The contiguous storage tensor behind ``t`` (a dense view whose first ``batch`` axes
        are outermost), and the order of ``t``'s axes in it: ``t`` itself here (an output
        declared contiguous); a frontend whose outputs may be permuted views overrides it."""
        return t, tuple(range(t.ndim))

    def load(self, t: T, index: Sequence[AffineLike], dtype: str | None = None) -> Expr:
        """``t[index]``, cast to ``dtype`` if given and different."""
        return cast(Load(t.name, affines(index)), t.dtype, dtype)

    def store_target(self, t: T, index: Sequence[AffineLike]) -> tuple[str, tuple[Affine, ...]]:
        """The tensor and index a write of ``t[index]`` goes to (``t`` itself here)."""
        return t.name, affines(index)

    def statement(
        self,
        dims: Iterable[Dim | tuple],
        out: T,
        index: Sequence[AffineLike],
        expr: Expr,
        *,
        reduce: str | None = None,
        accumulate: bool = False,
        guards: Sequence[Guard] = (),
        precision: str | None = None,
        dtype: str | None = None,
        scan: str | None = None,
        extern: str | None = None,
        extern_attrs: dict | tuple | None = (),
    ) -> Statement | None:
        """Emit one loop nest into this operation's kernel (see
        :meth:`solar.ir.program.ProgramBuilder.statement` for the keywords). A nest with an
        empty dim runs nothing and is skipped (but see ``empty_reductions_write_identity``);
        ``dtype`` is dropped when it is the output's dtype."""
        dims = [d if isinstance(d, Dim) else Dim(*d) for d in dims]
        empty = [d for d in dims if d.extent == 0]
        if empty:
            identity = (
                self.empty_reductions_write_identity
                and reduce is not None
                and not accumulate
                and not extern
                and all(d.reduction for d in empty)
            )
            if not identity:
                return None
            # the identity, written over the parallel dims
            dims = [d for d in dims if not d.reduction]
            expr, reduce, precision = Const(EMPTY_REDUCTION[reduce]), None, None  # type: ignore[index]
        name, at = self.store_target(out, index)
        if dtype == out.dtype:
            dtype = None
        return self.builder.statement(
            dims,
            (name, at),
            expr,
            reduce=reduce,
            accumulate=accumulate,
            guards=guards,
            precision=precision,
            dtype=dtype,
            scan=scan,
            extern=extern,
            extern_attrs=extern_attrs or (),
            kernel=self.kernel(),
        )
