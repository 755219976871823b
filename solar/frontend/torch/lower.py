"""Walk a traced fx graph and lower every aten node to IR through the registry.

One aten node is one kernel (what eager PyTorch launches for it); a node whose outputs alias its
inputs' storage is a view and costs nothing; an in-place node writes into its ``self``.
Per-operator loop nests live in :mod:`solar.frontend.torch.ops`; this module only provides the
walk and the :class:`LoweringContext` a lowering talks to.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from solar.algebra.size import integer
from solar.frontend import lowering
from solar.frontend.layout import T, broadcast_index, contiguous_strides
from solar.frontend.lowering.errors import UnsupportedDtypeError, expressible
from solar.frontend.lowering.exprs import cast
from solar.frontend.torch.precision import PrecisionPolicy
from solar.frontend.torch.provenance import module_label, node_source
from solar.frontend.torch.registry import (
    MissingOperator,
    UnsupportedOperatorError,
    find_lowering,
    functional_form,
    mutated_args,
)
from solar.frontend.torch.scalars import is_scalar_node, scalar_value
from solar.frontend.torch.sizes import SizePolicy
from solar.frontend.torch.symbolic_shapes import size, sizes
from solar.ir.affine import Affine, AffineLike, affines
from solar.ir.dtypes import from_torch, itemsize
from solar.ir.program import Dim, Kernel
from solar.ir.scalar import Const, Expr

__all__ = [
    "OPAQUE",
    "Lowerer",
    "LoweringContext",
    "T",
    "UnsupportedDtypeError",
    "cast",
    "contiguous_strides",
    "ir_dtype",
]

#: The stand-in for an output of a node that could not be lowered and whose shape or dtype the
#: IR cannot even declare; nodes that read it are skipped (see :meth:`Lowerer.run`).
OPAQUE = object()


def ir_dtype(dtype: torch.dtype, what: str) -> str:
    """The IR name of a torch dtype, or an :class:`UnsupportedDtypeError` naming ``what``."""
    try:
        name = from_torch(dtype)
    except ValueError:
        name = None
    return expressible(name, what, dtype)


# ---------------------------------------------------------------------------------------------
# Layouts: torch's strides over a storage, and writes through them.


def dense_storage_shape(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...] | None:
    """The contiguous shape of the storage of a dense, non-overlapping layout (a permutation
    of ``shape`` by decreasing stride), or None if the layout has gaps or overlaps."""
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: -strides[d])
    expected = 1
    for d in reversed(dims):
        if strides[d] != expected:
            return None
        expected *= shape[d]
    return tuple(shape[d] for d in dims)


def storage_index(
    shape: Sequence[int], strides: Sequence[int], offset: int, base_shape: Sequence[int]
) -> tuple[Affine, ...] | None:
    """Index into the contiguous ``base_shape`` storage of element ``(v0, v1, ...)`` of the
    strided view, as affine expressions in ``v0, v1, ...``; None if it is not affine."""
    coefs = {
        f"v{i}": integer(s) for i, (n, s) in enumerate(zip(shape, strides, strict=True)) if n > 1
    }
    const = integer(offset)
    index = []
    for c in contiguous_strides(base_shape):
        index.append(Affine.build({v: k // c for v, k in coefs.items()}, const // c))
        coefs = {v: k % c for v, k in coefs.items()}
        const %= c
    extents = {f"v{i}": integer(n) for i, n in enumerate(shape)}
    for e, n in zip(index, base_shape, strict=True):
        lo, hi = e.bounds(extents)
        if lo < 0 or hi >= n:
            return None
    return tuple(index)


# ---------------------------------------------------------------------------------------------


class LoweringContext(lowering.LoweringContext):
    """What a lowering sees of the aten node it lowers: its arguments and outputs, and the
    node's kernel to emit into (a reduction over no terms writes its identity)."""

    error = UnsupportedOperatorError
    empty_reductions_write_identity = True

    def __init__(self, lowerer: Lowerer, node: fx.Node, args: list[object]) -> None:
        super().__init__(lowerer, node.target, source=node_source(node), module=module_label(node))
        self.node = node
        self.target = node.target  # the operator recorded (``aten.add_.Tensor``)
        # the operator lowerings dispatch on: in-place ones run their functional form's code
        self.op = functional_form(node.target)
        self.args = args
        self.lowerer: Lowerer = lowerer
        self.sizes: SizePolicy = lowerer.sizes
        self._outs: list[T | None] | None = None
        self._kernel: Kernel | None = None

    # -- outputs ---------------------------------------------------------------------------

    def outs(self) -> list[T | None]:
        """The node's tensor outputs (None for non-tensor ones), declared on first use; an
        in-place operator's outputs are the tensors it mutates."""
        if self._outs is None:
            mutated = mutated_args(self.target)
            if mutated:
                names = [a.name for a in self.target._schema.arguments]
                self._outs = [self.args[names.index(m)] for m in mutated]  # type: ignore[misc]
            else:
                multi = isinstance(self.val, (tuple, list))
                vals = self.val if multi else [self.val]
                self._outs = [
                    self._declare(v, output_stem(self.node, i) if multi else self.node.name)
                    if isinstance(v, torch.Tensor)
                    else None
                    for i, v in enumerate(vals)
                ]
        return self._outs

    def _declare(self, val: torch.Tensor, stem: str) -> T:
        """A fresh tensor laid out as torch lays out ``val``: contiguous, or a dense
        permutation (elementwise ops keep their input's layout), declared as a view of a
        contiguous storage tensor."""
        where = f" at {self.source}" if self.source else ""
        dtype = ir_dtype(val.dtype, f"the output of {self.target}{where}")
        shape = sizes(val.shape)
        strides = sizes(val.stride())
        if val.is_contiguous() or val.numel() == 0:
            return T(self.builder.tensor(stem, shape, dtype), shape, dtype)
        storage = dense_storage_shape(shape, strides)
        if storage is None or size(val.storage_offset()) != 0:
            self.fail(f"produces a layout with gaps or overlaps (sizes {shape}, strides {strides})")
        base = self.builder.tensor(f"{stem}_storage", storage, dtype)
        return T(self.builder.view(stem, base, shape, strides, 0), shape, dtype)

    def out(self, i: int = 0) -> T:
        t = self.outs()[i]
        assert t is not None, f"output {i} of {self.target} is not a tensor"
        return t

    def storage(self, t: T, batch: int) -> tuple[T, tuple[int, ...]]:
        """``t`` (batch dims ``:batch`` outermost, matrix dims after, as LAPACK-style outputs
        are laid out: column-major matrices) as a contiguous view of its storage with the
        matrix dims in storage order, and that order."""
        decl = self.builder.program.tensors[t.name]
        ident = tuple(range(t.ndim))
        if decl.view is None:
            return t, ident
        strides, shape = decl.view.strides, t.shape
        tail = list(range(batch, t.ndim))
        big = [d for d in tail if shape[d] > 1]
        moved = iter(sorted(big, key=lambda d: -strides[d]))
        order = (*range(batch), *(next(moved) if shape[d] > 1 else d for d in tail))
        dense = contiguous_strides([shape[d] for d in order])
        if any(shape[d] > 1 and strides[d] != dense[i] for i, d in enumerate(order)):
            self.fail(f"writes {t.name} with a layout that is not a dense permutation")
        view_shape = tuple(shape[d] for d in order)
        view = self.view(t, view_shape, dense, decl.view.offset, stem=f"{t.name}_storage")
        return view, order

    def operand(self, x: object, dims: Sequence[str], dtype: str | None) -> Expr | None:
        """A tensor operand broadcast over ``dims`` and cast to ``dtype``; a Python number as
        a constant; None stays None (an absent optional operand)."""
        if isinstance(x, T):
            return self.load(x, broadcast_index(x.shape, dims), dtype)
        if x is None:
            return None
        if isinstance(x, (bool, int, float)):
            return Const(x)
        raise TypeError(f"{self.op}: unexpected operand {x!r}")

    @property
    def val(self) -> object:
        """The FakeTensor (or tuple of them) the node produced while tracing."""
        return self.node.meta.get("val")

    def local_stem(self) -> str:
        return self.node.name

    # -- statements ------------------------------------------------------------------------

    def begin_kernel(self, *, loops: Iterable[Dim | tuple] = (), name: str | None = None) -> Kernel:
        """Open a new kernel for this node (``loops``: its sequential loop dims, see
        :attr:`solar.ir.program.Kernel.loops`); the statements that follow go into it. The first
        :meth:`statement` opens one without loops when no kernel is open; a lowering that
        launches several kernels (one per RNN layer) calls this once per kernel."""
        k = self.builder.begin_kernel(
            str(self.target), source=self.source, module=self.module, loops=loops, name=name
        )
        if name is None:
            k.name = f"{kernel_stem(self.target)}_{len(self.builder.program.kernels) - 1}"
        self._kernel = k
        return k

    def kernel(self) -> Kernel:
        return self._kernel if self._kernel is not None else self.begin_kernel()

    def store_target(self, t: T, index: Sequence[AffineLike]) -> tuple[str, tuple[Affine, ...]]:
        """The storage tensor and index a write of ``t[index]`` goes to."""
        decl = self.builder.program.tensors[t.name]
        if decl.view is None:
            return t.name, affines(index)
        base = self.builder.program.tensors[decl.view.base]
        if base.dtype != decl.dtype:  # a view reinterpreting its storage: write through it
            return t.name, affines(index)
        mapping = storage_index(decl.shape, decl.view.strides, decl.view.offset, base.shape)
        if mapping is None:  # e.g. a reshaped view: write through the view itself
            return t.name, affines(index)
        env = {f"v{i}": Affine.of(x) for i, x in enumerate(index)}
        return base.name, tuple(e.substitute(env) for e in mapping)

    def constant(self, stem: str, value: torch.Tensor) -> T:
        """A tensor whose value is known while tracing (no kernel)."""
        return self.lowerer.declare_constant(stem, value)

    def set_outs(self, outs: Sequence[T | None]) -> None:
        """Bind the node's outputs to existing tensors (views, constants) instead of fresh ones.
        Their layouts must be the trace's (strides and offset in their storage), since later
        views are declared with the trace's strides and offsets."""
        vals = self.val if isinstance(self.val, (tuple, list)) else [self.val]
        for t, v in zip(outs, vals, strict=False):
            if t is None or not isinstance(v, torch.Tensor) or v.numel() <= 1:
                continue
            decl = self.builder.program.tensors[t.name]
            strides = decl.view.strides if decl.view else contiguous_strides(decl.shape)
            offset = decl.view.offset if decl.view else 0
            layout = tuple(s for s, n in zip(strides, decl.shape, strict=True) if n > 1), offset
            vshape, vstrides = sizes(v.shape), sizes(v.stride())
            traced = tuple(s for s, n in zip(vstrides, vshape, strict=True) if n > 1)
            if layout != (traced, size(v.storage_offset())):
                raise AssertionError(
                    f"the lowering of {self.target} lays out {t.name} with strides {strides} at "
                    f"offset {offset}; the trace has {tuple(v.stride())} at offset "
                    f"{v.storage_offset()}"
                )
        self._outs = list(outs)

    def input_tensors(self) -> list[tuple[T, torch.Tensor]]:
        """Each tensor input of the node with the FakeTensor it had while tracing."""
        env = self.lowerer.env
        return [
            (env[n], n.meta["val"])  # type: ignore[misc]
            for n in self.node.all_input_nodes
            if isinstance(n.meta.get("val"), torch.Tensor)
        ]


