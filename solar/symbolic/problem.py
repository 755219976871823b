"""Symbolic sizes of problem files: module-level size constants as symbols.

``solar bound FILE --symbolic BATCH,SEQ`` bounds a KernelBench-style problem file with its
module constants ``BATCH`` and ``SEQ`` as symbols. Which dims of the program's inputs,
parameters and buffers they size is read off the file exactly, not guessed from values: the
constants are set to :class:`~solar.algebra.size.Size` s (the file's value, carrying its
symbol) while ``get_init_inputs()``, ``Model(...)`` and ``get_inputs()`` run under a
:class:`~solar.symbolic.tracker.Tracker`, which records the expression of each dim of every
tensor a factory makes (``2 * SEQ`` included) and follows it through casts, copies and views.
Those dims, as expressions, become the symbolic dims of the trace (``SymbolicShapes``).

Where a constant is used as a plain number, the formulas are specialized to its value, and
the guard says where: the decisions made while building (``if N > 4``) join the count region;
the file's ``range`` records a loop over a constant; while tracing, the constants stay
``Size`` s, and one passed to a torch call goes as the trace's own ``SymInt`` or is recorded
as a plain number (:class:`~solar.symbolic.tracker.PlainSizes`); a rebuild with each constant
at another value (:func:`solar.symbolic.inputs.probe`) catches the loops solar cannot see
(inside a library), which change the parameters.

One-line errors (:class:`~solar.problem.ProblemError`) name what cannot be symbolic: a
constant that sizes no tensor (a ``randint`` bound, a dropout rate, a default argument
captured at import: :class:`UnusedSizeError`), a graph input made by a call whose dims solar
does not follow, a tensor sized by a constant that the program keeps outside its inputs,
parameters and buffers (traced as a constant), or a JAX file. A training problem
(``get_optimizer``) is its training step (:func:`solar.problem.training_step`) traced with
the same symbolic dims; its optimizer state takes its parameters' sizes.
"""

from __future__ import annotations

import ast
import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import sympy

from solar.algebra.size import Recording, Size, recording, symbol
from solar.problem import (
    ProblemError,
    build,
    is_jax_problem,
    is_training_problem,
    load_module,
    set_mode,
    training_step,
    weights_from_config,
)
from solar.symbolic.symbolic_bound import SymbolicBound

#: ``(binding, dim) -> (label, expression)``: the dims :class:`SymbolicShapes` makes symbolic
DimMap = dict[tuple[object, int], tuple[str, sympy.Expr]]


class UnusedSizeError(ProblemError):
    """A constant named symbolic that sizes no tensor of the program (``.name``)."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


@dataclass
class SymbolicProblem:
    """A problem file built with some constants as symbols, ready to trace."""

    path: Path
    name: str
    model: object
    inputs: tuple
    sizes: dict[str, int]  # constant -> the value it is traced at
    dims: DimMap  # which graph-input dims carry which expression
    recording: Recording  # decisions on the sizes made while building
    notes: list[str] = field(default_factory=list)
    step: object = None  # a training problem's step function (``inputs`` are its arguments)


def size_constants(module) -> dict[str, int]:
    """A module's int globals (bools excluded), by name."""
    return {
        k: v
        for k, v in vars(module).items()
        if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_")
    }


def parse_symbolic(text: str) -> dict[str, int | None]:
    """``"BATCH,SEQ=512"`` -> ``{"BATCH": None, "SEQ": 512}`` (a value: trace there instead of
    at the file's value)."""
    out: dict[str, int | None] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, value = part.partition("=")
        name = name.strip()
        if not name.isidentifier():
            raise ValueError(f"--symbolic: {name!r} is not a constant's name (NAME or NAME=VALUE)")
        try:
            out[name] = int(value) if value else None
        except ValueError:
            raise ValueError(f"--symbolic {part}: the value must be an integer") from None
        if value and out[name] < 1:  # type: ignore[operator]
            raise ValueError(f"--symbolic {part}: a size is a positive integer")
    if not out:
        raise ValueError("--symbolic: name at least one module constant (--symbolic BATCH,SEQ)")
    return out


