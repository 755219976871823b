"""Numerical validation (docs/validation.md): execute the IR on the source program's own inputs and
weights, and compare every output (optionally every kernel's output) with the source's; the
report, batches of problem files and ``solar validate``.

When outputs miss the tolerance, two checks tell the IR's errors from the program's own
rounding: a PyTorch program is validated kernel by kernel in isolation (each kernel on the
source's values of what it reads, :func:`isolated_kernel_checks`), a JAX program against the
difference between its compiled and op-by-op runs; either passes the program only with the
reason written in the report.

What it is built from lives beside it, and its public names are re-exported here: the
tolerances and the comparison in :mod:`.compare`, what is validated (a framework-neutral
:class:`Subject`) in :mod:`.subject`, problem files with real inputs (constant-filled tensors
randomized: never validate on zeros) in :mod:`.problems`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from solar.fmt import jsonable
from solar.frontend.torch.lower import output_stem
from solar.frozen import Draft, Frozen
from solar.gpu.compare import (
    INT_MISMATCH_TOL,
    REL_TOL,
    TF32_TOL,
    OutputCheck,
    _ir_dtype,
    compare,
    tolerance,
)
from solar.gpu.problems import (
    discover,
    load_real_problem,
    problem_subject,
    randomize_constants,
)
from solar.gpu.randomness import compare_statistics, random_outputs, reseed
from solar.gpu.subject import Subject, make_subject
from solar.interp.torch.execute import execute
from solar.ir.extern import DataSizeMismatch
from solar.ir.program import Extern, Program
from solar.ir.scalar import Call, Const, Load
from solar.viewable import Viewable

__all__ = [
    "INT_MISMATCH_TOL",
    "REL_TOL",
    "SCHEMA",
    "TF32_TOL",
    "KernelCheck",
    "OutputCheck",
    "Subject",
    "ValidationReport",
    "compare",
    "discover",
    "load_real_problem",
    "problem_subject",
    "randomize_constants",
    "tolerance",
    "validate",
    "validate_paths",
    "validate_problem",
    "validate_subject",
]

SCHEMA = "solar.validate/1"

#: A program whose non-contraction statements run more instances than this is not executed
#: (the executor would take minutes); contractions run as einsums and do not count.
MAX_INSTANCES = 2e11


# ---------------------------------------------------------------------------------------------
# The report


@dataclass(frozen=True)
class KernelCheck(Frozen):
    """The outputs of one IR kernel compared with the source's intermediates."""

    kernel: str
    op: str
    tensors: tuple[OutputCheck, ...]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tensors)

    @property
    def rel_err(self) -> float:
        return max((t.rel_err for t in self.tensors), default=0.0)

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "op": self.op,
            "ok": self.ok,
            "rel_err": self.rel_err,
            "tensors": [t.to_dict() for t in self.tensors],
        }


@dataclass(frozen=True)
class ValidationReport(Frozen, Viewable):
    """IR vs source, per output (and per kernel when asked). ``status`` is ``passed``,
    ``failed`` (some output differs), ``error`` (something raised; ``reason`` says what) or
    ``skipped`` (``reason`` says why)."""

    program: str
    device: str
    status: str
    outputs: tuple[OutputCheck, ...] = ()
    kernels: tuple[KernelCheck, ...] | None = None
    first_bad_kernel: str | None = None
    isolated: tuple[KernelCheck, ...] | None = None  # each kernel given the source's inputs
    reason: str | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    path: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    @property
    def worst(self) -> OutputCheck | None:
        bad = [o for o in self.outputs if not o.ok]
        pool = bad or self.outputs
        return max(pool, key=lambda o: o.rel_err / o.tol if o.tol else o.rel_err, default=None)

    def summary(self) -> str:
        w = self.worst
        s = f"{self.program}: {self.status}"
        if w is not None:
            s += f" (worst {w.name}: rel err {w.rel_err:.3g}, tol {w.tol:.3g})"
        if self.first_bad_kernel:
            s += f"; first differing kernel {self.first_bad_kernel}"
        if self.reason and self.status != "passed":
            s += f": {self.reason}"
        return s

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "program": self.program,
            "path": self.path,
            "device": self.device,
            "status": self.status,
            "reason": self.reason,
            "outputs": [o.to_dict() for o in self.outputs],
            "kernels": None if self.kernels is None else [k.to_dict() for k in self.kernels],
            "first_bad_kernel": self.first_bad_kernel,
            "isolated": None if self.isolated is None else [k.to_dict() for k in self.isolated],
            "seconds": dict(self.seconds),
            "notes": list(self.notes),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(jsonable(self.to_dict()), indent=indent)


