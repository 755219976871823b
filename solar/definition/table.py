"""Text views of definition bounds: one row per workload."""

from __future__ import annotations

from solar.fmt import fmt_time


def _axes(axes: dict[str, int], limit: int = 48) -> str:
    s = " ".join(f"{k}={v}" for k, v in axes.items())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def definition_table(db) -> str:
    """``db``: a :class:`~solar.definition.bound_definitions.DefinitionBound`."""
    head = f"{db.name} on {db.hw}: {len(db.workloads)} workloads"
    symbolic = any(w.method != "trace" or w.note for w in db.workloads)
    rows = [("workload", "axes", "unfused", "fused", "cache-aware", "bound by", "kernels")]
    if symbolic:
        rows[0] += ("from",)
    for w in db.workloads:
        if w.status != "ok":
            rows.append((w.uuid[:12], "", "error", w.error or "", "", "", "", "")[: len(rows[0])])
            continue
        row = (
            w.uuid[:12],
            _axes(w.axes),
            fmt_time(w.unfused),
            fmt_time(w.fused),
            fmt_time(w.cache_aware),
            w.cache_aware_bound_by,
            str(w.kernels),
        )
        rows.append((*row, w.method) if symbolic else row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head] + [
        "  ".join(c.ljust(wd) for c, wd in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    if symbolic:
        lines.append("from:")
        notes = dict.fromkeys(f"{w.method}: {w.note}" for w in db.workloads if w.note)
        lines += [f"  - {n}" for n in notes]
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in db.assumptions]
    return "\n".join(lines)


def definitions_batch_table(results) -> str:
    """One line per definition of a batch: workloads bounded, the range of fused bounds."""
    lines = []
    for db in results:
        ok = [w for w in db.workloads if w.status == "ok"]
        bad = [w for w in db.workloads if w.status != "ok"]
        if ok:
            lo, hi = min(w.cache_aware for w in ok), max(w.cache_aware for w in ok)
            rng = f"cache-aware {fmt_time(lo)} .. {fmt_time(hi)}"
        else:
            rng = "no bound"
        err = f"; {len(bad)} failed: {bad[0].error}" if bad else ""
        formula = sum(w.method == "formula" for w in ok)
        via = f" ({formula} from a formula)" if any(w.note for w in db.workloads) else ""
        lines.append(f"{db.name:<32} {len(ok)}/{len(db.workloads)} workloads{via}  {rng}{err}")
    return "\n".join(lines)