def load_symbolic_problem(
    path: str | Path, names: Sequence[str] | Mapping[str, int | None]
) -> SymbolicProblem:
    """Build the problem file at ``path`` with the constants ``names`` as symbols (a mapping
    may give the value to trace each at; None: the file's value)."""
    from solar.symbolic.tracker import checked_range

    path = Path(path)
    at = dict(names) if isinstance(names, Mapping) else dict.fromkeys(names)
    rec = Recording()  # every decision on the sizes, from building to the analysis
    with weights_from_config(path) as built:
        module = load_module(path, preset={"range": checked_range(rec)})
        _check_file(path, module)
        consts = size_constants(module)
        for name in at:
            if name not in consts:
                raise ProblemError(
                    f"{path}: has no integer module constant {name!r} to make symbolic; its "
                    f"integer constants: {', '.join(consts) or 'none'}"
                )
        sizes = {n: (v if v is not None else consts[n]) for n, v in at.items()}
        for n, v in sizes.items():
            setattr(module, n, Size(v, symbol(n)))
        model, inputs, tracker, notes = _build(module, path, rec)
    model = set_mode(model, module)
    dims = _graph_dims(path, model, inputs, tracker, sizes)
    if not notes:  # built on the meta device: building it again elsewhere is cheap
        _probe(path, sizes, model, inputs, tracker, rec)
    notes = [*built, *notes, *_import_time_notes(path, sizes, consts)]
    step = None
    if is_training_problem(module):
        with recording(rec), rec.at("building the training step"):
            step, inputs = training_step(module, model, inputs, path)
    return SymbolicProblem(path, path.stem, model, inputs, sizes, dims, rec, notes, step)


def bound_problem(
    path: str | Path,
    names: Sequence[str] | Mapping[str, int | None],
    hw="H100",
    *,
    precision: str | None = None,
) -> SymbolicBound:
    """The :class:`SymbolicBound` of a problem file with the constants ``names`` as symbols.

    The steps of :func:`solar.symbolic.trace.bound_symbolic`, with the symbolic dims given as
    expressions of the constants (``2*SEQ``) rather than as ``(input, dim)`` places (its
    ``marks`` name places only), the decisions made while building the program joining the
    guards, the size constants passed to torch calls while tracing given as the trace's
    ``SymInt`` s or recorded as plain numbers (:class:`~solar.symbolic.tracker.PlainSizes`),
    and the caches that compare sizes by value out of the way (the structure cache off, the
    footprint caches emptied: :func:`clear_value_caches`)."""
    from solar.algebra.region import Region
    from solar.frontend.torch.symbolic_shapes import SymbolicShapes
    from solar.graph.cache import structure_cache
    from solar.hw import load_spec
    from solar.symbolic.trace import trace_lifted
    from solar.symbolic.tracker import PlainSizes

    spec = load_spec(hw)
    problem = load_symbolic_problem(path, names)
    shapes = SymbolicShapes(problem.dims)
    rec = problem.recording
    clear_value_caches()
    with structure_cache(False):
        _, g = trace_lifted(
            problem.step if problem.step is not None else problem.model,
            problem.inputs,
            shapes,
            rec,
            within=PlainSizes(rec, shapes.translate),
            notes=problem.notes,
            name=problem.name,
            precision=precision,
        )
    symbols = [symbol(n) for n in problem.sizes]
    return SymbolicBound.of(g, spec, Region.of(symbols, rec.guards), problem.sizes)


def clear_value_caches() -> None:
    """Empty the footprint memo caches (stopgap, until they key on expressions too): they key
    on sizes' values, and a :class:`Size` hashes and compares as its int, so an entry left by
    a numeric run at the same numbers (or a symbolic one in other symbols) would be returned
    for it, after a comparison that records ``size == value`` (a specialization)."""
    from solar.ir.footprint.domain import domain
    from solar.ir.footprint.forms import _form_set

    domain.cache_clear()
    _form_set.cache_clear()


# -- building ---------------------------------------------------------------------------


def _check_file(path: Path, module) -> None:
    """A PyTorch problem file (inference, or a training step with ``get_optimizer``), or a
    one-line error."""
    import sys

    if "jax" in sys.modules and is_jax_problem(path, module):
        raise ProblemError(
            f"{path}: a JAX problem file; symbolic sizes are traced for PyTorch problem files "
            "only: bound it without --symbolic"
        )
    missing = [n for n in ("Model", "get_inputs") if not hasattr(module, n)]
    if missing:
        raise ProblemError(f"{path}: defines no {' or '.join(missing)}; not a problem file")


