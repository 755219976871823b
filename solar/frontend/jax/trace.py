"""Trace a JAX function (or a Flax module) to a jaxpr on abstract values, and lower it.

``jax.make_jaxpr`` runs on :class:`jax.ShapeDtypeStruct` s made from the inputs' shapes and
dtypes, so analysing a large model computes nothing and allocates no activations (inputs may
themselves be ShapeDtypeStructs, e.g. from ``jax.eval_shape(model.init, ...)``). Pytrees of
parameters (Flax linen variable dicts, ``nnx.State``, plain dicts) are flattened into IR inputs
named after their tree paths (``params/dense1/kernel`` becomes IR tensor
``params_dense1_kernel``). Non-array leaves (Python numbers, strings, callables) are static.

Roles: the leaves of an argument named ``params``, ``variables``, ``weights``, ``state``,
``theta`` or ``parameters`` (or listed in ``weights=``), and the state of an ``nnx.Module``
analysed directly, are *weights*; other array leaves are *inputs*. Both are read from DRAM.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from solar.frontend.jax import ops  # noqa: F401  (registers the lowerings)
from solar.frontend.jax.fusion import group_units
from solar.frontend.jax.lower import Lowerer, V, to_torch
from solar.frontend.jax.precision import jax_policy
from solar.frontend.jax.symbolic_dims import SymbolicDimError, SymbolicDims, sizes
from solar.frontend.jax.training import assign_phases
from solar.frontend.protocol import Trace

WEIGHT_NAMES = frozenset({"params", "variables", "weights", "state", "theta", "parameters"})


FUSION_NOTE = (
    "unfused (JAX): kernels as XLA fuses them, approximated from below: one per dot, conv, "
    "reduction, scatter or update, with elementwise work fused into its consumer (or producer)"
)


@dataclass
class Prepared:
    """The callable actually traced and its positional arguments."""

    fn: Callable[..., object]
    args: tuple
    names: list[str]  # readable name of each positional argument ("" for a module's state)
    weights: set[int]  # positions whose leaves are weights
    label: str
    offset: int = 0  # positions before the caller's inputs (an nnx module's state)


@dataclass(frozen=True)
class JaxFeed:
    """How a JAX trace meets concrete arrays (:class:`~solar.frontend.protocol.Feed`): arrays
    are converted with DLPack and timed with the host clock.

    A trace's ``bindings`` map each IR input name to ``("weight" | "input", path)``, the leaf's
    tree path (``params/dense1/kernel``, ``x``, ``batch/0``); its ``output_names`` follow
    ``jax.tree_util.tree_leaves`` of the result. ``leaf_index``: each IR input's position
    among the flattened arguments; ``weight_args``: the ``weights=`` the trace was given."""

    leaf_index: Mapping[str, int]
    weight_args: Sequence[int] | None = None
    timer: str | None = "host"

    def values(self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]) -> dict:
        """Torch tensors of the concrete arrays in ``inputs`` (and of ``fn``'s state for an
        nnx module), by IR name."""
        prep = prepare(fn, inputs, self.weight_args)
        leaves = _leaves(prep.args)
        out = {}
        for name, i in self.leaf_index.items():
            leaf = leaves[i][1]
            if _is_abstract(leaf):
                raise ValueError(
                    f"{trace.bindings[name][1]} is a ShapeDtypeStruct; validation needs "
                    "concrete arrays"
                )
            out[name] = to_torch(leaf)
        return out

    def runner(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> Callable[[], object]:
        """The program jitted once (a Flax module through :func:`prepare`)."""
        import jax

        prep = prepare(fn, inputs, self.weight_args)
        call = jax.jit(prep.fn)
        return lambda: jax.block_until_ready(call(*prep.args))

    def flatten(self, trace: Trace, result: object) -> list:
        import jax

        return [to_torch(x) for x in jax.tree_util.tree_leaves(result) if hasattr(x, "shape")]


def trace_jax(
    fn: Callable[..., object] | object,
    inputs: object,
    *,
    name: str | None = None,
    precision: str | None = None,
    weights: Sequence[int] | None = None,
    scan: str = "auto",
    symbolic: SymbolicDims | None = None,
) -> Trace:
    """Trace ``fn(*inputs)`` with ``jax.make_jaxpr`` on abstract values and lower it to the
    Affine Loop IR.

    ``fn``: a function of JAX arrays (pytrees welcome), a ``flax.nnx.Module`` (called as
    ``fn(*inputs)``, its state the weights) or a ``flax.linen.Module`` (``fn.apply``: pass
    ``(variables, *inputs)``). ``inputs``: the positional arguments (a tuple; a single array is
    one argument) as arrays or ``jax.ShapeDtypeStruct`` s. ``precision``: ``"tf32"`` or
    ``"ieee"`` overrides the float32 matmul/conv policy. ``weights``: positions of the arguments
    holding weights (default: by argument name, see the module docstring). ``scan``:
    ``"unroll"`` every ``lax.scan``, lower each as ONE looped kernel (``"loop"``), or unroll
    short ones and loop long ones (``"auto"``, see :mod:`solar.frontend.jax.ops.control`).
    ``symbolic`` makes the dims it names JAX symbolic dimensions (keyed by a positional
    input's index or a leaf's label, such as ``"params/fc1/weight"``): the program's sizes are
    then :class:`~solar.algebra.size.Size` s (see :mod:`solar.frontend.jax.symbolic_dims`).
    """
    import jax

    policy = jax_policy(precision)
    prep = prepare(fn, inputs, weights)
    leaves = _leaves(prep.args)
    treedef = jax.tree_util.tree_structure(prep.args)
    arrays = [i for i, (_, leaf) in enumerate(leaves) if _is_array(leaf)]
    static = [leaf for _, leaf in leaves]

    def flat(*xs: object) -> object:
        vals = list(static)
        for i, x in zip(arrays, xs, strict=True):
            vals[i] = x
        return prep.fn(*jax.tree_util.tree_unflatten(treedef, vals))

    structs = [
        jax.ShapeDtypeStruct(_shape(prep, leaves[i], symbolic), _dtype(static[i])) for i in arrays
    ]
    if symbolic is not None:
        symbolic.check_used([_label(prep, leaves[i][0]) for i in arrays])
        closed = _symbolic_jaxpr(flat, structs)
    else:
        closed = jax.make_jaxpr(flat)(*structs)
    with symbolic.active() if symbolic is not None else nullcontext():
        return _lower(prep, closed, leaves, arrays, name, policy, scan, weights)


def _lower(prep, closed, leaves, arrays, name, policy, scan, weights) -> Trace:
    """Lower the traced jaxpr ``closed`` (see :func:`trace_jax`)."""
    jaxpr = closed.jaxpr
    if scan not in ("auto", "unroll", "loop"):
        raise ValueError(f"scan must be 'auto', 'unroll' or 'loop', not {scan!r}")
    lowerer = Lowerer(name or prep.label or "program", policy)
    lowerer.scan_mode = scan
    used = _used_vars(jaxpr)
    bindings: dict[str, tuple[str, object]] = {}
    leaf_index: dict[str, int] = {}
    args: list[V] = []
    for var, i in zip(jaxpr.invars, arrays, strict=True):
        path, leaf = leaves[i]
        shape = sizes(var.aval.shape)
        if var not in used:  # never read: not declared (PRNG keys of an nnx module, say)
            args.append(V(shape, str(_dtype(leaf))))
            continue
        label = _label(prep, path)
        role = "weight" if path[0] in prep.weights else "input"
        v = lowerer.declare_input(label, shape, _dtype(leaf), role, f"{role} {label!r}")
        assert v.t is not None
        bindings[v.t.name] = (role, label)
        leaf_index[v.t.name] = i
        args.append(v)
    consts = [lowerer.known_value(c) for c in closed.consts]
    results = lowerer.lower_jaxpr(jaxpr, consts, args)
    output_names = [lowerer.materialize(v, "output").name for v in results]
    lowerer.program.outputs = list(dict.fromkeys(output_names))
    kernels_of = group_units(lowerer)  # equation key -> the fused kernels it went into
    assign_phases(lowerer.program)  # a training step's forward / backward / optimizer
    return Trace(
        "jax",
        lowerer.verified(),  # every statement checked again, after fusion grouped them
        bindings,
        tuple(output_names),
        JaxFeed(leaf_index, weights),
        assumptions=(FUSION_NOTE, *lowerer.notes),  # the kernel grouping rule, then the notes
        graph=closed,
        kernels_of=kernels_of,
    )


def _keys(prep: Prepared, path: tuple) -> list[object]:
    """What a leaf is called: its label, and its position among the caller's inputs when the
    argument is that one array."""
    keys: list[object] = [_label(prep, path)]
    if len(path) == 1 and path[0] >= prep.offset:
        keys.append(path[0] - prep.offset)
    return keys


def _shape(prep: Prepared, leaf: tuple[tuple, object], symbolic: SymbolicDims | None) -> tuple:
    """The leaf's shape as traced: its named dims JAX symbolic dimensions."""
    path, value = leaf
    shape = tuple(int(s) for s in np.shape(value))
    if symbolic is None:
        return shape
    keys = _keys(prep, path)
    return symbolic.shape(keys, shape, f"input {keys[0]!r}")