# ---------------------------------------------------------------------------------------------
# Validation


def _is_product(e) -> bool:
    if isinstance(e, (Load, Const)):
        return True
    if isinstance(e, Call) and e.op in ("mul", "cast"):
        return all(_is_product(a) for a in e.args)
    return False


def execution_cost(program: Program) -> float:
    """Instances the executor evaluates element by element (contractions excluded; an extern
    routine's row expression is evaluated once per row element, not once per output position:
    its rows, then its outputs)."""
    total = 0.0
    for k in program.kernels:
        reps = math.prod(int(d.extent) for d in k.loops) if k.loops else 1
        for st in k.statements:
            if st.reduce == "sum" and _is_product(st.expr):
                continue
            extents = [int(d.extent) for d in st.dims]
            if isinstance(st, Extern):
                pos = st.dims.index(st.parallel_dims[-1])
                rows = math.prod(extents[:pos] + extents[pos + 1 :])
                total += reps * float(rows + math.prod(int(d.extent) for d in st.parallel_dims))
                continue
            total += reps * float(math.prod(extents))
    return total


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def validate_subject(
    subject: Subject,
    *,
    per_kernel: bool | str = False,
    tol: float | Mapping[str, float] | None = None,
    max_instances: float = MAX_INSTANCES,
    reference: Sequence[torch.Tensor] | None = None,
) -> ValidationReport:
    """Execute the IR on the subject's values and compare with the source's outputs.

    ``per_kernel``: ``True`` also compares every kernel's outputs with the source's
    intermediates (torch subjects; the fx graph is run on the same values), ``"auto"`` only
    when an output fails (to find the first differing kernel) and always for a PyTorch
    training step (its outputs, the updated parameters, dilute an error in a gradient).
    ``tol`` overrides the tolerance: one number, or ``{dtype: number}``. ``reference``: the
    source's flattened outputs if already computed (the source is not run again)."""
    program, dev = subject.program, subject.device
    if per_kernel == "auto" and subject.trace.updated:
        per_kernel = True  # a training step: check the gradients too, kernel by kernel
    rep = Draft(ValidationReport, subject.name, str(dev), "error", path=subject.path)
    rep.notes = list(subject.notes)
    if subject.trace_s:
        rep.seconds["trace"] = subject.trace_s
    cost = execution_cost(program)
    if cost > max_instances:
        rep.status = "skipped"
        rep.reason = (
            f"the IR's element-wise statements run {cost:.3g} instances (> {max_instances:.3g}): "
            "too slow to execute at this size"
        )
        return rep.build()

    def tol_of(dtype) -> float:
        if isinstance(tol, Mapping):
            name = _ir_dtype(dtype)
            if name in tol:
                return float(tol[name])
        elif tol is not None and (_ir_dtype(dtype) in REL_TOL):
            return float(tol)
        return tolerance(dtype, program)

    drawn = random_outputs(program, subject.output_names)
    try:
        values = subject.values()
        updated = list(subject.trace.updated)
        # the source updates them; the kernel-isolated check replays from the values before
        before = {n: values[n].detach().clone() for n in updated} if per_kernel else {}
        t0 = time.perf_counter()
        if drawn:
            reseed()
        got = execute(program, values, device=dev)
        _sync(dev)
        rep.seconds["ir"] = time.perf_counter() - t0
    except torch.cuda.OutOfMemoryError:
        raise
    except DataSizeMismatch as e:
        if subject.framework != "torch" or drawn:
            rep.reason = f"executing the IR failed: {type(e).__name__}: {_line(e)}"
            return rep.build()
        return _sizes_isolated(rep, subject, {**values, **before}, tol_of, e)
    except Exception as e:
        rep.reason = f"executing the IR failed: {type(e).__name__}: {_line(e)}"
        return rep.build()
    try:
        if reference is None:
            t0 = time.perf_counter()
            if drawn:
                reseed()
            with torch.no_grad():
                result = subject.run()
            subject.synchronize()
            rep.seconds["source"] = time.perf_counter() - t0
            reference = subject.flatten(result)
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        rep.reason = f"running the source program failed: {type(e).__name__}: {_line(e)}"
        return rep.build()
    t0 = time.perf_counter()
    names = subject.output_names
    if len(reference) != len(names):
        rep.status = "failed"
        rep.reason = f"the source returns {len(reference)} tensors; the IR has {len(names)} outputs"
        return rep.build()
    by_stats = []
    for i, (name, ref) in enumerate(zip(names, reference)):
        label = name if names.count(name) == 1 else f"{name}#{i}"
        check = compare(got[name], ref, tol=tol_of(ref.dtype), name=label)
        if not check.ok and name in drawn:
            check = compare_statistics(got[name], ref, tol=tol_of(ref.dtype), name=label)
            by_stats.append(label)
        rep.outputs.append(check)
    if drawn:
        rep.notes.append(_random_note(names, drawn, by_stats))
    rep.seconds["compare"] = time.perf_counter() - t0
    rep.status = "passed" if all(o.ok for o in rep.outputs) else "failed"
    if rep.status == "failed":
        bad = [o.name for o in rep.outputs if not o.ok]
        rep.reason = f"{len(bad)} of {len(rep.outputs)} outputs differ ({', '.join(bad[:4])})"
    del got
    if per_kernel is True or (per_kernel == "auto" and rep.status == "failed"):
        t0 = time.perf_counter()
        try:
            rep.kernels = kernel_checks(subject, values, tol_of)
            bad_k = next((k for k in rep.kernels if not k.ok), None)
            rep.first_bad_kernel = bad_k.kernel if bad_k else None
        except torch.cuda.OutOfMemoryError:
            rep.notes.append("per-kernel check skipped: out of device memory")
            if dev.type == "cuda":
                torch.cuda.empty_cache()
        except Exception as e:
            rep.notes.append(f"per-kernel check failed: {type(e).__name__}: {_line(e)}")
        rep.seconds["per_kernel"] = time.perf_counter() - t0
    if rep.status == "failed" and rep.kernels:
        if drawn:
            rep.notes.append("kernel-isolated check not run: the program draws random numbers")
        else:
            _check_isolated(rep, subject, {**values, **before}, tol_of, reference)
    if rep.status == "failed" and subject.framework == "jax" and not drawn:
        _check_against_op_by_op(rep, subject, reference)
    return rep.build()


