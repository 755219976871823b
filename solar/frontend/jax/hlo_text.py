"""Read XLA's optimized HLO module text (``compiled.as_text()``) into computations and
instructions, and list the instructions that launch kernels, in execution order.

Only what the compiled-program mapping needs is read: each instruction's name, opcode, the
computations it calls (a fusion's body, a while loop's condition and body, a conditional's
branches) and the ``op_name`` of its metadata (where :mod:`solar.frontend.jax.equation_keys`
put the equation's key). A scheduled module (``is_scheduled=true``, what ``compile()`` gives)
prints each computation's instructions in execution order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: opcodes that launch no kernel: values that exist already, or only rename them
NO_LAUNCH = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "add-dependency",
        "opt-barrier",
        "partition-id",
        "replica-id",
        "domain",
    }
)
#: opcodes whose called computations run as the program's own steps (their kernels launch
#: from the host, one per step), not inside one kernel
CONTROL = frozenset({"while", "conditional", "call", "async-start"})

_HEADER = re.compile(r"^(ENTRY\s+)?%?(?P<name>[^\s(]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=]+)\s*=\s*.*?\s(?P<opcode>[a-z][\w\-]*)\((?P<rest>.*)$"
)
_CALLS = re.compile(
    r"\b(?P<attr>calls|to_apply|body|condition|branch_computations|called_computations)="
    r"(?P<value>\{[^}]*\}|%?[\w.\-]+)"
)
_OP_NAME = re.compile(r'\bop_name="(?P<op_name>[^"]*)"')


@dataclass(frozen=True)
class Instruction:
    """One HLO instruction: ``calls`` holds the computations it calls by attribute
    (``("calls", "fused_computation")``, ``("body", "region_0.2")``)."""

    name: str
    opcode: str
    calls: tuple[tuple[str, str], ...]
    op_name: str


@dataclass(frozen=True)
class HloModuleText:
    """The computations of a module (each its instructions in printed order) and the name of
    the entry computation."""

    computations: dict[str, tuple[Instruction, ...]]
    entry: str

    def launches(self) -> list[Instruction]:
        """The instructions that launch kernels, in execution order: the entry computation's,
        with a control instruction's (``while``, ``conditional``, ``call``) called
        computations' in its place."""
        out: list[Instruction] = []
        self._launches(self.entry, out, set())
        return out

    def _launches(self, comp: str, out: list[Instruction], seen: set[str]) -> None:
        if comp in seen:  # (a module never recurses; guard against a misread one)
            return
        seen = seen | {comp}
        for ins in self.computations.get(comp, ()):
            if ins.opcode in NO_LAUNCH or ins.opcode.endswith("-done"):
                continue
            if ins.opcode in CONTROL:
                for _, called in ins.calls:
                    self._launches(called, out, seen)
                continue
            out.append(ins)

    def inside(self, ins: Instruction) -> list[Instruction]:
        """The instructions a kernel runs: a fusion's fused computation (nested fusions
        included; a reduction's combiner is not an operation of its own), else itself."""
        if ins.opcode != "fusion":
            return [ins]
        out: list[Instruction] = []
        for attr, called in ins.calls:
            if attr != "calls":
                continue
            for sub in self.computations.get(called, ()):
                if sub.opcode in ("parameter", "constant"):
                    continue
                out.extend(self.inside(sub) if sub.opcode == "fusion" else [sub])
        return out


def parse_hlo(text: str) -> HloModuleText:
    """The computations of an HLO module's text (``compiled.as_text()``); a ValueError if it
    has no entry computation."""
    computations: dict[str, tuple[Instruction, ...]] = {}
    entry = ""
    current: str | None = None
    body: list[Instruction] = []
    for line in text.splitlines():
        if current is None:
            m = _HEADER.match(line)
            if m is not None:
                current, body = m.group("name"), []
                if m.group(1):
                    entry = current
            continue
        if line.strip() == "}":
            computations[current] = tuple(body)
            current = None
            continue
        m = _INSTR.match(line)
        if m is None:
            continue
        rest = m.group("rest")
        calls = []
        for c in _CALLS.finditer(rest):
            for called in c.group("value").strip("{}").split(","):
                if called.strip():
                    calls.append((c.group("attr"), called.strip().lstrip("%")))
        op = _OP_NAME.search(rest)
        body.append(
            Instruction(m.group("name"), m.group("opcode"), tuple(calls), op.group(1) if op else "")
        )
    if not entry:
        raise ValueError("HLO text has no ENTRY computation: not an HLO module's text")
    return HloModuleText(computations, entry)
