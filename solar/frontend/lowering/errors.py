"""The errors of lowering, shared by the frontends: an operator without a lowering (each
frontend subclasses :class:`UnsupportedOperatorError` only to say how to add one), and a dtype
the IR cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from solar.ir.dtypes import ITEMSIZE

NO_DEFINITION = "has no loop-nest definition"


@dataclass
class MissingOperator:
    """One operator a program needs and the frontend cannot lower: why, how many nodes of the
    traced graph call it, and the source line of each (in graph order)."""

    op: str
    reason: str
    sources: list[str] = field(default_factory=list)
    count: int = 1

    def line(self, all_sources: bool = False) -> str:
        where = [s for s in self.sources if s]
        shown = where if all_sources else where[:1]
        at = f", at {', '.join(shown)}" if shown else ""
        more = len(where) - len(shown)
        rest = f" and {more} more: --debug lists them" if more else ""
        return f"{self.op} ({self.count}x{at}{rest}): {self.reason}"


class UnsupportedOperatorError(ValueError):
    """An operator the frontend has no loop-nest definition for (or cannot express).

    ``missing`` lists every such operator of the program once (:class:`MissingOperator`): a
    frontend that goes on past each one to collect them all raises :meth:`collected` at the
    end. A frontend's subclass sets ``label`` (how the message names the operator) and
    ``how_to_add`` (the decorator that registers one, with ``{op}``, and where lowerings live).
    """

    label: ClassVar[str] = ""
    how_to_add: ClassVar[str] = "see solar/frontend/"

    def __init__(self, op: object, source: str = "", reason: str = "") -> None:
        self.op = self.op_name(op)
        self.source = source
        self.reason = reason or NO_DEFINITION
        self.missing: list[MissingOperator] = [MissingOperator(self.op, self.reason, [source])]
        where = f" at {source}" if source else ""
        hint = self.how_to_add.format(op=self.op)
        message = reason or f"{NO_DEFINITION}; register one with {hint}"
        super().__init__(f"{self.label}{self.op}{where} {message}")

    @staticmethod
    def op_name(op: object) -> str:
        """How the frontend names ``op`` (``aten.add.Tensor``, ``dot_general``)."""
        return str(op)

    @classmethod
    def collected(cls, missing: list[MissingOperator]) -> UnsupportedOperatorError:
        """One error listing every operator of ``missing`` (at least two)."""
        err = cls(missing[0].op, next(iter(missing[0].sources), ""), missing[0].reason)
        err.missing = list(missing)
        ValueError.__init__(err, err.report())
        return err

    def report(self, all_sources: bool = False) -> str:
        """Every missing operator, one line each (``all_sources``: every source line)."""
        if len(self.missing) == 1 and not all_sources:
            return str(self.args[0]) if self.args else ""
        n = len(self.missing)
        head = (
            f"{n} operators cannot be lowered (tracing went on past each to list them all; no "
            f"bound is computed until each is lowered: register one with "
            f"{self.how_to_add.format(op='<op>')}):"
        )
        return "\n".join([head, *(f"  {m.line(all_sources)}" for m in self.missing)])


class UnsupportedDtypeError(ValueError):
    """A value whose dtype (complex32, uint16, PRNG keys, ...) the IR cannot express."""


def expressible(name: str | None, what: str, shown: object = None) -> str:
    """``name`` when it is an IR dtype; else an :class:`UnsupportedDtypeError` naming ``what``
    and its dtype as the framework shows it (``shown``, default ``name``)."""
    if name is None or name not in ITEMSIZE:
        raise UnsupportedDtypeError(
            f"{what} has dtype {name if shown is None else shown}, which the IR cannot express "
            f"(supported: {', '.join(ITEMSIZE)})"
        )
    return name