#: How far an output may be from the source, in units of the source's own difference from
#: itself (non-deterministic kernels such as cuDNN's weight gradients; compiled vs op by op)
NOISE_FACTOR = 4.0


def _check_against_op_by_op(rep: Draft, subject: Subject, reference: Sequence[object]) -> None:
    """A JAX program whose IR misses the tolerance: run the source again op by op
    (``jax.disable_jit``: every primitive rounds its own output, where the compiled program
    keeps fused intermediates in float32). The two are the same program, so their difference
    is the program's own rounding ambiguity; the IR passes if each differing output is within
    ``NOISE_FACTOR`` times it, and the report says so."""
    import jax

    t0 = time.perf_counter()
    try:
        with jax.disable_jit():
            again = subject.flatten(subject.run())
    except Exception as e:
        rep.notes.append(f"op-by-op check failed: {type(e).__name__}: {_line(e)}")
        return
    finally:
        rep.seconds["op_by_op"] = time.perf_counter() - t0
    if len(again) != len(reference):
        rep.notes.append("op-by-op check: the outputs do not line up")
        return
    worst = 0.0
    for o, a, r in zip(rep.outputs, again, reference, strict=True):
        if o.ok:
            continue
        noise = compare(a, r, tol=o.tol, name=o.name).rel_err
        worst = max(worst, o.rel_err / noise if noise > 0 else math.inf)
        if o.rel_err > NOISE_FACTOR * noise:
            rep.notes.append(
                f"op-by-op check: {o.name} differs by {o.rel_err:.3g}, the source from itself "
                f"(compiled vs op by op) by {noise:.3g}: the IR is not within its rounding"
            )
            return
    rep.status = "passed"
    rep.reason = (
        f"{rep.reason}, each within {worst:.2g}x of the source's own difference between its "
        "compiled and op-by-op runs: rounding, not the IR"
    )
    rep.notes.append(f"validated against the source's own rounding: {rep.reason}")