def output_stem(node: fx.Node, i: int) -> str:
    """``max_1_values``: the node name and the schema's name for output ``i`` (or ``i``)."""
    returns = node.target._schema.returns if isinstance(node.target, torch._ops.OpOverload) else []
    label = returns[i].name if i < len(returns) and returns[i].name else str(i)
    return f"{node.name}_{label}"


def kernel_stem(op: object) -> str:
    if isinstance(op, torch._ops.OpOverload):
        return op.overloadpacket.__name__.strip("_") or "op"
    return getattr(op, "__name__", "op")


# ---------------------------------------------------------------------------------------------


class Lowerer(lowering.Lowerer):
    """Lower a make_fx graph to a Program: placeholders and constants become tensors, each
    aten node a kernel (or a view), the graph outputs the program's outputs."""

    def __init__(self, gm: fx.GraphModule, name: str, policy: PrecisionPolicy) -> None:
        super().__init__(name, policy)
        self.gm = gm
        self.env: dict[fx.Node, object] = {}  # graph node -> its value (T, tuple, constant)
        self._fake_mode: object = None  # the tracing FakeTensorMode (False: none), found once
        self.sizes = SizePolicy()  # data-dependent sizes and grouped-GEMM routing
        self.kernels_of: dict[str, tuple[str, ...]] = {}  # fx node name -> its IR kernels

    # -- declarations ----------------------------------------------------------------------

    def declare_input(self, node: fx.Node, stem: str, role: str, what: str) -> T:
        val = node.meta["val"]
        dtype = ir_dtype(val.dtype, what)
        shape = sizes(val.shape)
        t = T(self.builder.tensor(stem, shape, dtype, role), shape, dtype)
        self.env[node] = t
        return t

    def declare_constant(self, stem: str, value: torch.Tensor) -> T:
        """A tensor known while tracing; a non-contiguous one keeps torch's layout (a view of
        its dense storage), so views of it taken in the graph address it correctly."""
        dtype = ir_dtype(value.dtype, f"constant {stem}")
        shape = sizes(value.shape)
        value = value.detach()
        if value.is_contiguous():
            name = self.builder.tensor(stem, shape, dtype, "constant")
            self.program.constants[name] = value
            return T(name, shape, dtype)
        strides = sizes(value.stride())
        storage = dense_storage_shape(shape, strides)
        if storage is None or size(value.storage_offset()) != 0:
            raise UnsupportedOperatorError(
                stem, "", f"is a constant with a layout with gaps or overlaps (strides {strides})"
            )
        order = sorted(range(len(shape)), key=lambda d: -strides[d])
        base = self.builder.tensor(f"{stem}_storage", storage, dtype, "constant")
        self.program.constants[base] = value.permute(order).contiguous().reshape(storage)
        return T(self.builder.view(stem, base, shape, strides, 0), shape, dtype)

    # -- the walk --------------------------------------------------------------------------

    def run(self) -> None:
        """Lower every node. A node that cannot be lowered is recorded and stands in as an
        opaque tensor of its traced shape, so the walk goes on and finds every missing
        operator; at the end one :class:`UnsupportedOperatorError` lists them all (its
        ``missing``), and no program is returned."""
        missing: dict[str, MissingOperator] = {}
        first: dict[str, UnsupportedOperatorError] = {}
        kernels = self.program.kernels
        for node in self.gm.graph.nodes:
            before = len(kernels)
            try:
                self.lower_node(node)
                if len(kernels) > before:
                    self.kernels_of[node.name] = tuple(k.name for k in kernels[before:])
            except UnsupportedOperatorError as e:
                m = missing.get(e.op)
                if m is None:
                    missing[e.op] = MissingOperator(e.op, e.reason, [e.source], 1)
                    first[e.op] = e
                else:
                    m.count += 1
                    m.sources.append(e.source)
                self.env[node] = self.opaque(node)
        if len(missing) == 1:
            (e,) = first.values()
            e.missing = list(missing.values())
            raise e
        if missing:
            raise UnsupportedOperatorError.collected(list(missing.values()))

    def opaque(self, node: fx.Node) -> object:
        """A stand-in for the outputs of a node that could not be lowered: fresh tensors of
        its traced shapes (or :data:`OPAQUE` where even that is impossible), used only to
        keep walking the graph."""
        vals = node.meta.get("val")
        multi = isinstance(vals, (tuple, list))
        outs: list[object] = []
        for i, v in enumerate(vals if multi else [vals]):
            try:
                shape = sizes(v.shape)  # type: ignore[union-attr]
                dtype = from_torch(v.dtype)  # type: ignore[union-attr]
                stem = f"{output_stem(node, i) if multi else node.name}_opaque"
                outs.append(T(self.builder.tensor(stem, shape, dtype), shape, dtype))
            except (AttributeError, TypeError, ValueError):
                outs.append(OPAQUE)
        return tuple(outs) if multi else outs[0]

    def lower_node(self, node: fx.Node) -> None:
        if node.op == "placeholder":
            assert node in self.env, f"placeholder {node.name} was not declared"
        elif node.op == "get_attr":
            value = getattr(self.gm, node.target)
            if isinstance(value, torch.Generator):  # a random operator's `generator=`
                self.env[node] = value
                return
            if not isinstance(value, torch.Tensor):
                raise UnsupportedOperatorError(
                    node.target, "", "is a non-tensor attribute of the traced graph"
                )
            self.env[node] = self.declare_constant(node.target.strip("_"), value)
            fake = self.fake_of(value)  # the fake it was traced as: views of it alias it
            if fake is not None:
                node.meta["val"] = fake
        elif node.op == "call_function":
            self.env[node] = self.lower_call(node)
        elif node.op != "output":
            raise UnsupportedOperatorError(node.target, "", f"is an fx {node.op} node")

    def fake_of(self, value: torch.Tensor) -> torch.Tensor | None:
        """The FakeTensor the tracing mode made of a real constant (its converter memoizes
        them), or None when the graph has no fake values."""
        if self._fake_mode is None:
            modes = (getattr(n.meta.get("val"), "fake_mode", None) for n in self.gm.graph.nodes)
            self._fake_mode = next((m for m in modes if m is not None), False)
        return self._fake_mode.from_tensor(value) if self._fake_mode else None

    def outputs(self) -> list[str]:
        """IR names of the graph's tensor outputs, flattened (tuples, lists, dicts)."""
        out_node = next(n for n in self.gm.graph.nodes if n.op == "output")
        leaves = pytree.tree_leaves(self.value(out_node.args[0]))
        return [t.name for t in leaves if isinstance(t, T)]

    def value(self, arg: object) -> object:
        return fx.node.map_aggregate(arg, lambda a: self.env[a] if isinstance(a, fx.Node) else a)

    def lower_call(self, node: fx.Node) -> object:
        target = node.target
        if isinstance(node.meta.get("val"), torch.SymInt):  # a size of a symbolic trace
            return size(node.meta["val"])
        if is_scalar_node(target, node.meta.get("val")):  # a float of sizes: 0.1 / n
            return scalar_value(target, self.value(node.args), node.meta["val"])
        if target is operator.getitem:
            seq, i = node.args
            whole = self.env[seq]
            return OPAQUE if whole is OPAQUE else whole[i]  # type: ignore[index]
        if not isinstance(target, torch._ops.OpOverload):
            raise UnsupportedOperatorError(
                getattr(target, "__name__", target),
                node_source(node),
                "is not an aten operator; only aten graphs can be lowered",
            )
        ctx = LoweringContext(
            self, node, bind_arguments(target, self.value(node.args), self.value(node.kwargs))
        )
        fn = find_lowering(target)
        if any(a is OPAQUE for a in pytree.tree_leaves(ctx.args)):
            if fn is None:  # missing too: listed, though its input stands in opaquely
                raise UnsupportedOperatorError(target, ctx.source)
            return self.opaque(node)
        val = node.meta.get("val")
        if is_view(target) and isinstance(val, (tuple, list)) and not tensor_vals(val):
            return ()  # a view with no outputs (unbind of an empty dim): nothing to declare
        if not mutated_args(target) and aliases_an_input(node) and (fn is None or is_view(target)):
            lower_view(ctx)
        else:
            if fn is None:
                raise UnsupportedOperatorError(target, ctx.source)
            fn(ctx, *ctx.args)
        outs = ctx.outs()
        return tuple(outs) if isinstance(val, (tuple, list)) else outs[0]


