"""Statement kinds are distinct frozen types (issue 23): the builder makes the kind its keywords
ask for, a statement cannot be changed once built, each pass handles each kind in one visitor
method (a pass missing one fails naming itself), and the kind is part of a kernel's structure
key."""

from __future__ import annotations

import dataclasses

import pytest

from solar.graph.cache import kernel_key
from solar.ir import Extern, ProgramBuilder, Scan, Statement, StatementVisitor
from solar.ir.affine import affines
from solar.ir.cost import statement_kind
from solar.ir.printer import format_statement
from solar.ir.program import Access, new_statement
from solar.ir.scalar import Load


def L(t, *index):  # noqa: N802
    return Load(t, affines(index))


def _program():
    b = ProgramBuilder("kinds")
    x = b.tensor("x", (2, 4), "float32", "input")
    s, o, c = (b.tensor(n, (2, 4), "float32", "output") for n in ("s", "o", "c"))
    b.begin_kernel("k", name="k")
    plain = b.statement([("b", 2), ("i", 4)], (c, ("b", "i")), L(x, "b", "i"))
    scan = b.statement(
        [("b", 2), ("i", 4)], (s, ("b", "i")), L(x, "b", "i"), reduce="sum", scan="i"
    )
    ext = b.statement(
        [("b", 2), ("p", 4), ("r", 4, True)],
        (o, ("b", "p")),
        L(x, "b", "r"),
        extern="topk.values",
        extern_attrs={"largest": True, "k": 4},
    )
    return b.program, plain, scan, ext


def test_the_builder_makes_the_kind_asked_for():
    _, plain, scan, ext = _program()
    assert type(plain) is Statement and plain.kind == "nest"
    assert type(scan) is Scan and scan.along == "i" and scan.kind == "scan"
    assert type(ext) is Extern and ext.routine == "topk.values"
    assert ext.attrs == (("k", 4), ("largest", True))  # sorted by name
    assert [statement_kind(st) for st in (plain, scan, ext)] == ["copy", "scan", "extern"]
    assert "scan_sum[i](x[b,i])" in format_statement(scan)
    assert "topk.values[r](x[b,r], k=4, largest=True)" in format_statement(ext)


def test_statements_are_frozen_and_replace_keeps_the_kind():
    _, plain, scan, _ = _program()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.accumulate = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        scan.along = "b"  # type: ignore[misc]
    moved = dataclasses.replace(scan, guards=())
    assert type(moved) is Scan and moved.along == "i"


def test_a_scan_cannot_be_an_extern_routine():
    with pytest.raises(ValueError, match="a scan cannot be an extern routine"):
        new_statement((), Access("o", ()), L("x"), scan="i", extern="sort.values")
    with pytest.raises(ValueError, match="extern_attrs given without an extern routine"):
        new_statement((), Access("o", ()), L("x"), extern_attrs={"k": 1})


def test_a_pass_missing_a_kind_fails_naming_itself():
    class OnlyNests(StatementVisitor[str]):
        def nest(self, st: Statement) -> str:
            return "nest"

    _, plain, scan, ext = _program()
    assert OnlyNests().visit(plain) == "nest"
    with pytest.raises(NotImplementedError, match="OnlyNests does not handle scan statements"):
        OnlyNests().visit(scan)
    with pytest.raises(NotImplementedError, match="OnlyNests does not handle extern statements"):
        OnlyNests().visit(ext)


def test_the_kind_enters_the_structure_key():
    """A scan and a plain copy over the same nest, output and load have different keys."""
    keys = []
    for scan in ("i", None):
        b = ProgramBuilder("p")
        x = b.tensor("x", (4,), "float32", "input")
        y = b.tensor("y", (4,), "float32", "output")
        k = b.begin_kernel("k")
        b.statement([("i", 4)], (y, ("i",)), L(x, "i"), reduce="sum" if scan else None, scan=scan)
        keys.append(kernel_key(b.program, k))
    assert keys[0] is not None and keys[1] is not None
    assert keys[0][0] != keys[1][0]
