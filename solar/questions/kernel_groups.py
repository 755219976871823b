"""A bound per compiled kernel (issue 33): what each kernel a compiler generated computes, and
the fused bound of exactly that.

A compiled program is a sequence of generated kernels (:class:`~solar.frontend.compiled.
GeneratedKernel`), each computing some of the IR kernels of solar's trace — whole, or a part
(Inductor splits a softmax into two reductions; it recomputes a cheap pointwise op inside two
consumers). Kernels that share an IR kernel with work across its elements (a reduction, a
contraction, a routine) are measured and bounded together: the *groups* are the connected
components of "computes a part of the same such IR kernel", so a group's kernels together do
all of its work. A pointwise IR kernel several kernels compute is recomputed by each for its
own use: it joins no groups and is counted in each (:func:`group_kernels`).

A group's fused bound is the fused bound of its IR kernels as a program of their own
(:func:`solar.ir.restrict.restrict`): what they read from outside through DRAM once, what they
hand on (to kernels outside the group, or as the program's result) written once, everything
inside on chip; the same lift and passes as every bound. The sum of the group fused bounds is
at least the program's fused bound (each group's work and I/O is a part of the program's, and
the program's inputs and outputs are each some group's), so the program's time has three terms
that add up::

    fused bound  +  (Σ group fused bounds − fused bound)  +  (measured − Σ group fused bounds)
                    the cost of the fusion choices          kernel quality and launches

In a measured run a group's kernels may beat its fused bound: what an earlier kernel wrote may
still sit in L2 (50 MiB on an H100) when the group reads it, and what the group writes may stay
there. Measured on the H100, a Triton reduction reading the 33.5 MB a cuBLAS GEMM had just
written ran in 8.1 µs against a DRAM-through bound of 10.0 µs. So each group also gets the
floor its kernels cannot beat in a run with L2 flushed before it (:class:`KernelGroup`
``bound_s``): its compute, its latency floor, and DRAM bytes ``max(cold, bytes − 2·L2)`` — only
the first reads of the program's inputs and weights are surely from DRAM. Headroom and
violations use that floor; the kernel-quality term may then be negative where L2 carried data
from kernel to kernel.

IR kernels no generated kernel names (the compiler's provenance lost them in a rewrite) are
counted in the group of all their consumers when there is one (a producer the compiler fused
into its consumer), or, with no consumer, in the group of all their producers (an epilogue),
and listed; otherwise they stay outside every group, listed with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solar.api import bound_graph, bound_program, compile_program
from solar.fmt import jsonable
from solar.frontend.compiled import CompiledTrace, GeneratedKernel
from solar.frozen import Frozen
from solar.graph.lift import lift
from solar.hw import load_spec
from solar.ir.program import Program
from solar.ir.restrict import restrict, storages
from solar.viewable import Viewable

__all__ = [
    "SCHEMA",
    "CompiledBound",
    "KernelGroup",
    "bound_compiled",
    "bound_kernel_groups",
    "group_kernels",
]

SCHEMA = "solar.compiled_bound/1"


@dataclass(frozen=True)
class KernelGroup(Frozen):
    """Generated kernels bounded together, the IR kernels they compute and their bounds.

    ``kernels``: indices into :attr:`CompiledBound.kernels` (launch order); ``absorbed``: IR
    kernels no generated kernel names, counted here (where their consumers are, or with none
    their producers).
    ``fused_s``: the fused bound of the group as a program of its own (its inputs read and its
    outputs written through DRAM once; ``bytes`` of them); the decomposition adds these.
    ``bound_s``: what the group's kernels cannot beat in a measured run, the same with the L2
    cache in it: data an earlier kernel wrote (or read) may still be in L2, and what the group
    writes may stay there, so DRAM is charged only ``max(cold_bytes, bytes - 2·L2)`` —
    ``cold_bytes`` are first reads of the program's inputs and weights, which a flushed L2
    cannot hold — next to its compute and its latency floor; headroom and violations use it.
    ``flops``: its work per op class."""

    index: int
    kernels: tuple[int, ...]
    names: tuple[str, ...]
    ir_kernels: tuple[str, ...]
    absorbed: tuple[str, ...]
    sources: tuple[str, ...]
    fused_s: float
    fused_bound_by: str
    bound_s: float
    bound_by: str
    compute_s: float
    latency_s: float
    bytes: float
    cold_bytes: float
    flops: Mapping[str, float]

    def to_dict(self) -> dict:
        return jsonable(dict(self.__dict__))


@dataclass(frozen=True)
class Uncovered(Frozen):
    """An IR kernel that no generated kernel computes, and why."""

    kernel: str
    op: str
    source: str
    why: str

    def to_dict(self) -> dict:
        return jsonable(dict(self.__dict__))


@dataclass(frozen=True, repr=False)
class CompiledBound(Frozen, Viewable):
    """The bounds of a compiled program, kernel group by kernel group (module docstring).

    ``fused_s``: the program's fused bound (solar's, for the whole traced graph);
    ``groups``: one bound per group of generated kernels; ``kernels``: the generated kernels
    in launch order with the group each belongs to (``None``: it maps to nothing, see its
    ``unmapped``); ``uncovered``: IR kernels no group computes."""

    program: str
    hw: str
    compiler: str
    mode: str
    fused_s: float
    fused_bound_by: str
    unfused_s: float
    kernels: tuple[GeneratedKernel, ...]
    group_of: tuple[int | None, ...]
    groups: tuple[KernelGroup, ...]
    uncovered: tuple[Uncovered, ...]
    notes: tuple[str, ...] = ()
    bound: object = field(default=None, repr=False, compare=False)

    @property
    def groups_s(self) -> float:
        """The sum of the groups' fused bounds: the program's fused bound once the compiler's
        fusion choices are made (each group's inputs and outputs through DRAM)."""
        return sum(g.fused_s for g in self.groups)

    @property
    def fusion_cost_s(self) -> float:
        """What the compiler's fusion choices cost against the program fully fused."""
        return self.groups_s - self.fused_s

    def to_dict(self) -> dict:
        return jsonable(
            {
                "schema": SCHEMA,
                "program": self.program,
                "hw": self.hw,
                "compiler": self.compiler,
                "mode": self.mode,
                "fused_s": self.fused_s,
                "fused_bound_by": self.fused_bound_by,
                "unfused_s": self.unfused_s,
                "groups_s": self.groups_s,
                "fusion_cost_s": self.fusion_cost_s,
                "kernels": [
                    {
                        "name": k.name,
                        "kind": str(k.kind),
                        "group": g,
                        "ir_kernels": list(k.ir_kernels),
                        "ops": list(k.ops),
                        "sources": list(k.sources),
                        "unmapped": k.unmapped,
                        "mapped_by": k.mapped_by,
                    }
                    for k, g in zip(self.kernels, self.group_of, strict=True)
                ],
                "groups": [g.to_dict() for g in self.groups],
                "uncovered": [u.to_dict() for u in self.uncovered],
                "notes": list(self.notes),
            }
        )

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __repr__(self) -> str:
        return (
            f"CompiledBound({self.program!r} on {self.hw}: {len(self.kernels)} kernels in "
            f"{len(self.groups)} groups, fused {self.fused_s:.3g} s, groups {self.groups_s:.3g} s)"
        )


def group_kernels(
    program: Program, kernels: Sequence[GeneratedKernel]
) -> tuple[list[list[int]], dict[int, list[str]], list[Uncovered], set[str]]:
    """``(groups, absorbed, uncovered, recomputed)``: the generated kernels (indices) in
    groups, each group's absorbed IR kernels (by group position), the IR kernels no group
    computes, and the pointwise IR kernels several groups compute each for itself.

    Kernels that share an IR kernel with work across its elements (a reduction, a
    contraction, a library routine) are one group: the compiler split that work between them.
    A pointwise IR kernel mapped by several kernels is one each of them computes whole for its
    own use (Inductor and XLA recompute cheap producers inside their consumers): it joins no
    groups, and is counted in each (the recomputation is a cost of the fusion choices)."""
    order = {k.name: i for i, k in enumerate(program.kernels)}
    pointwise = {k.name for k in program.kernels if _pointwise(k)}
    parent = list(range(len(kernels)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    users: dict[str, set[int]] = {}
    for i, k in enumerate(kernels):
        for ir in k.ir_kernels:
            if ir not in order:
                continue
            users.setdefault(ir, set()).add(i)
            j = owner.setdefault(ir, i)
            if ir in pointwise:
                continue
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    roots = sorted({find(i) for i, k in enumerate(kernels) if _mapped(k, order)})
    groups = [
        [i for i, k in enumerate(kernels) if find(i) == r and _mapped(k, order)] for r in roots
    ]
    group_at = {r: n for n, r in enumerate(roots)}
    where = {ir: group_at[find(i)] for ir, i in owner.items()}
    recomputed = {ir for ir, us in users.items() if len({find(u) for u in us}) > 1}
    absorbed: dict[int, list[str]] = {}
    producers, consumers = _neighbours(program)
    pending = [k.name for k in program.kernels if k.name not in where]
    changed = True
    while changed and pending:
        changed = False
        for ir in list(pending):
            # fused into the kernel that consumes it (a producer inlined), or, with no
            # consumer, into the one that made its operands (an epilogue)
            near = consumers[ir] or producers[ir]
            found = {where.get(n) for n in near}
            if near and len(found) == 1 and None not in found:
                (g,) = found
                where[ir] = g
                absorbed.setdefault(g, []).append(ir)
                pending.remove(ir)
                changed = True
    by_name = {k.name: k for k in program.kernels}
    uncovered = [
        Uncovered(
            ir,
            by_name[ir].op,
            by_name[ir].source,
            "no generated kernel computes it: the compiler removed it, or its provenance "
            "does not name it and its neighbours are in different kernels",
        )
        for ir in pending
    ]
    return groups, absorbed, uncovered, recomputed


def _pointwise(kernel: object) -> bool:
    """Whether every statement of an IR kernel is an elementwise loop nest: no reduction, no
    scan, no library routine, no data-dependent write, no sequential loop."""
    return not kernel.loops and all(  # type: ignore[attr-defined]
        st.kind == "nest" and st.reduce is None and not st.reduction_dims and not st.scatters
        for st in kernel.statements  # type: ignore[attr-defined]
    )


def _first_reads(program: Program) -> dict[str, str]:
    """Each storage tensor's first reader, in program order."""
    first: dict[str, str] = {}
    for k in program.kernels:
        for st in k.statements:
            for ld in st.loads():
                first.setdefault(program.base(ld.tensor), k.name)
    return first


def _outer(program: Program, tensor: str) -> bool:
    """Whether ``tensor`` is an input, weight or constant of the whole program as well."""
    return program.tensors[tensor].role in ("input", "weight", "constant")


def _mapped(k: GeneratedKernel, order: Mapping[str, int]) -> bool:
    return any(ir in order for ir in k.ir_kernels)


def _neighbours(program: Program) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each IR kernel's producers (the kernels that last wrote what it reads) and consumers
    (those that read what it writes)."""
    last: dict[str, str] = {}
    producers: dict[str, set[str]] = {k.name: set() for k in program.kernels}
    consumers: dict[str, set[str]] = {k.name: set() for k in program.kernels}
    for k in program.kernels:
        reads, writes = storages(program, k)
        for t in reads:
            w = last.get(t)
            if w is not None and w != k.name:
                producers[k.name].add(w)
                consumers[w].add(k.name)
        last.update(dict.fromkeys(writes, k.name))
    return producers, consumers


def bound_kernel_groups(compiled: CompiledTrace, hw="H100") -> CompiledBound:
    """The program's fused bound and the bounds of each group of the kernels the compiler
    generated (module docstring)."""
    spec = hw if hasattr(hw, "dram_bandwidth") else load_spec(hw)
    program = compiled.trace.program
    whole = bound_program(program, spec)
    groups, absorbed, uncovered, recomputed = group_kernels(program, compiled.kernels)
    order = [k.name for k in program.kernels]
    first_read = _first_reads(program)
    out: list[KernelGroup] = []
    group_of: list[int | None] = [None] * len(compiled.kernels)
    by_name = {k.name: k for k in program.kernels}
    for n, members in enumerate(groups):
        irs = {ir for i in members for ir in compiled.kernels[i].ir_kernels if ir in by_name}
        irs |= set(absorbed.get(n, ()))
        ir_kernels = tuple(k for k in order if k in irs)
        private = [k for k in ir_kernels if k in recomputed]
        sub = restrict(program, ir_kernels, f"{program.name}:group{n}", private=private)
        g = lift(sub, verified=True)
        b = bound_graph(g, spec)
        for i in members:
            group_of[i] = n
        io = g.info.fused_io
        total = float(io.total)
        cold = float(
            sum(v for t, v in io.reads.items() if first_read.get(t) in irs and _outer(program, t))
        )
        floor_bytes = spec.dram_floor_bytes(cold, total)
        compute = float(max(b.compute_s.values(), default=0.0))
        latency = float(b.latency.bounds.get("fused", 0.0)) if b.latency else 0.0
        terms = {"dram": floor_bytes / spec.dram_bandwidth, "latency": latency}
        if spec.l2_bandwidth:
            terms["l2"] = total / spec.l2_bandwidth
        unit = max(b.compute_s, key=b.compute_s.__getitem__) if b.compute_s else "none"
        terms[unit] = max(terms.get(unit, 0.0), compute)
        by = max(terms, key=terms.__getitem__)
        out.append(
            KernelGroup(
                index=n,
                kernels=tuple(members),
                names=tuple(compiled.kernels[i].name for i in members),
                ir_kernels=ir_kernels,
                absorbed=tuple(absorbed.get(n, ())),
                sources=tuple(
                    dict.fromkeys(by_name[k].source for k in ir_kernels if by_name[k].source)
                ),
                fused_s=float(b.fused),
                fused_bound_by=str(b.fused_bound_by),
                bound_s=float(terms[by]),
                bound_by=by,
                compute_s=compute,
                latency_s=latency,
                bytes=total,
                cold_bytes=cold,
                flops=dict(b.flops),
            )
        )
    notes = list(compiled.notes)
    if recomputed:
        notes.append(
            f"{len(recomputed)} pointwise IR kernel(s) are computed by several groups, each "
            f"for its own use, and counted in each: {', '.join(sorted(recomputed)[:6])}"
        )
    n_absorbed = sum(len(v) for v in absorbed.values())
    if n_absorbed:
        notes.append(
            f"{n_absorbed} IR kernel(s) no generated kernel names are counted in the group of "
            "their consumers (or of their producers, where nothing consumes them): see each "
            "group's absorbed"
        )
    return CompiledBound(
        program=program.name,
        hw=spec.name,
        compiler=compiled.compiler,
        mode=compiled.mode,
        fused_s=float(whole.fused),
        fused_bound_by=str(whole.fused_bound_by),
        unfused_s=float(whole.unfused),
        kernels=compiled.kernels,
        group_of=tuple(group_of),
        groups=tuple(out),
        uncovered=tuple(uncovered),
        notes=tuple(notes),
        bound=whole,
    )


def bound_compiled(
    model: object,
    inputs: object,
    hw="H100",
    *,
    mode: str = "default",
    kwargs: Mapping[str, object] | None = None,
    name: str | None = None,
    precision: str | None = None,
    framework: str | None = None,
) -> CompiledBound:
    """Compile ``model`` as ``torch.compile(mode=mode)`` (or ``jax.jit``) does on the machine
    at hand (it runs once on ``inputs``) and bound each group of the kernels the compiler
    generated on ``hw``: the table of :class:`CompiledBound`, nothing measured."""
    compiled = compile_program(
        model,
        inputs,
        kwargs=kwargs,
        mode=mode,
        name=name,
        precision=precision,
        framework=framework,
    )
    if len(compiled) != 1:
        raise ValueError(
            f"the program compiles as {len(compiled)} graphs (graph breaks): "
            "solar.headroom(model, inputs, compile=True) reports each; "
            "torch._dynamo.explain(model)(*inputs) says where they break"
        )
    return bound_kernel_groups(compiled[0], hw)
