"""Print programs as loop nests, the way docs/ir.md shows them."""

from __future__ import annotations

from solar.ir.program import Extern, Kernel, Program, Scan, Statement, StatementVisitor

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


def format_kernel(k: Kernel) -> str:
    where = f"   # {k.op}" + (f" at {k.source}" if k.source else "")
    if k.phase:  # a training step's kernel: its phase and what it belongs to
        where += f"; {k.phase}" + (f": {k.origin}" if k.origin else "")
    body = [format_statement(st) for st in k.statements]
    if k.loops:
        seq = ", ".join(f"{d.name}<{d.extent}" for d in k.loops)
        body = [f"  for {seq} (sequential):"] + ["  " + ln for b in body for ln in b.split("\n")]
    return "\n".join([f"kernel {k.name}:{where}", *body])


def format_program(p: Program) -> str:
    lines = [f"program {p.name}:"]
    for name, t in p.tensors.items():
        if t.view:
            v = t.view
            cast = f" {t.dtype}" if t.dtype != p.tensors[v.base].dtype else ""  # reinterpreted
            lines.append(
                f"  view   {name}{list(t.shape)}{cast} = as_strided({v.base}, "
                f"stride={list(v.strides)}, offset={v.offset})"
            )
        elif t.role != "intermediate" or name in p.outputs:
            lines.append(f"  {p.role(name):<6} {name}{list(t.shape)} {t.dtype}")
    lines.append(f"  outputs: {', '.join(p.outputs)}")
    return "\n".join(lines + [format_kernel(k) for k in p.kernels])
