"""Views of the serving frontier (:class:`solar.questions.serving.Serving`): a text table per
configuration and the frontier plot (TPOT against tokens/s/GPU, one curve per GPU kind and
count)."""

from __future__ import annotations

from solar.fmt import fmt_bytes, fmt_time
from solar.questions.serving import Serving
from solar.report.plots import _ax


def serving_text(s: Serving) -> str:
    """Per configuration: the largest batch that fits, TTFT, where decode turns
    compute-bound, and each batch's TPOT and tokens/s/GPU; the targets; the assumptions."""
    lines = [
        f"serving {s.model}: prompt {s.prompt}, output {s.output} tokens (decode steps at "
        f"context {s.decode_context}, {s.held_context} tokens of KV held per sequence)"
    ]
    if s.step_terms:
        lines.append(
            f"decode step bound on {s.frontiers[0].hw_key}, s (TPOT x tokens per step), the max of:"
        )
        lines += [f"  {unit}: {expr}" for unit, expr in s.step_terms.items()]
    for f in s.frontiers:
        head = f"\n{f.gpus} x {f.hw_key}"
        if f.max_batch is None:
            lines.append(f"{head}: no frontier ({f.reason})")
            continue
        limit = "memory" if f.memory_binds else "the search's top"
        turn = (
            f"compute-bound from batch {f.compute_bound_from}"
            if f.compute_bound_from is not None
            else "memory-bound at every batch that fits"
        )
        lines.append(
            f"{head}: batch <= {f.max_batch} ({limit}); TTFT >= {fmt_time(f.ttft_s)}; {turn}"
        )
        lines.append(
            f"  {'batch':>6} {'TPOT >=':>10} {'tok/s/GPU <=':>14} {'TTFT >=':>10} "
            f"{'bound by':>9} {'peak/GPU':>10}  plan"
        )
        for p in f.points:
            lines.append(
                f"  {p.batch:>6} {fmt_time(p.tpot_s):>10} {p.tokens_per_s_per_gpu:>14,.0f} "
                f"{fmt_time(p.ttft_s):>10} {p.bound_by:>9} {fmt_bytes(p.peak_bytes):>10}  {p.plan}"
            )
    if s.targets:
        lines.append("\ntargets:")
        lines += [f"  {t.text}" for t in s.targets]
    lines.append("\nassumptions:")
    lines += [f"  - {a}" for a in s.assumptions]
    return "\n".join(lines)


def serving_plot(s: Serving, ax=None):
    """The frontier: tokens/s/GPU (x) against TPOT (y), one curve per GPU kind and count,
    each point labelled with its batch."""
    ax = _ax(ax)
    for f in s.frontiers:
        if not f.points:
            continue
        xs = [p.tokens_per_s_per_gpu for p in f.points]
        ys = [p.tpot_s * 1e3 for p in f.points]
        ax.plot(xs, ys, marker="o", label=f"{f.gpus} x {f.hw_key}")
        for p, x, y in zip(f.points, xs, ys, strict=True):
            ax.annotate(str(p.batch), (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens/s per GPU (upper bound)")
    ax.set_ylabel("TPOT, ms (lower bound)")
    ax.set_title(f"{s.model}: prompt {s.prompt}, output {s.output}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    return ax.figure