def _source_again(subject: Subject, values: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
    """The source's outputs from a second run on the same values (a training step's updated
    inputs are set back first): how far the source is from itself."""
    live = subject.values()
    with torch.no_grad():
        for n in subject.trace.updated:
            live[n].copy_(values[n])
        result = subject.run()
    subject.synchronize()
    return [t.detach() for t in subject.flatten(result)]


def _sizes_isolated(
    rep: Draft, subject: Subject, values, tol_of, error: DataSizeMismatch
) -> ValidationReport:
    """The chained IR run met a data-dependent size other than the one traced (observed sizes:
    the IR's own rounding moved a value across a threshold, one more box kept by NMS, one token
    routed to another expert). The chained outputs cannot be compared; every kernel is checked
    on the source's inputs instead (:func:`_check_isolated`), where each size is the source's."""
    rep.status = "failed"
    rep.reason = f"the chained IR run takes another data-dependent size: {_line(error)}"
    with torch.no_grad():
        reference = subject.flatten(subject.run())
    subject.synchronize()
    _check_isolated(rep, subject, values, tol_of, reference, why=rep.reason)
    return rep.build()


def _check_isolated(
    rep: Draft,
    subject: Subject,
    values,
    tol_of,
    reference: Sequence[torch.Tensor],
    why: str | None = None,
) -> None:
    """Outputs differ: run each kernel on the source's inputs. The program passes, saying
    so, when (1) the traced graph run on the source's values reproduces the source's outputs
    (within the tolerance, or ``NOISE_FACTOR`` times the source's difference from a second
    run of itself: the values and the graph are the source's) and (2) every kernel the chained
    check compared reproduces its source operator given the source's inputs: the difference
    is then the source's rounding amplified through the program, not the IR."""
    t0 = time.perf_counter()
    try:
        rep.isolated, graph_out = isolated_kernel_checks(subject, values, tol_of)
    except torch.cuda.OutOfMemoryError:
        rep.notes.append("kernel-isolated check skipped: out of device memory")
        return
    except Exception as e:
        rep.notes.append(f"kernel-isolated check failed: {type(e).__name__}: {_line(e)}")
        return
    finally:
        rep.seconds["isolated"] = time.perf_counter() - t0
    again = _source_again(subject, values)
    if len(graph_out) != len(reference) or len(again) != len(reference):
        rep.notes.append("kernel-isolated: not conclusive, the outputs do not line up")
        return
    for g, a, r in zip(graph_out, again, reference, strict=True):
        tol = tol_of(r.dtype)
        noise = compare(a, r, tol=tol, name="again").rel_err  # the source against itself
        if compare(g, r, tol=max(tol, NOISE_FACTOR * noise), name="graph").ok:
            continue
        rep.notes.append(
            "kernel-isolated: not conclusive, the traced graph run on the source's values "
            "does not reproduce the source's outputs (beyond the source's own run-to-run "
            f"difference, {noise:.3g})"
        )
        return
    chained = {k.kernel for k in rep.kernels or []}
    compared = {k.kernel for k in rep.isolated}
    bad = [k for k in rep.isolated if not k.ok]
    if bad:
        rep.notes.append(
            f"kernel-isolated: {len(bad)} of {len(compared)} kernels differ given the source's "
            f"inputs (first {bad[0].kernel}, rel err {bad[0].rel_err:.3g})"
        )
        return
    if not compared or not chained <= compared:
        rep.notes.append(
            f"kernel-isolated: {len(compared)} kernels match given the source's inputs, but "
            f"{len(chained - compared)} the chained check compared could not be isolated"
        )
        return
    worst = rep.worst
    if why is None and worst is not None:
        why = (
            f"outputs differ beyond tolerance (worst {worst.name}: rel err {worst.rel_err:.3g}, "
            f"tol {worst.tol:.3g})"
        )
    rep.status = "passed"
    rep.reason = (
        f"{why} while every one of {len(compared)} kernels reproduces its source operator "
        "given the source's inputs: rounding amplified through the program"
    )
    rep.notes.append(f"validated kernel by kernel: {rep.reason}")


def _random_note(names: list[str], drawn: set[str], by_stats: list[str]) -> str:
    """How the outputs of a program with random kernels were compared."""
    exact = len([n for n in dict.fromkeys(names) if n in drawn]) - len(set(by_stats))
    note = (
        f"random kernels: {len(drawn)} output(s) depend on random draws; re-seeded "
        f"(torch.manual_seed before the source and the IR): {exact} matched as usual"
    )
    if by_stats:
        note += f", {len(by_stats)} compared by statistics ({', '.join(by_stats[:4])})"
    return note


def _line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0][:300] if s else type(e).__name__


