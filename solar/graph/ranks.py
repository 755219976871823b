"""Consistent rank names across producer/consumer edges (Timeloop/TACO style).

Every loop dim of every statement and every dim of every tensor is a node of a union-find;
a loop dim that indexes a tensor dim directly (index == dim) is the same rank, and a view dim
is the same rank as the base dim it strides over with the same extent. Each class gets a
letter in order of first appearance, so ``C = A @ B`` lifts to ``ab,bc->ac`` whatever the
frontend called its loop variables.

With symbolic sizes two extents may merely coincide at the traced point (a slice of
``TOKENS`` rows of a 512-row table, traced at 512). Deciding that equality would pin the size
(an ``Eq`` guard); instead the ranks are assigned twice, such coincidences merged and not: where
both give the same names (the usual case: nothing else reads the table's full dim), the names
are the same at every size and nothing is decided; else the equality is decided as a number.
"""

from __future__ import annotations

import itertools
import string

from solar.algebra.size import Size, expr_of
from solar.ir.program import Dim, Program, Statement, with_loops


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[tuple, tuple] = {}

    def find(self, x: tuple) -> tuple:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: tuple, b: tuple) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _letters():
    """a..z, then a1..z1, a2..z2, ...: as many rank names as a program needs."""
    for n in itertools.count():
        for ch in string.ascii_lowercase:
            yield ch if n == 0 else f"{ch}{n}"


class _Extents:
    """Equality of two extents, by expression: a coincidence at the traced point (equal
    values, different expressions) is answered ``merge`` and noted, not decided."""

    def __init__(self, merge: bool) -> None:
        self.merge = merge
        self.coincident: list[tuple[int, int]] = []

    def same(self, a: int, b: int) -> bool:
        if not isinstance(a, Size) and not isinstance(b, Size):
            return a == b
        if expr_of(a) == expr_of(b):
            return True
        if _hint(a) != _hint(b):
            return a == b  # unequal here: the guard (Ne) says where the names hold
        self.coincident.append((a, b))
        return self.merge


def _hint(x: int) -> int:
    return x.hint if isinstance(x, Size) else x


def _base_dim_of_view_dim(program: Program, name: str, d: int, extents: _Extents) -> int | None:
    decl = program.tensors[name]
    base = program.tensors[decl.view.base]
    stride = decl.view.strides[d] * decl.itemsize  # in bytes: a view may reinterpret its base
    contiguous = [base.itemsize] * len(base.shape)
    for i in range(len(base.shape) - 2, -1, -1):
        contiguous[i] = contiguous[i + 1] * base.shape[i + 1]
    for j, (size, s) in enumerate(zip(base.shape, contiguous)):
        if s == stride and extents.same(size, decl.shape[d]) and size > 1:
            return j
    return None


def assign_ranks(program: Program) -> dict[tuple, str]:
    """Map ``("stmt", kernel_idx, stmt_idx, dim)`` to rank names.

    A kernel's sequential loop dims are dims of each of its statements (keyed like the
    others) and one rank across the kernel. Indirect index entries name no rank. Extents that
    coincide only at the traced point: see the module docstring."""
    merged = _Extents(merge=True)
    out = _assign(program, merged)
    if merged.coincident and _assign(program, _Extents(merge=False)) != out:
        for a, b in merged.coincident:  # the names depend on it: decided (pins the size)
            _decide(a, b)
    return out


def _decide(a: int, b: int) -> bool:
    """``a == b`` as a decision on sizes: a guard records it."""
    return a == b


def _assign(program: Program, extents: _Extents) -> dict[tuple, str]:
    """:func:`assign_ranks` with extents compared by ``extents``."""
    uf = _UnionFind()
    order: list[tuple] = []

    def tensor_key(name: str, axis: int) -> tuple:
        decl = program.tensors[name]
        if decl.view is None:
            return ("tensor", name, axis)
        j = _base_dim_of_view_dim(program, name, axis, extents)
        return ("tensor", decl.view.base, j) if j is not None else ("view", name, axis)

    def visit(kernel_idx: int, stmt_idx: int, st: Statement, loops: tuple[Dim, ...]) -> None:
        st = with_loops(st, loops)
        for dim in st.dims:
            key = ("stmt", kernel_idx, stmt_idx, dim.name)
            uf.find(key)
            order.append(key)
        for dim in loops:
            uf.union(("stmt", kernel_idx, stmt_idx, dim.name), ("loop", kernel_idx, dim.name))
        accesses = [(st.out.tensor, st.out.index)] + [(ld.tensor, ld.index) for ld in st.loads()]
        for tensor, index in accesses:
            for axis, e in enumerate(index):
                d = e.single_dim
                if d is not None and extents.same(
                    program.tensors[tensor].shape[axis], st.extents[d]
                ):
                    uf.union(("stmt", kernel_idx, stmt_idx, d), tensor_key(tensor, axis))

    for ki, k in enumerate(program.kernels):
        for si, st in enumerate(k.statements):
            visit(ki, si, st, k.loops)
    names: dict[tuple, str] = {}
    letters = _letters()
    out: dict[tuple, str] = {}
    for key in order:
        root = uf.find(key)
        if root not in names:
            names[root] = next(letters)
        out[key] = names[root]
    return out
