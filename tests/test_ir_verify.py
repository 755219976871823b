"""``verify``: a malformed program is rejected with an error that names its kernel, whether its
statements came through :class:`ProgramBuilder` or were built directly (as a frontend might)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from solar.graph.lift import lift
from solar.ir.affine import Affine
from solar.ir.program import ProgramBuilder, verify
from solar.ir.scalar import Load, call


def L(t: str, *dims: str) -> Load:  # noqa: N802
    return Load(t, tuple(Affine.of(d) for d in dims))


def program_with(expr_of):
    b = ProgramBuilder("p")
    x = b.tensor("x", (4,), "float32", "input")
    y = b.tensor("y", (4,), "float32", "output")
    b.begin_kernel("aten.exp.default", name="exp_0")
    b.statement([("i", 4)], (y, ("i",)), expr_of(x))
    b.program.outputs.append(y)
    return b.program


@pytest.mark.parametrize(
    "expr_of, message",
    [
        (lambda x: call("no_such_op", L(x, "i"), L(x, "i"), L(x, "i")), "unknown scalar operator"),
        (lambda x: call("exp", L(x, "i"), L(x, "i")), "exp takes 1 arguments, got 2"),
        (lambda x: call("add", L(x, "i")), "add takes 2 arguments, got 1"),
    ],
)
def test_builder_rejects_bad_calls_naming_the_kernel(expr_of, message):
    with pytest.raises(ValueError, match=f"^kernel exp_0: .*{message}"):
        program_with(expr_of)


def test_verify_catches_statements_built_without_the_builder():
    p = program_with(lambda x: call("exp", L(x, "i")))
    verify(p)  # well formed
    lift(p)
    (k,) = p.kernels
    k.statements[0] = replace(k.statements[0], expr=call("exp", L("x", "i"), L("x", "i")))
    with pytest.raises(ValueError, match="^kernel exp_0: exp takes 1 arguments, got 2"):
        verify(p)
    with pytest.raises(ValueError, match="^kernel exp_0: exp takes 1 arguments"):
        lift(p)  # lifting verifies first
    k.statements[0] = replace(k.statements[0], expr=L("x", "i", "i"))
    with pytest.raises(ValueError, match="^kernel exp_0: .*has 2 indices; x has shape"):
        verify(p)
