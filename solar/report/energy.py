"""Text views of the energy floor (:mod:`solar.backend.energy`): a bound's table of joules per
level with each term, and the energy cell of a comparison. Nothing is printed for a bound
without a floor (its spec has no measured energy costs): ``Bound.energy.reason`` says why.
"""

from __future__ import annotations

from rich.table import Table

from solar.backend.result import Bound
from solar.fmt import fmt_bytes, fmt_time

_LABEL = {"unfused": "unfused", "fused": "fused", "cache_aware": "cache-aware"}


def fmt_joules(j: float | None) -> str:
    """``1.234 J``, ``56.7 mJ``, ``890 uJ``, ...; ``-`` for none."""
    if j is None:
        return "-"
    for scale, unit in ((1.0, "J"), (1e-3, "mJ"), (1e-6, "uJ"), (1e-9, "nJ")):
        if abs(j) >= scale:
            return f"{j / scale:.4g} {unit}"
    return f"{j * 1e12:.4g} pJ" if j else "0 J"


def energy_renderables(b: Bound) -> list:
    """The energy floor's table (level, joules, the work, DRAM and static terms) and where its
    costs come from; nothing without a floor."""
    e = b.energy
    if not e.available:
        return []
    t = Table(title="energy floor (at the energy efficiency of this GPU's best measured kernels)")
    for col in ("level", "energy", "work", "DRAM", "static", "average power"):
        t.add_column(col, justify="left" if col == "level" else "right")
    for lv in e.levels:
        ops = sum(x.joules for x in lv.terms if x.kind == "op")
        dram = next(x for x in lv.terms if x.kind == "dram")
        static = next(x for x in lv.terms if x.kind == "static")
        power = f"{lv.joules / static.amount:.4g} W" if static.amount else "-"
        t.add_row(
            _LABEL.get(lv.level, lv.level),
            fmt_joules(lv.joules),
            fmt_joules(ops),
            f"{fmt_joules(dram.joules)} ({fmt_bytes(dram.amount)})",
            f"{fmt_joules(static.joules)} ({fmt_time(static.amount)})",
            power,
        )
    first = e.levels[0]
    work = ", ".join(
        f"{x.what} {x.amount:.4g} ops x {x.per * 1e12:.3g} pJ = {fmt_joules(x.joules)}"
        for x in first.terms
        if x.kind == "op"
    )
    lines = [f"energy per unit of work: {work or 'no work'}"]
    if e.uncharged:
        lines.append(f"no measured energy cost, charged 0 J: {', '.join(e.uncharged)}")
    lines.append(f"energy costs measured by solar calibrate --energy on {e.measured_on}")
    return [t, *lines]


def energy_lines(b: Bound) -> list[str]:
    """One line per level for the HTML view (nothing without a floor)."""
    e = b.energy
    if not e.available:
        return []
    levels = ", ".join(
        f"{_LABEL.get(lv.level, lv.level)} {fmt_joules(lv.joules)}" for lv in e.levels
    )
    return [
        f"energy floor (at the energy efficiency of this GPU's best measured kernels): {levels}; "
        f"costs measured by solar calibrate --energy on {e.measured_on}"
    ]


def energy_cell(b: Bound, level: str = "cache_aware") -> str:
    """A comparison's energy cell: the floor at ``level``, or ``-`` without one."""
    return fmt_joules(b.energy.at(level))
