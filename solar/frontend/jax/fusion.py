"""Kernel grouping for the unfused bound: XLA's fusion granularity, approximated from below.

XLA does not launch one kernel per primitive: it fuses elementwise chains, broadcasts and
converts into their neighbours. One kernel per primitive would charge DRAM traffic XLA never
moves, and the "unfused" bound could exceed XLA's real runtime. Since merging two kernels
never raises a bound (``max(a, b) + max(c, d) >= max(a + c, b + d)``, and traffic between
them disappears), grouping *more* than XLA does keeps the bound below XLA's execution. The rule:

1. Every *heavy* unit (dot_general, conv_general_dilated, reduce_*, argmax, cumulative ops,
   reduce_window, dynamic_update_slice, scatter) anchors a kernel of its own.
2. A *light* unit (elementwise, convert, select, iota, pad, concatenate, rev, gather, copies)
   joins the kernel of its earliest consumer (producer -> consumer fusion, including XLA's
   input fusion into reductions); a light unit whose result only leaves the program joins the
   kernel of its latest producer (epilogue fusion, e.g. cuBLAS/cuDNN bias and activation
   epilogues, reduction epilogues). A light unit with neither stands alone.
3. Views (broadcast, reshape, transpose, slice, squeeze) are not units: they cost nothing.
4. Light results never travel through DRAM between kernels (they are marked kernel-local):
   XLA either fuses them or recomputes them in each consumer; charging nothing for them is below
   both. Results of heavy units cross DRAM when another kernel reads them; program outputs
   are always written.
5. A scan lowered as one looped kernel (``Kernel.loops``) is a kernel of its own: nothing
   outside the loop fuses into it.
6. If a grouping would make kernels depend on each other in a cycle, light units on the cycle
   are split off into kernels of their own until the kernel graph is acyclic; kernels then run
   in a topological order that keeps the program's order where it can.

The fused bound does not depend on this grouping (it is framework-independent).
"""

from __future__ import annotations

from dataclasses import replace

import networkx as nx

from solar.frontend.jax.lower import Lowerer, Unit
from solar.ir.program import Kernel


def _accesses(lw: Lowerer, u: Unit) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Storage bases a unit reads (before writing) and writes, each once (tuples of names:
    kept for the whole grouping, they are objects the collector stops tracking)."""
    p = lw.program
    reads: set[str] = set()
    writes: set[str] = set()
    for st in u.kernel.statements:
        for ld in st.loads():
            reads.add(p.base(ld.tensor))
        if st.accumulate:
            reads.add(p.base(st.out.tensor))
        writes.add(p.base(st.out.tensor))
    return tuple(reads), tuple(writes)


def _dependencies(
    units: list[Unit], acc: dict[int, tuple[tuple[str, ...], tuple[str, ...]]]
) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Each unit's dependencies in program order (read-after-write, write-after-read,
    write-after-write) and its consumers (the later units that read what it wrote)."""
    deps: dict[int, set[int]] = {u.index: set() for u in units}
    consumers: dict[int, set[int]] = {u.index: set() for u in units}
    writers: dict[str, list[int]] = {}
    readers: dict[str, list[int]] = {}
    for u in units:
        r, w = acc[u.index]
        for b in r:
            for v in writers.get(b, ()):
                deps[u.index].add(v)
                consumers[v].add(u.index)
        for b in w:
            deps[u.index].update(readers.get(b, ()))
            deps[u.index].update(writers.get(b, ()))
        for b in r:
            readers.setdefault(b, []).append(u.index)
        for b in w:
            writers.setdefault(b, []).append(u.index)
    for u in units:
        deps[u.index].discard(u.index)
        consumers[u.index].discard(u.index)
    return deps, consumers


def _consumer_fusion(
    units: list[Unit], kind: dict[int, str], consumers: dict[int, set[int]], loops: set[int]
) -> dict[int, int]:
    """Rules 1-2, first half: heavy units anchor groups; in reverse program order a light
    unit joins the group of its earliest consumer (unless that is a looped kernel). Returns
    unit -> group (the anchor's index)."""
    group: dict[int, int] = {}
    for u in reversed(units):
        i = u.index
        if kind[i] != "light" or not consumers[i] or group[min(consumers[i])] in loops:
            group[i] = i
        else:
            group[i] = group[min(consumers[i])]
    return group


def _epilogue_fusion(
    units: list[Unit],
    kind: dict[int, str],
    deps: dict[int, set[int]],
    consumers: dict[int, set[int]],
    loops: set[int],
    group: dict[int, int],
) -> None:
    """Rule 2, second half (in place): a group of light units only whose results leave the
    program joins the group of its latest producer (unless that is a looped kernel)."""
    members: dict[int, list[int]] = {}
    for u in units:
        members.setdefault(group[u.index], []).append(u.index)
    for g in sorted(members):
        ms = members[g]
        if any(kind[i] != "light" for i in ms):
            continue
        outside = {c for i in ms for c in consumers[i]} - set(ms)
        producers = {d for i in ms for d in deps[i]} - set(ms)
        if outside or not producers or group[max(producers)] in loops:
            continue
        target = group[max(producers)]
        for i in ms:
            group[i] = target
        members[target].extend(ms)
        members[g] = []