def _torch_graph(subject: Subject):
    """The traced fx graph and its input bindings, which the per-kernel checks replay."""

    gm, bindings = subject.trace.graph, subject.trace.bindings
    if not isinstance(gm, fx.GraphModule):
        raise ValueError("per-kernel checks need a torch trace (an fx graph and bindings)")
    return gm, bindings


def _writers(program: Program) -> dict[str, list[int]]:
    """Storage -> the kernels writing it, in order (more than one: updated in place)."""
    writers: dict[str, list[int]] = {}
    for ki, k in enumerate(program.kernels):
        for base in dict.fromkeys(program.base(st.out.tensor) for st in k.statements):
            writers.setdefault(base, []).append(ki)
    return writers


def kernel_checks(
    subject: Subject, values: Mapping[str, torch.Tensor], tol_of: Callable[[object], float]
) -> list[KernelCheck]:
    """Every IR kernel's outputs vs the source's intermediates: the IR runs with
    ``keep_intermediates``, the traced fx graph runs on the same values, and each fx node's
    result is compared with the IR tensor of the same name (shapes and dtypes must agree;
    views of inputs and unnamed tensors are skipped). A tensor later kernels update in place
    (an optimizer's foreach temporaries) is compared after the run, when both sides hold its
    final value."""

    gm, bindings = _torch_graph(subject)
    program, dev = subject.program, subject.device
    kept = execute(program, values, device=dev, keep_intermediates=True)
    writers = _writers(program)
    mutating = any(
        isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable
        for n in gm.graph.nodes
        if n.op == "call_function"
    )
    args = [values[n] for n in bindings]
    if mutating:
        args = [a.clone() for a in args]
    found: dict[int, list[OutputCheck]] = {}
    later: list[tuple[int, str, torch.Tensor]] = []  # updated in place later: compared at the end

    class Recorder(_Replay):
        def run_node(self, n):
            r = super().run_node(n)
            if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
                return r
            multi = isinstance(r, (tuple, list))
            vals = list(r) if multi else [r]
            for i, v in enumerate(vals):
                name = output_stem(n, i) if multi else n.name
                if not isinstance(v, torch.Tensor) or name not in kept:
                    continue
                decl = program.tensors.get(name)
                ks = writers.get(program.base(name), []) if decl is not None else []
                ki = ks[0] if ks else None
                if ki is None or decl.shape != tuple(v.shape):
                    continue
                got = kept[name]
                if got.dtype != v.dtype:
                    continue
                if len(ks) > 1:  # updated in place: the IR keeps its final value
                    later.append((ki, name, v))
                    continue
                found.setdefault(ki, []).append(compare(got, v, tol=tol_of(v.dtype), name=name))
            return r

    with torch.no_grad():
        Recorder(gm).run(*args)
    for ki, name, v in later:  # both sides now hold the value after every in-place update
        found.setdefault(ki, []).append(compare(kept[name], v, tol=tol_of(v.dtype), name=name))
    _sync(dev)
    return [
        KernelCheck(program.kernels[ki].name, program.kernels[ki].op, checks)
        for ki, checks in sorted(found.items())
    ]


#: operators that allocate without writing: the IR launches no kernel for them, so their
#: outputs are not a version of the storage the first writer (an in-place operator) fills
_ALLOCATIONS = {
    torch.ops.aten.empty.memory_format,
    torch.ops.aten.empty_like.default,
    torch.ops.aten.empty_strided.default,
    torch.ops.aten.new_empty.default,
    torch.ops.aten.new_empty_strided.default,
}


def _contiguous(x: object) -> object:
    return x.contiguous() if isinstance(x, torch.Tensor) else x