def resized(
    fn: object, inputs: object, places: dict[tuple[object, int], str], values: dict[str, int]
) -> tuple:
    """``inputs`` with each dim that ``places`` names (``{(input, dim): name}``, as
    :class:`~solar.frontend.jax.symbolic_dims.SymbolicDims` takes them) of size ``values[name]``:
    marked leaves become ``ShapeDtypeStruct`` s (a numeric trace at other sizes)."""
    import jax

    prep = prepare(fn, inputs)
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    flat, treedef = jax.tree_util.tree_flatten(args)
    leaves = _leaves(prep.args)  # an nnx module's state leaves come first
    out = []
    for (path, leaf), value in zip(leaves[len(leaves) - len(flat) :], flat, strict=True):
        keys = _keys(prep, path)
        shape = list(np.shape(leaf))
        hit = False
        for d in range(len(shape)):
            name = next((places[(k, d)] for k in keys if (k, d) in places), None)
            if name is not None:
                shape[d], hit = values[name], True
        out.append(jax.ShapeDtypeStruct(tuple(shape), _dtype(leaf)) if hit else value)
    return tuple(jax.tree_util.tree_unflatten(treedef, out))


def _symbolic_jaxpr(flat: Callable[..., object], structs: list) -> object:
    """``jax.make_jaxpr`` on structs with symbolic dims; JAX's refusal in one line."""
    import jax

    try:
        return jax.make_jaxpr(flat)(*structs)
    except Exception as e:
        if type(e).__name__ != "InconclusiveDimensionOperation" and not isinstance(
            e, (TypeError, ValueError)
        ):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SymbolicDimError(
            f"JAX cannot trace the program with these sizes as symbols: {first} (the program "
            "decides something from a marked size); mark fewer sizes or bound it numerically"
        ) from e