def tensor_vals(val: object) -> list[torch.Tensor]:
    return [v for v in pytree.tree_leaves(val) if isinstance(v, torch.Tensor)]


def lower_view(ctx: LoweringContext) -> None:
    """Declare each output of an aliasing operator as a view of the input it aliases."""
    if str(ctx.target) in ("aten._conj.default", "aten._neg_view.default"):
        ctx.fail(
            "is a lazy conjugate (or negative) view, which the IR cannot express; "
            "call torch.conj_physical(x) (or x.resolve_conj()) instead"
        )
    inputs = ctx.input_tensors()
    outs: list[T | None] = []
    for i, v in enumerate(tensor_vals(ctx.val)):
        src = next((t for t, iv in inputs if torch._C._is_alias_of(v, iv)), None)
        if src is None:
            ctx.fail("returns both views and new tensors, which the frontend cannot split")
        dtype = str(v.dtype).removeprefix("torch.")
        if dtype != src.dtype:  # Tensor.view(dtype), view_as_real/complex: the same bytes
            try:
                itemsize(dtype)
            except ValueError as e:
                ctx.fail(str(e))
        multi = isinstance(ctx.val, (tuple, list))
        stem = output_stem(ctx.node, i) if multi else ctx.node.name
        shape = sizes(v.shape)
        name = ctx.builder.view(
            stem, src.name, shape, sizes(v.stride()), size(v.storage_offset()), dtype
        )
        outs.append(T(name, shape, dtype))
    ctx.set_outs(outs)


def is_view(op: torch._ops.OpOverload) -> bool:
    """Whether ``op``'s schema says an output aliases an input (``Tensor(a)``). A lowered
    operator whose schema says not is lowered as a kernel even when its fake output aliases
    an input: that is a decomposition's shortcut (``native_dropout`` in eval mode returns its
    input on fake tensors; the CPU and CUDA kernels return a copy)."""
    return any(r.alias_info is not None for r in op._schema.returns)


def aliases_an_input(node: fx.Node) -> bool:
    """Whether some output of ``node`` shares storage with one of its tensor inputs."""
    ins = [v for a in node.all_input_nodes for v in tensor_vals(a.meta.get("val"))]
    return any(torch._C._is_alias_of(o, i) for o in tensor_vals(node.meta.get("val")) for i in ins)


def bind_arguments(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> list[object]:
    """The schema arguments of ``op`` in order, from ``args``/``kwargs`` or their defaults."""
    bound = []
    for i, a in enumerate(op._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            bound.append(args[i])
        elif a.name in kwargs:
            bound.append(kwargs[a.name])
        elif a.has_default_value():
            bound.append(a.default_value)
        else:
            bound.append(None)
    return bound