class _Replay(fx.Interpreter):
    """The graph replays' interpreter: it reruns a node on contiguous copies of its tensor
    arguments when the node's kernel rejects their layout. The graph was traced on fake
    tensors, whose layouts can differ from the real kernels' (a CPU convolution's output): a
    ``contiguous(memory_format)`` that was a no-op while tracing is then missing from the graph,
    and ``native_group_norm`` refuses its input. The values are the same."""

    def call_function(self, target, args, kwargs):
        try:
            return super().call_function(target, args, kwargs)
        except RuntimeError as e:
            if "contiguous" not in str(e):
                raise
            args, kwargs = pytree.tree_map(_contiguous, (args, kwargs))
            return super().call_function(target, args, kwargs)


def isolated_kernel_checks(
    subject: Subject, values: Mapping[str, torch.Tensor], tol_of: Callable[[object], float]
) -> tuple[list[KernelCheck], list[torch.Tensor]]:
    """Every IR kernel given the SOURCE's inputs: before a kernel runs, each intermediate it
    reads is overwritten with the source's value of that tensor, and its outputs are compared
    right after it runs. Where rounding is amplified through a program (a ReLU mask flipping
    on a different convolution algorithm, a chaotic recurrence), the end-to-end outputs can
    differ while every kernel computes what its source operator does: this check tells the
    two apart. The source's values are versioned per storage (an in-place operator makes a
    new version); a storage whose IR kernels and source operators write it a different
    number of times is left to the IR and not compared. Also returns the traced graph's own
    outputs on these values (flattened), for the caller to hold against the source's."""

    gm, bindings = _torch_graph(subject)
    program, dev = subject.program, subject.device
    decls = program.tensors
    versions: dict[str, list[torch.Tensor]] = {}  # contiguous storage -> source values

    def record(name: str, v: object) -> None:
        decl = decls.get(name)
        if decl is None or decl.role in ("input", "weight") or not isinstance(v, torch.Tensor):
            return
        if decl.view is not None:
            # an operator's output in a layout torch chose (a dense permutation, declared as
            # a view of its own storage ``{name}_storage``): record the storage. Other views
            # (a reshape of an earlier tensor) are not new values
            base = decls[decl.view.base]
            if decl.view.base != f"{name}_storage" or base.dtype != decl.dtype:
                return
            buf = torch.empty(base.shape, dtype=v.dtype, device=v.device)
            buf.as_strided(v.shape, decl.view.strides, decl.view.offset).copy_(v)
            name, decl, v = decl.view.base, base, buf
        if tuple(v.shape) == decl.shape:
            versions.setdefault(name, []).append(v.detach().clone())

    names = {n: n.name for n in gm.graph.nodes}

    class Recorder(_Replay):
        def run_node(self, n):
            r = super().run_node(n)
            if n.op != "call_function" or not isinstance(n.target, torch._ops.OpOverload):
                return r
            schema = n.target._schema
            if schema.is_mutable:  # the mutated argument's storage gets a new version
                for a, arg in zip(schema.arguments, n.args, strict=False):
                    written = a.alias_info is not None and a.alias_info.is_write
                    if written and isinstance(arg, fx.Node):
                        record(names[arg], self.env[arg])
                return r
            if n.target in _ALLOCATIONS:  # uninitialised memory: no kernel writes it
                return r
            multi = isinstance(r, (tuple, list))
            for i, v in enumerate(list(r) if multi else [r]):
                record(output_stem(n, i) if multi else n.name, v)
            return r

    args = [values[n].clone() for n in bindings]
    with torch.no_grad():
        graph_out = [v for v in pytree.tree_leaves(Recorder(gm).run(*args)) if torch.is_tensor(v)]
    order = list(bindings)  # a training step's updated inputs follow its returned tensors
    graph_out += [args[order.index(n)] for n in subject.trace.updated]
    writers = _writers(program)
    usable = {b for b, ks in writers.items() if b in versions and len(versions[b]) == len(ks)}
    reads = [
        {program.base(ld.tensor) for st in k.statements for ld in st.loads()} & usable
        for k in program.kernels
    ]
    found: dict[int, list[OutputCheck]] = {}
    state = {"last": -1}

    def version_before(base: str, ki: int) -> torch.Tensor | None:
        done = [w for w in writers[base] if w < ki]
        return versions[base][len(done) - 1] if done else None

    def check_outputs(ki: int, value: Callable[[str, torch.Tensor], torch.Tensor]) -> None:
        k = program.kernels[ki]
        for base in dict.fromkeys(program.base(st.out.tensor) for st in k.statements):
            if base in usable:
                want = versions[base][writers[base].index(ki)]
                got = value(base, want)
                found.setdefault(ki, []).append(
                    compare(got, want, tol=tol_of(want.dtype), name=base)
                )

    def from_storage(storage):
        return lambda base, want: storage(base)[: want.numel()].view(want.shape).clone()

    def observe(ki, si, env, storage) -> None:
        if ki == state["last"]:
            return
        if state["last"] >= 0:
            check_outputs(state["last"], from_storage(storage))
        state["last"] = ki
        for base in reads[ki]:
            ref = version_before(base, ki)
            if ref is not None:
                storage(base)[: ref.numel()].copy_(ref.reshape(-1))

    result = execute(program, values, device=dev, keep_intermediates=True, observe=observe)
    if state["last"] >= 0:  # the last kernel's outputs, as the run left them
        check_outputs(state["last"], lambda base, want: result[base])
    _sync(dev)
    checks = [
        KernelCheck(program.kernels[ki].name, program.kernels[ki].op, found[ki])
        for ki in sorted(found)
    ]
    return checks, graph_out