def _break_cycles(
    kind: dict[int, str], deps: dict[int, set[int]], group: dict[int, int]
) -> nx.DiGraph:
    """Rule 6 (in place): while the groups depend on each other in a cycle, split the light
    units of the groups on it off into kernels of their own. Returns the (acyclic) graph of
    group dependencies."""
    while True:
        gg = nx.DiGraph()
        gg.add_nodes_from(set(group.values()))
        for i, ds in deps.items():
            for d in ds:
                if group[d] != group[i]:
                    gg.add_edge(group[d], group[i])
        try:
            cycle = nx.find_cycle(gg)
        except nx.NetworkXNoCycle:
            return gg
        on_cycle = {a for a, _ in cycle}
        split = [i for i in group if group[i] in on_cycle and kind[i] == "light" and group[i] != i]
        if not split:  # only anchors left on the cycle: cannot happen for a valid program
            raise RuntimeError("kernel grouping produced a cycle between heavy units")
        for i in split:
            group[i] = i


def _fused_kernels(
    units: list[Unit], group: dict[int, int], gg: nx.DiGraph
) -> tuple[list[Kernel], dict[int, str]]:
    """One kernel per group, in a topological order of ``gg`` that keeps program order where
    it can; named and labelled after its anchor (``dot_general_3``, op ``"dot_general +
    add, tanh"``), or ``fusion_<n>`` for a group of light units only. Also answers each
    unit's kernel name."""
    first: dict[int, int] = {}
    for i, g in group.items():
        first[g] = min(first.get(g, i), i)
    order = list(nx.lexicographical_topological_sort(gg, key=first.__getitem__))
    by_group: dict[int, list[Unit]] = {}
    for u in units:
        by_group.setdefault(group[u.index], []).append(u)
    kernels = []
    placed: dict[int, str] = {}
    for g in order:
        us = by_group[g]
        anchor = next((u for u in us if u.kind != "light"), us[0])
        fused = list(dict.fromkeys(u.prim for u in us if u is not anchor))
        op = anchor.prim + (f" + {', '.join(fused)}" if fused else "")
        stem = anchor.prim if anchor.kind != "light" else "fusion"
        kernels.append(
            Kernel(
                f"{stem}_{len(kernels)}",
                op,
                [st for u in us for st in u.kernel.statements],
                anchor.kernel.source or next((u.kernel.source for u in us if u.kernel.source), ""),
                anchor.kernel.module,
                anchor.kernel.loops,
            )
        )
        placed.update((u.index, kernels[-1].name) for u in us)
    return kernels, placed


def _mark_on_chip(
    lw: Lowerer,
    units: list[Unit],
    acc: dict[int, tuple[tuple[str, ...], tuple[str, ...]]],
    kind: dict[int, str],
    group: dict[int, int],
) -> None:
    """Rule 4: an intermediate written by light units only, or read only by the groups of the
    heavy units that wrote it, never travels through DRAM: its role becomes kernel-local.
    Program outputs are always written."""
    p = lw.program
    outputs = {p.base(o) for o in p.outputs}
    heavy_groups: dict[str, set[int]] = {}
    light_only: dict[str, bool] = {}
    read_groups: dict[str, set[int]] = {}
    for u in units:
        r, w = acc[u.index]
        for b in w:
            light_only[b] = light_only.get(b, True) and kind[u.index] == "light"
            if kind[u.index] != "light":
                heavy_groups.setdefault(b, set()).add(group[u.index])
        for b in r:
            read_groups.setdefault(b, set()).add(group[u.index])
    for b, only_light in light_only.items():
        decl = p.tensors[b]
        if decl.role not in ("intermediate", "local") or b in outputs:
            continue
        crosses = bool(read_groups.get(b, set()) - heavy_groups.get(b, set()))
        if only_light or not crosses:
            p.tensors[b] = replace(decl, role="local")


def group_units(lw: Lowerer) -> dict[str, tuple[str, ...]]:
    """Replace the program's kernels (one per unit) by fused kernels and mark the storage that
    never travels through DRAM as kernel-local (see the module docstring). Answers the fused
    kernels each equation's units went into, by equation key
    (:mod:`solar.frontend.jax.equation_keys`), in program order."""
    units = [u for u in lw.units if u.kernel.statements]
    if not units:
        lw.program.kernels = []
        return {}
    acc = {u.index: _accesses(lw, u) for u in units}
    deps, consumers = _dependencies(units, acc)
    kind = {u.index: u.kind for u in units}
    loops = {u.index for u in units if u.kind == "loop"}  # looped kernels take nothing in
    group = _consumer_fusion(units, kind, consumers, loops)
    _epilogue_fusion(units, kind, deps, consumers, loops, group)
    gg = _break_cycles(kind, deps, group)
    lw.program.kernels, placed = _fused_kernels(units, group, gg)
    _mark_on_chip(lw, units, acc, kind, group)
    position = {k.name: i for i, k in enumerate(lw.program.kernels)}
    by_key: dict[str, set[str]] = {}
    for u in units:
        for key in (u.key, *sorted(lw.joined.get(u.index, ()))):
            if key:
                by_key.setdefault(key, set()).add(placed[u.index])
    return {key: tuple(sorted(ks, key=position.__getitem__)) for key, ks in by_key.items()}
