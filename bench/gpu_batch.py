"""What the GPU validation scripts of ``bench/`` share: a row per measured program (from its
:class:`~solar.gpu.headroom.HeadroomReport`), cases run one by one (a failing case is a row,
not the end of the batch), and the table written beside its rows."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from solar.fmt import fmt_time


def fmt_t(s: float | None) -> str:
    """A time for a table cell; ``-`` where there is none."""
    return "-" if s is None else fmt_time(s)


def report_row(name: str, rep) -> dict:
    """The table row of one measured program: validation, median time, the bounds, the
    violations, and whether the measurement is below any bound (it must never be)."""
    measured = rep.measured.median_s if rep.measured else None
    return {
        "name": name,
        "validation": rep.validation.status if rep.validation else "not run",
        "measured": measured,
        "bounds": dict(rep.bounds),
        "violations": len(rep.violations),
        "faster_than_a_bound": measured is not None
        and any(b is not None and measured < b for b in rep.bounds.values()),
    }


def run_cases(cases: Iterable[tuple[str, Callable[[], dict]]]) -> list[dict]:
    """``run()`` of each ``(name, run)``, in order; an exception becomes the case's error row."""
    rows = []
    for name, run in cases:
        try:
            rows.append(run())
        except Exception as e:  # noqa: BLE001 - one failing case does not stop the others
            traceback.print_exc()
            rows.append({"name": name, "error": f"{type(e).__name__}: {e}".splitlines()[0]})
        print(rows[-1], flush=True)
    return rows


def finish(out: Path, stem: str, rows: list[dict], text: str) -> int:
    """Write the table (``<stem>`` with the .md suffix) and the rows (.json) into ``out``,
    print the table; 0 when every case ran and none is faster than a bound."""
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    print(text)
    ok = all("error" not in r and not r["faster_than_a_bound"] for r in rows)
    return 0 if ok else 1


def device_name(small: bool) -> str:
    import torch

    return "cpu (--small)" if small else torch.cuda.get_device_name()