def _build(module, path: Path, rec: Recording):
    """``Model(*get_init_inputs())`` and ``get_inputs()`` under a tracker (a fresh one for
    each try of :func:`solar.problem.build`), decisions on the sizes recorded on ``rec``."""
    from solar.symbolic.tracker import Tracker

    trackers: list[Tracker] = []
    init = getattr(module, "get_init_inputs", lambda: [])

    def make():
        tracker = Tracker(rec)
        trackers.append(tracker)
        with recording(rec), rec.at("building the program"), tracker:
            return module.Model(*init()), module.get_inputs()

    model, inputs, notes = build(make, path)
    return model, tuple(inputs), trackers[-1], notes


def _probe(path: Path, sizes, model, inputs, tracker, rec: Recording) -> None:
    """:func:`solar.symbolic.inputs.probe` of the built program: each size at another value."""
    from solar.symbolic.inputs import graph_inputs, probe

    expected = {}
    for b, t, _ in graph_inputs(model, inputs):
        d = tracker.dims(t)
        expected[b] = d if d is not None else tuple(sympy.Integer(int(n)) for n in t.shape)

    def build_at(point):
        module = load_module(path)
        for k, v in point.items():
            setattr(module, k, v)
        init = getattr(module, "get_init_inputs", lambda: [])
        model, inputs, _ = build(lambda: (module.Model(*init()), module.get_inputs()), path)
        return model, tuple(inputs)

    with weights_from_config(path):
        probe(sizes, expected, rec, build_at)


def _graph_dims(path: Path, model, inputs: tuple, tracker, sizes: Mapping[str, int]) -> DimMap:
    """The symbolic dims of the graph inputs; errors for what cannot be followed."""
    from solar.symbolic.inputs import graph_inputs
    from solar.symbolic.tracker import Unknown, storage_key

    names = ", ".join(sizes)
    gc.collect()  # temporaries of the build must not count as tensors the program keeps
    dims: DimMap = {}
    graph = graph_inputs(model, inputs)
    for binding, t, label in graph:
        d = tracker.dims(t)
        if isinstance(d, Unknown):
            raise ProblemError(
                f"{path}: {label} is made by {d.call} at {d.where}, whose dims solar does not "
                f"follow with {names} symbolic; make it with a factory of the sizes "
                "(torch.randn(BATCH, SEQ), torch.empty(...)), or leave them numeric"
            )
        for i, e in enumerate(d or ()):
            if not e.is_number:
                dims[(binding, i)] = (f"{label} dim {i}", e)
    shared = {storage_key(g) for _, g, _ in graph} - {None}
    for t, entry in tracker.live():
        if storage_key(t) not in shared:  # not a graph input, nor a view's base of one
            raise ProblemError(
                f"{path}: the tensor made at {entry.where} has dims {_text(entry.dims)} and "
                "is kept by the program outside its inputs, parameters and buffers (solar "
                f"traces it as a constant); register it as a buffer, or leave {names} numeric"
            )
    used = set().union(*(e.free_symbols for _, e in dims.values())) if dims else set()
    for n in sizes:
        if symbol(n) not in used:
            where = _plain_uses(tracker.recording, n)
            raise UnusedSizeError(
                f"{path}: {n} sizes no input, parameter or buffer of the program"
                + (f" (it is used as a plain number: {where})" if where else "")
                + f"; only a constant that sizes tensors can be symbolic: leave {n} numeric",
                n,
            )
    return dims


def _text(dims) -> str:
    from solar.symbolic.tracker import Unknown

    if isinstance(dims, Unknown):
        return f"unknown (made by {dims.call})"
    return "(" + ", ".join(str(d) for d in dims) + ")"


def _plain_uses(rec: Recording, name: str) -> str:
    s = symbol(name)
    return "; ".join(
        w for r, w in rec.guards.items() if isinstance(r, sympy.Eq) and s in r.free_symbols
    )


def _import_time_notes(path: Path, sizes, consts) -> list[str]:
    """Module constants computed from a symbolic one when the file was imported: they keep
    their value as it varies (``HIDDEN = 4 * WIDTH``)."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        uses = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & set(sizes)
        for target in node.targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Name) and uses and t.id in consts and t.id not in sizes:
                    out.append(
                        f"{t.id} is computed from {', '.join(sorted(uses))} when {path.name} is "
                        f"imported: it stays {consts[t.id]} as they vary (mark it symbolic "
                        "too, or compute it where it is used)"
                    )
    return out


__all__ = [
    "SymbolicProblem",
    "UnusedSizeError",
    "bound_problem",
    "clear_value_caches",
    "load_symbolic_problem",
    "parse_symbolic",
    "size_constants",
]