# ---------------------------------------------------------------------------------------------
# inputs


def _flax_kind(fn: object) -> str | None:
    flax = sys.modules.get("flax")
    if flax is None:
        return None
    from flax import linen, nnx

    if isinstance(fn, nnx.Module):
        return "nnx"
    if isinstance(fn, linen.Module):
        return "linen"
    return None


def prepare(fn: object, inputs: object, weights: Sequence[int] | None = None) -> Prepared:
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    kind = _flax_kind(fn)
    if kind == "nnx":
        from flax import nnx

        graphdef, state = nnx.split(fn)

        def run(state: object, *xs: object) -> object:
            return nnx.merge(graphdef, state)(*xs)

        names = ["", *_argument_names(type(fn).__call__, len(args), skip_self=True)]
        return Prepared(run, (state, *args), names, {0}, type(fn).__name__, offset=1)
    call = fn.apply if kind == "linen" else fn  # type: ignore[attr-defined]
    if not callable(call):
        raise TypeError(f"cannot trace a {type(fn).__name__}: not callable")
    names = _argument_names(call, len(args))
    if kind == "linen" and names:  # apply(variables, *args): params/dense1/kernel, x
        names = ["", *_argument_names(type(fn).__call__, len(args) - 1, skip_self=True)]
    if weights is None:
        wset = {i for i, n in enumerate(names) if n in WEIGHT_NAMES or (kind and i == 0)}
    else:
        wset = set(weights)
    label = type(fn).__name__ if kind == "linen" else getattr(fn, "__name__", "")
    if label == "<lambda>":
        label = "program"
    return Prepared(call, args, names, wset, label)  # type: ignore[arg-type]


def _argument_names(fn: object, n: int, skip_self: bool = False) -> list[str]:
    """Readable names of ``n`` positional arguments of ``fn`` (``x``, ``args0``, ...)."""
    names: list[str] = []
    try:
        params = list(inspect.signature(fn).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        params = []
    if skip_self and params and params[0].name == "self":
        params = params[1:]
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names += [f"{p.name}{k}" for k in range(n - len(names))]
    names += [f"input{k}" for k in range(len(names), n)]
    return names[:n]


def _leaves(args: tuple) -> list[tuple[tuple, object]]:
    """``(path, leaf)`` of every leaf of the arguments; a path starts with the position."""
    import jax

    out = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(args)[0]:
        keys: list[object] = []
        for k in path:
            for attr in ("idx", "key", "name"):
                if hasattr(k, attr):
                    keys.append(getattr(k, attr))
                    break
            else:
                keys.append(str(k))
        out.append((tuple(keys), leaf))
    return out


def _label(prep: Prepared, path: tuple) -> str:
    """``params/dense1/kernel``: the argument's name, then the keys (nnx's ``.value`` dropped)."""
    keys = [str(k) for k in path[1:]]
    if keys and keys[-1] == "value":
        keys = keys[:-1]
    head = prep.names[path[0]] if path[0] < len(prep.names) else f"input{path[0]}"
    return "/".join([p for p in (head, *keys) if p]) or f"input{path[0]}"


def _is_abstract(x: object) -> bool:
    import jax

    return isinstance(x, jax.ShapeDtypeStruct)


def _is_array(x: object) -> bool:
    if isinstance(x, (bool, int, float, complex, str)) or x is None:
        return False
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _dtype(x: object) -> object:
    return x.dtype  # type: ignore[attr-defined]


def _used_vars(jaxpr: object) -> set:
    from jax.extend.core import Literal

    used = set()
    for e in jaxpr.eqns:  # type: ignore[attr-defined]
        used.update(a for a in e.invars if not isinstance(a, Literal))
    used.update(a for a in jaxpr.outvars if not isinstance(a, Literal))  # type: ignore[attr-defined]
    return used


def is_jax_program(fn: object, inputs: object) -> bool:
    """Whether ``fn(*inputs)`` is a JAX program: a Flax module, or JAX arrays /
    ShapeDtypeStructs among the inputs (JAX must already be imported)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return False
    if _flax_kind(fn) is not None:
        return True
    try:
        leaves = jax.tree_util.tree_leaves(inputs)
    except Exception:
        return False
    return any(isinstance(x, (jax.Array, jax.ShapeDtypeStruct)) for x in leaves)
