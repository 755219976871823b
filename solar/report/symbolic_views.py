"""Views of a symbolic bound (:class:`~solar.symbolic.symbolic_bound.SymbolicBound`).

- :func:`symbolic_text` — the bound at the traced sizes (as every Bound prints), then its
  formulas in the size names (each level's seconds, the work per op class, DRAM bytes, peak
  memory, launches, critical path; sympy's pretty printer), the crossovers along each size for
  each level, the sizes where the formulas hold and the sizes they are specialized at;
- :func:`symbolic_html` — the same for a notebook, the formulas typeset (``$...$``, MathJax);
- :func:`symbolic_curve` — the roofline of a symbolic bound: each level's bound against one
  size over a whole range (from the formulas, :meth:`SymbolicBound.values`), the crossovers
  marked;
- :func:`symbolic_dict` — ``to_dict()`` with the crossovers and the spans (``solar bound
  --symbolic --json``).

Crossovers and spans are along one size with the others at their traced values, searched
from 1 to :data:`REACH` times the traced value, cut to the sizes the trace counts exactly.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import sympy

from solar.report.html import bound_html
from solar.report.style import COLORS
from solar.report.table import bound_text

REACH = 64  # crossovers are searched up to this many times a size's traced value
SHOWN = 8  # a formula of more pieces prints the traced one alone
TOP = 1 << 40  # spans reaching this are unbounded above
LEVELS = ("unfused", "fused", "cache_aware")
#: what each formula is, in the order printed
QUANTITY_WORDS = {
    "unfused": "unfused (s)",
    "fused": "fused (s)",
    "cache_aware": "cache-aware (s)",
    "bytes_unfused": "DRAM bytes, unfused",
    "bytes_fused": "DRAM bytes, fused",
    "bytes_cache_aware": "DRAM bytes, cache-aware",
    "peak_memory": "peak memory (bytes)",
    "launches": "kernel launches",
    "critical_path": "critical path (s)",
}
TERM_WORDS = {
    "dram": "DRAM",
    "tensor": "tensor cores",
    "fma": "CUDA cores",
    "sfu": "SFUs",
    "fp64": "FP64 units",
    "int": "integer units",
    "latency": "latency",
    "none": "nothing",
}


@dataclass
class Summary:
    """What the views show of a symbolic bound, computed once."""

    sizes: dict[str, int]  # size -> traced value
    formulas: dict[str, sympy.Expr]  # quantity -> its Piecewise over the pieces met
    flops: dict[str, sympy.Expr]  # op class -> expression
    crossovers: dict[str, dict[str, list[tuple[int, str, str]]]]  # size -> level -> changes
    spans: dict[str, tuple[int, int]]  # size -> where the counts are exact (others traced)
    piece: dict[str, tuple[int, int]]  # size -> the traced piece's span (others traced)
    specializations: dict[str, str]  # size -> where it was pinned (fixed_sizes)
    guards: int  # how many guards the count region has
    searched: dict[str, tuple[int, int]]  # size -> where its crossovers were searched
    broken: str = ""  # a guard false at the traced sizes (a fault in solar): nothing holds


_PERIOD = 720720  # lcm(1, ..., 16): the traced value plus it is in the same residue classes


def fixed_sizes(b) -> dict[str, str]:
    """The sizes a guard pins to (or near) their traced value, and where: an equality guard
    that holds at the traced sizes but at none of a few far ones along that size (half, 2x,
    3x, and the traced value plus a multiple of every modulus up to 16; the other sizes as
    traced): ``Eq(T, 4096)``, or ``Eq(floor(W/32), 128)`` (W a plain number inside the
    program, divided). A divisibility (``Mod(Q, K) = 0``), a residue class (a strided conv's
    border, periodic in its input) or an identity the guard's form hides (``floor(1/T) = 0``)
    holds at some of those: not a specialization."""
    base = {sympy.Symbol(k, integer=True, positive=True): v for k, v in b.sizes.items()}
    out: dict[str, str] = {}
    for region in (b.counts_region, b.piece_region):
        for g in region.guards if region is not None else ():
            r = g.relation
            if not (isinstance(r, sympy.Eq) and r.rhs.is_number and not r.lhs.is_number):
                continue
            one = type(region)(region.symbols, (g,))
            for s in sorted(r.free_symbols & set(base), key=str):
                x = base[s]
                others = [v for v in (x // 2, 2 * x, 3 * x, x + _PERIOD) if v >= 1 and v != x]
                if not any(region_holds(one, {**base, s: v}) for v in others):
                    out.setdefault(str(s), g.where or "(unknown place)")
    return out


def region_holds(region, point) -> bool:
    """``region.holds(point)``, false where a guard cannot be evaluated (a division by a
    size expression that is 0 there)."""
    try:
        return region.holds(point)
    except ZeroDivisionError:
        return False


def summarize(b, reach: int = REACH) -> Summary:
    """The formulas, crossovers and spans of ``b`` along each of its sizes (searched up to
    ``reach`` times each size's traced value)."""
    point = {sympy.Symbol(k, integer=True, positive=True): v for k, v in b.sizes.items()}
    spans, piece, crossovers, reach_hi = {}, {}, {}, {}
    failed = b.counts_region.failing(point) if b.counts_region else None
    for name in b.sizes if failed is None else ():
        s = sympy.Symbol(name, integer=True, positive=True)
        spans[name] = _interval(b.counts_region, s, point, TOP)
        lo_p, hi_p = _interval(b.piece_region, s, point, TOP)
        piece[name] = (max(lo_p, spans[name][0]), min(hi_p, spans[name][1]))
        reach_hi[name] = min(spans[name][1], reach * b.sizes[name])
        crossovers[name] = {lv: b.crossovers(name, lv, hi=reach_hi[name]) for lv in LEVELS}
    return Summary(
        sizes=dict(b.sizes),
        formulas={q: b.formula(q) for q in QUANTITY_WORDS},
        flops=b.flops_formula(),
        crossovers=crossovers,
        spans=spans,
        piece=piece,
        specializations=fixed_sizes(b),
        guards=len(b.counts_region.guards) if b.counts_region else 0,
        searched={n: (spans[n][0], reach_hi[n]) for n in spans},
        broken=str(failed.relation) if failed is not None else "",
    )


def _interval(region, s, point, hi: int) -> tuple[int, int]:
    if region is None:
        return 1, hi
    return region.interval(s, point, hi=hi)


# -- text ---------------------------------------------------------------------------------


def display(e: sympy.Expr) -> sympy.Expr:
    """``e`` with its floating-point coefficients to 4 significant digits (for reading)."""
    return e.xreplace(
        {f: sympy.Integer(0) if f.is_zero else sympy.Float(f, 4) for f in e.atoms(sympy.Float)}
    )


def shown(e: sympy.Expr, sizes: dict[str, int], most: int = SHOWN) -> tuple[sympy.Expr, int, int]:
    """A formula as printed: whole up to ``most`` pieces, else the piece holding the traced
    sizes alone, each piece's condition cut to its bounds on sizes and on products of sizes;
    with how many pieces and how many other relations were left out."""
    if not isinstance(e, sympy.Piecewise):
        return e, 0, 0
    args = list(e.args)
    if len(args) > most:
        point = {sympy.Symbol(k, integer=True, positive=True): v for k, v in sizes.items()}
        args = next(([a] for a in args if a.cond.xreplace(point) is sympy.true), args[:1])
    cut, other = [], 0
    for a in args:
        parts = sympy.And.make_args(a.cond)
        simple = [r for r in parts if _bound_on_sizes(r)]
        other = max(other, len(parts) - len(simple))
        cond = sympy.And(*simple, evaluate=False) if len(simple) > 1 else (simple or [True])[0]
        cut.append((a.expr, cond))
    return sympy.Piecewise(*cut, evaluate=False), len(e.args) - len(args), other


def _bound_on_sizes(r: sympy.Basic) -> bool:
    """``size >= 3``, ``B*S**2 <= 1000``: a number against a product of sizes."""
    if not isinstance(r, sympy.core.relational.Relational):
        return False
    side = r.lhs if r.rhs.is_number else r.rhs if r.lhs.is_number else None
    return side is not None and all(
        b.is_Symbol and e.is_number for b, e in side.as_powers_dict().items()
    )


def pretty(label: str, e: sympy.Expr, indent: str = "  ") -> list[str]:
    """``label = e`` in sympy's 2-D pretty print, one list item per line."""
    block = sympy.pretty(display(e), use_unicode=True, wrap_line=False).splitlines()
    base = _baseline(display(e), len(block))
    pad = " " * (len(label) + 3)
    return [indent + (f"{label} = " if i == base else pad) + line for i, line in enumerate(block)]


def _baseline(e: sympy.Expr, height: int) -> int:
    from sympy.printing.pretty.pretty import PrettyPrinter

    try:
        return PrettyPrinter({"use_unicode": True, "wrap_line": False})._print(e).baseline
    except Exception:  # a printer without a baseline: the last line
        return height - 1


def _range(lo: int, hi: int, name: str) -> str:
    if hi >= TOP:
        return f"{name} ≥ {lo}" if lo > 1 else f"every {name}"
    return f"{lo} ≤ {name} ≤ {hi}"


def crossover_text(name: str, level: str, changes, span: tuple[int, int]) -> str:
    """``fused: latency below SEQ=410, DRAM from 410, tensor cores from 639``."""
    label = level.replace("_", "-")
    if not changes:
        return f"{label}: no change for {_range(*span, name)}"
    first = changes[0]
    parts = [f"{TERM_WORDS.get(first[1], first[1])} below {name}={first[0]}"]
    parts += [f"{TERM_WORDS.get(to, to)} from {x}" for x, _, to in changes]
    return f"{label}: " + ", ".join(parts)


def _short(where: str) -> str:
    """A guard's place with each file path cut to its name."""
    return re.sub(r"(?:[^\s:()]*/)([^/\s:()]+\.py)", r"\1", where)


def _why(where: str) -> str:
    """Why a size is fixed, from its guard's place."""
    where = _short(where).strip()
    if "used as a plain number" in where or "structure follows" in where:
        return where
    if where == "the PyTorch trace":
        return "decided by PyTorch's shape checks while tracing"
    if not where or where == "(unknown place)":
        return "decided inside solar's analysis; SOLAR_SYMBOLIC_DEBUG=1 names the line"
    if re.search(r"\.py:\d+\)?$", where):
        return f"used as a plain number at {where}"
    return f"decided {where}"


def specialization_lines(s: Summary) -> list[str]:
    return [
        f"{n} is fixed at {s.sizes[n]} ({_why(w)})"
        for n, w in s.specializations.items()
        if n in s.sizes
    ]


def symbolic_lines(b, s: Summary | None = None) -> list[str]:
    """The symbolic part of the text view."""
    s = s or summarize(b)
    at = ", ".join(f"{k}={v}" for k, v in s.sizes.items())
    out = [f"formulas in {', '.join(s.sizes)} (traced at {at}; times in seconds):"]
    for q, word in QUANTITY_WORDS.items():
        e, pieces, relations = shown(s.formulas[q], s.sizes)
        out += pretty(word, e)
        left = [f"{pieces} more pieces met along the walks"] if pieces else []
        left += [f"{relations} more relations of the trace on each piece"] if relations else []
        if left:
            out.append(f"    (and {', '.join(left)}: b.formula({q!r}) or --json has them)")
    for cls, e in s.flops.items():
        out += pretty(f"work {cls}", e)
    if s.broken:
        out.append(
            f"these formulas are claimed nowhere: the guard {s.broken} is false at the traced "
            "sizes (a fault in solar's guards; bound other sizes without --symbolic)"
        )
        return out
    out += where_lines(s)
    out.append(f"crossovers on {b.hw} (the others as traced):")
    for n in s.sizes:
        for lv in LEVELS:
            out.append(f"  along {n}: " + crossover_text(n, lv, s.crossovers[n][lv], s.searched[n]))
    special = specialization_lines(s)
    if special:
        out.append("specialized (the formulas claim only that value):")
        out += [f"  {line}" for line in special]
    return out


def where_lines(s: Summary) -> list[str]:
    """Where the formulas are claimed: each on the sizes printed with it, the pieces searched
    along each size; the count region."""
    searched = ", ".join(f"{n} from {lo} to {hi}" for n, (lo, hi) in s.searched.items())
    counted = ", ".join(_range(*s.spans[n], n) for n in s.sizes)
    return [
        "each formula holds on the sizes printed with it, and is claimed nowhere else (bound "
        "another size by itself, or b.at(...));",
        f"its pieces were searched along {searched} (one size at a time, the others as traced);",
        f"the work and the counts are exact for {counted} ({s.guards} guards, listed by --json)",
    ]


def symbolic_text(b) -> str:
    """What ``str(b)`` and ``solar bound FILE --symbolic ...`` print."""
    return bound_text(b) + "\n" + "\n".join(symbolic_lines(b)) + "\n"


def symbolic_dict(b, s: Summary | None = None) -> dict:
    """``b.to_dict()`` with the crossovers, the spans and the specializations in words."""
    s = s or summarize(b)
    d = b.to_dict()
    d["symbolic"]["crossovers"] = {
        n: {lv: [list(c) for c in by_level[lv]] for lv in LEVELS}
        for n, by_level in s.crossovers.items()
    }
    d["symbolic"]["exact_span"] = {n: list(v) for n, v in s.spans.items()}
    d["symbolic"]["crossovers_searched"] = {n: list(v) for n, v in s.searched.items()}
    d["symbolic"]["piece_span"] = {n: list(v) for n, v in s.piece.items()}
    d["symbolic"]["specialized_text"] = specialization_lines(s)
    d["symbolic"]["broken_guard"] = s.broken
    return d


# -- notebook -----------------------------------------------------------------------------


def latex(e: sympy.Expr) -> str:
    return sympy.latex(display(e))


def symbolic_html(b) -> str:
    """The Bound's HTML, then its formulas typeset (``$...$`` for MathJax), the crossovers,
    where they hold and the specializations."""
    s = summarize(b)
    rows = [(word, shown(s.formulas[q], s.sizes)[0]) for q, word in QUANTITY_WORDS.items()]
    rows += [(f"work {cls}", e) for cls, e in s.flops.items()]
    body = "".join(
        f'<tr><td style="text-align:left;padding:2px 8px">{html.escape(w)}</td>'
        f'<td style="text-align:left;padding:2px 8px">${latex(e)}$</td></tr>'
        for w, e in rows
    )
    at = ", ".join(f"{k}={v}" for k, v in s.sizes.items())
    cross = "".join(
        f"<li>along <code>{html.escape(n)}</code>: "
        f"{html.escape(crossover_text(n, lv, by_level[lv], s.searched[n]))}</li>"
        for n, by_level in s.crossovers.items()
        for lv in LEVELS
    )
    where = (
        "".join(f"<p>{html.escape(line)}</p>" for line in where_lines(s))
        if not s.broken
        else f"<p>these formulas are claimed nowhere: {html.escape(s.broken)} is false at the "
        "traced sizes (a fault in solar's guards)</p>"
    )
    special = "".join(f"<li>{html.escape(x)}</li>" for x in specialization_lines(s))
    return (
        bound_html(b)
        + f"<h4>formulas in {html.escape(', '.join(s.sizes))} (traced at {html.escape(at)})</h4>"
        + f'<table style="border-collapse:collapse">{body}</table>'
        + where
        + (f"<h4>crossovers on {html.escape(b.hw)}</h4><ul>{cross}</ul>" if cross else "")
        + (f"<h4>specialized</h4><ul>{special}</ul>" if special else "")
    )


# -- plot ---------------------------------------------------------------------------------

_STYLE = {
    "unfused": ("#aec7e8", "-", 2.5),
    "cache_aware": ("#1f77b4", "-", 2.5),
    "fused": ("#ff7f0e", "--", 1.2),
}


def symbolic_curve(
    b,
    size: str | None = None,
    levels=LEVELS,
    lo: int | None = None,
    hi: int | None = None,
    points: int = 400,
    ax=None,
    **fixed: int,
):
    """Each level's bound against ``size`` (default: the first) over ``[lo, hi]`` (default:
    where the counts are exact, up to 64x the traced value), the other sizes at ``fixed`` or
    as traced; each crossover marked where the bound-by term changes."""
    import numpy as np

    from solar.report.plots import _ax

    size = size or next(iter(b.sizes))
    if size not in b.sizes:
        raise ValueError(f"unknown size {size!r}; this bound's sizes are {', '.join(b.sizes)}")
    point = {
        sympy.Symbol(k, integer=True, positive=True): v for k, v in {**b.sizes, **fixed}.items()
    }
    s = sympy.Symbol(size, integer=True, positive=True)
    x0 = point[s]
    a, z = _interval(b.counts_region, s, point, 1 << 40)
    lo = max(a, lo if lo is not None else 1)
    hi = min(z, hi if hi is not None else max(64 * x0, lo + 1))
    xs = np.unique(np.geomspace(lo, hi, points).round().astype(np.int64))
    ax = _ax(ax)
    marked: set[tuple] = set()
    for lv in levels:
        color, style, width = _STYLE[lv]
        ys = b.values(lv, size, xs, **fixed)
        ax.plot(
            xs,
            ys,
            color=color,
            ls=style,
            lw=width,
            label=lv.replace("_", "-"),
            zorder=3 if lv == "fused" else 2,  # dashed, over a cache-aware curve it equals
        )
        for x, before, after in b.crossovers(size, lv, lo=lo, hi=hi, **fixed):
            y = b.values(lv, size, [x], **fixed)[0]
            if (x, y, before, after) in marked:  # the same change on two levels: one mark
                continue
            marked.add((x, y, before, after))
            ax.scatter([x], [y], s=30, color=COLORS.get(after, "#777"), zorder=4)
            ax.annotate(
                f"{size}={x}: {before}→{after}",
                (x, y),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize=7,
            )
    if lo <= x0 <= hi:
        ax.axvline(x0, color="#7f7f7f", lw=0.8, ls=":", label=f"traced {size}={x0}")
    others = ", ".join(f"{k}={v}" for k, v in {**b.sizes, **fixed}.items() if k != size)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(size)
    ax.set_ylabel("speed-of-light bound (s)")
    ax.set_title(
        f"{b.program} on {b.hw}: bound per {size}" + (f" ({others})" if others else ""),
        fontsize=10,
    )
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure


def plot_symbolic(b, kind: str = "curve", **kw):
    """``SymbolicBound.plot(kind)``: ``curve`` (:func:`symbolic_curve`, the default) or any
    kind of a Bound's plot at the traced sizes (:func:`solar.report.plots.plot_bound`)."""
    if kind == "curve":
        return symbolic_curve(b, **kw)
    from solar.report.plots import plot_bound

    return plot_bound(b, kind, **kw)