def validate(
    model,
    inputs,
    *,
    per_kernel: bool | str = False,
    tol: float | Mapping[str, float] | None = None,
    precision: str | None = None,
    name: str | None = None,
    trace=None,
) -> ValidationReport:
    """Validate the IR of ``model(*inputs)`` against the model itself, on the real tensors
    given (their device is where both run: CUDA at full size, or CPU at small sizes)."""
    subject = make_subject(model, inputs, trace=trace, name=name, precision=precision)
    return validate_subject(subject, per_kernel=per_kernel, tol=tol)


def validate_problem(
    path: str | Path,
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    per_kernel: bool | str = "auto",
    tol: float | Mapping[str, float] | None = None,
    overrides: Mapping[str, object] | None = None,
    precision: str | None = None,
    strict_overrides: bool = True,
) -> ValidationReport:
    """Validate a problem file built with real tensors on ``device`` (see
    :func:`load_real_problem`); errors become a report with status ``error``."""
    path = Path(path)
    try:
        subject = problem_subject(
            path,
            device=device,
            seed=seed,
            overrides=overrides,
            precision=precision,
            strict_overrides=strict_overrides,
        )
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as e:
        return ValidationReport(
            path.stem,
            str(device),
            "error",
            reason=f"{type(e).__name__}: {_line(e)}",
            path=str(path),
        )
    return validate_subject(subject, per_kernel=per_kernel, tol=tol)


# ---------------------------------------------------------------------------------------------
# Batches


def progress(items: Sequence, *, desc: str = "", enable: bool = True):
    """Iterate with a progress bar (tqdm, else rich, else none)."""
    if not enable:
        yield from items
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(items, desc=desc, total=len(items), dynamic_ncols=True)
        for x in bar:
            bar.set_postfix_str(getattr(x, "stem", str(x))[:40])
            yield x
        return
    try:
        from rich.progress import track
    except ImportError:
        yield from items
        return
    yield from track(items, description=desc, total=len(items), transient=True)


def _free(device) -> None:
    import gc

    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def validate_paths(
    paths: Iterable[str | Path],
    *,
    device: str | torch.device = "cuda",
    seed: int = 0,
    per_kernel: bool | str = "auto",
    tol: float | Mapping[str, float] | None = None,
    precision: str | None = None,
    show_progress: bool = True,
    overrides: Mapping[str, object] | None = None,
) -> list[ValidationReport]:
    """Validate every problem file under ``paths``; a failing file never stops the batch.
    ``overrides`` are applied to the files that define those names."""
    reports = []
    for path in progress(discover(paths), desc="validate", enable=show_progress):
        try:
            r = validate_problem(
                path,
                device=device,
                seed=seed,
                per_kernel=per_kernel,
                tol=tol,
                precision=precision,
                overrides=overrides,
                strict_overrides=False,
            )
        except torch.cuda.OutOfMemoryError as e:
            r = ValidationReport(path.stem, str(device), "error", reason=f"out of memory: {e}")
        reports.append(dataclasses.replace(r, path=str(path)))
        _free(device)
    return reports
