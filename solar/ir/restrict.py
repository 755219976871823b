"""A program restricted to some of its kernels: what one compiled kernel (or group) computes.

A compiler's kernel computes a part of the program (issue 33); its bound is the bound of that
part alone: its inputs read from DRAM, its outputs written there, everything else on chip.
:func:`restrict` makes that part a program of its own, so the same lift and the same passes
bound it: every storage tensor the kept kernels read before they write it becomes an input
(weights and constants keep their role), every one they write that a later kernel outside the
group reads — or that the program returns — an output; the rest stay intermediates. Views of
kept storages are kept; nothing else is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from solar.ir.program import Kernel, Program, verify

__all__ = ["restrict", "storages"]

_OUTER = ("input", "weight", "constant")


def storages(program: Program, kernel: Kernel) -> tuple[set[str], set[str]]:
    """The storage tensors ``kernel`` reads and those it writes."""
    base = program.base
    reads = {base(ld.tensor) for st in kernel.statements for ld in st.loads()}
    return reads, {base(st.out.tensor) for st in kernel.statements}


def restrict(
    program: Program,
    kernels: Iterable[str],
    name: str | None = None,
    *,
    private: Iterable[str] = (),
) -> Program:
    """The sub-program of ``program``'s kernels named in ``kernels`` (in program order).
    ``private``: kept kernels whose results the group does not hand on (a value it recomputes
    for itself, which another group writes): what they write is never an output."""
    keep = set(kernels)
    own = set(private)
    missing = keep - {k.name for k in program.kernels}
    if missing:
        raise ValueError(f"{program.name} has no kernel {sorted(missing)[0]!r}")
    base = program.base
    written: set[str] = set()  # storages the kept kernels wrote so far
    read_first: set[str] = set()  # storages they read before writing them
    out_of_group: set[str] = set()  # storages read by kernels outside the group after a write
    produced_by_group: set[str] = set()
    for k in program.kernels:
        reads, writes = storages(program, k)
        if k.name in keep:
            for st in k.statements:  # in order: a value the kernel made itself is not an input
                read_first |= {base(ld.tensor) for ld in st.loads()} - written
                written.add(base(st.out.tensor))
            if k.name not in own:
                produced_by_group |= writes
        else:
            out_of_group |= reads & produced_by_group
            produced_by_group -= writes  # overwritten outside: the group's value is dead
    returned = {base(o) for o in program.outputs}
    handed = {
        base(st.out.tensor) for k in program.kernels if k.name in keep - own for st in k.statements
    }
    needed = (out_of_group | returned) & handed  # what the group hands on: its outputs
    roles = program.roles()
    tensors = {}
    for t, decl in program.tensors.items():
        b = base(t)
        if b not in written and b not in read_first:
            continue
        if decl.view is None:
            role = roles[b] if roles[b] in (*_OUTER, "local") else "intermediate"
            if role == "intermediate" and b in read_first:
                role = "input"  # made before the group: read from DRAM
            decl = dataclasses.replace(decl, role=role)
        tensors[t] = decl
    outputs = [t for t, d in tensors.items() if d.view is None and t in needed]
    sub = Program(
        name=name or program.name,
        tensors=tensors,
        kernels=[k for k in program.kernels if k.name in keep],
        inputs=[t for t, d in tensors.items() if d.view is None and d.role in ("input", "weight")],
        outputs=list(dict.fromkeys(outputs)),
        constants={t: v for t, v in program.constants.items() if t in tensors},
    )
    verify(sub)
    return sub
