"""The text of a statement as a loop nest, the way docs/ir.md shows them (a program's text,
its declarations and kernels around these, is :func:`solar.ir.program.format_program`)."""

from __future__ import annotations

from solar.ir.statement_kinds import Extern, Scan, Statement, StatementVisitor

_ASSIGN = {
    None: "=",
    "sum": "+=",
    "prod": "*=",
    "max": "max=",
    "min": "min=",
    "logsumexp": "logaddexp=",
}


class _Assignment(StatementVisitor[tuple[str, str, list[str]]]):
    """The assignment operator, right-hand side and kind-specific notes of a statement."""

    def nest(self, st: Statement) -> tuple[str, str, list[str]]:
        op = _ASSIGN[st.reduce] if st.reduce or not st.accumulate else "+="
        tail = []
        if st.reduce and not st.accumulate:
            tail.append(
                "init identity at the positions hit" if st.out.indirect else "init identity"
            )
        return op, str(st.expr), tail

    def scan(self, st: Scan) -> tuple[str, str, list[str]]:
        return "=", f"scan_{st.reduce}[{st.along}]({st.expr})", []

    def extern(self, st: Extern) -> tuple[str, str, list[str]]:
        attrs = "".join(f", {k}={v}" for k, v in st.attrs)
        row = ",".join(d.name for d in st.reduction_dims)
        return "=", f"{st.routine}[{row}]({st.expr}{attrs})", []


def format_statement(st: Statement) -> str:
    par = ", ".join(f"{d.name}<{d.extent}" for d in st.parallel_dims)
    red = ", ".join(f"{d.name}<{d.extent}" for d in st.reduction_dims)
    head = f"for {par} | {red}:" if red else f"for {par}:" if par else "do:"
    op, rhs, notes = _Assignment().visit(st)
    tail = []
    if st.guards:
        tail.append("where " + ", ".join(map(str, st.guards)))
    tail += notes
    if st.precision:
        tail.append(f"precision {st.precision}")
    line = f"  {st.out} {op} {rhs}"
    if tail:
        line += "   " + "; ".join(tail)
    return f"  {head}\n  {line}"
