"""``python -m solar.bench.counts``: solar's contraction flops against an external count, per
program of the examples corpus, every difference derived by hand.

The external count of a PyTorch program is ``torch.utils.flop_counter.FlopCounterMode`` over
its aten graph (``make_fx`` on fake tensors, replayed on the meta device: models whose Python
code calls ``.item()`` run too; :func:`_fcm_flops` says what the programs the replay cannot
run get). A JAX program gets the same rules applied to its jaxpr
(``dot_general``: 2 · batch · M · N · K; ``conv_general_dilated``: 2 · outputs · C_in/groups ·
taps, as FlopCounterMode counts a convolution). Both count every multiply-accumulate of an
operator; solar counts the products that reach an output. Where they differ, each operator
accounts for its share, derived from its shapes and parameters alone:

- convolution: a tap reading zero padding is no product. Per spatial dim, output ``p`` meets
  tap ``r`` at input ``s·p + d·r − pad``, a product when that lies in ``[0, in)``;
- transposed convolution: input ``i`` meets tap ``r`` at output ``s·i + d·r − pad``, a product
  when that lies in ``[0, out)`` (FlopCounterMode counts the cropped ones too);
- JAX convolution with input (lhs) dilation: a tap on a hole of the dilated input is no product;
- convolution backward (a training step): the input and weight gradients pair the same (output
  position, tap) products as the forward, so each skips the forward's padding taps;
- causal attention (top-left aligned): query ``i`` meets keys ``j <= i`` only, ``Σ_i min(i+1, S)``
  score entries, in Q·Kᵀ and in P·V, and in the backward's five contractions (Q·Kᵀ again,
  dV, dP, dQ, dK: FlopCounterMode's SDPA backward rule counts the same five, full; where the
  reference run took PyTorch's math SDPA — plain matmuls, as transformers' LLaMA on the CPU —
  its backward is four full contractions, dQ, dK, dV and dP, with no scores recomputed);
- operators FlopCounterMode has no rule for (``_trilinear``, ``_int_mm``) count 0 there; their
  products are counted by hand.

The command writes ``bench/results/contraction_flops.md`` and ``.json`` and fails when a
difference is left unexplained. ``python -m solar.bench.counts examples/op_conv3d.py`` prints the
rows of the files named.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from solar.bench.models import ROOT

RESULTS = ROOT / "bench" / "results"


@dataclass
class Row:
    program: str
    framework: str
    solar: int  # contraction flops solar counts
    reference: int  # FlopCounterMode (PyTorch) or its rules on the jaxpr (JAX)
    reasons: dict[str, int] = field(default_factory=dict)  # why reference - solar, by cause
    error: str = ""

    @property
    def explained(self) -> bool:
        return not self.error and self.reference - sum(self.reasons.values()) == self.solar


# ----------------------------------------------------------------------------- helpers


def hits(n_from: int, taps: int, stride: int, dil: int, pad: int, n_to: int) -> int:
    """Pairs ``(x, r)``, ``x < n_from``, ``r < taps``, with ``0 <= stride·x + dil·r − pad <
    n_to`` (per tap, the x of an interval)."""
    total = 0
    for r in range(taps):
        lo = max(0, -(-(pad - dil * r) // stride))
        hi = min(n_from - 1, (n_to - 1 + pad - dil * r) // stride)
        total += max(0, hi - lo + 1)
    return total


def _contraction_flops(program) -> int:
    from solar.ir.cost import statement_kind, statement_ops

    return sum(
        sum(statement_ops(program, st, k).values())
        for k in program.kernels
        for st in k.statements
        if statement_kind(st) == "contraction"
    )


def _add(reasons: dict[str, int], why: str, flops: int) -> None:
    if flops:
        reasons[why] = reasons.get(why, 0) + flops


# ------------------------------------------------------------------------------ PyTorch


def _fcm_flops(model, inputs, graph=None) -> tuple[int, bool]:
    """FlopCounterMode over the program's aten graph, replayed on meta tensors; a program the
    replay cannot run (constants a fake trace cannot mix in: KV caches) runs itself on the meta
    device under FlopCounterMode, and one that cannot run on meta either (a fused optimizer
    refuses meta parameters) gets FlopCounterMode's formulas applied to ``graph``, solar's
    aten graph (:func:`_fcm_on_graph`). Also returns whether the count saw attention as one
    fused SDPA operator (False: the run took PyTorch's math SDPA, plain matmuls)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils.flop_counter import FlopCounterMode

    module = model if isinstance(model, torch.nn.Module) else None
    params = dict(module.named_parameters()) if module is not None else {}
    buffers = dict(module.named_buffers()) if module is not None else {}

    def run(p, b, *xs):
        if module is None:
            return model(*xs)
        return torch.func.functional_call(module, (p, b), xs)

    try:
        with torch.no_grad():
            gm = make_fx(run, tracing_mode="fake")(params, buffers, *inputs)
            with FlopCounterMode(display=False) as fc:
                gm(params, buffers, *inputs)
    except Exception:  # constants the fake trace cannot mix in (KV caches, a step's state)
        try:
            with FlopCounterMode(display=False) as fc:  # the program itself, on meta
                run(params, buffers, *inputs)
        except Exception:
            if graph is None:
                raise
            return _fcm_on_graph(graph), True
    ops = {str(op) for counts in fc.get_flop_counts().values() for op in counts}
    return fc.get_total_flops(), any("scaled_dot_product" in op for op in ops)


def _fcm_on_graph(graph) -> int:
    """FlopCounterMode's formulas (``torch.utils.flop_counter``) on every node of an aten graph,
    the operands' fake values as their arguments; the fused attention calls solar intercepts
    (``solar.sdpa``, ``solar.sdpa_backward``) by torch's own SDPA formulas."""
    import torch
    from torch.utils import flop_counter as F

    def val(a):
        return a.meta["val"] if isinstance(a, torch.fx.Node) else a

    total = 0
    for node in graph.graph.nodes:
        if node.op != "call_function":
            continue
        args = torch.fx.node.map_aggregate(node.args, val)
        kwargs = torch.fx.node.map_aggregate(node.kwargs, val)
        packet = getattr(node.target, "overloadpacket", None)
        if packet in F.flop_registry:
            total += F.flop_registry[packet](*args, **kwargs, out_val=node.meta["val"])
        elif str(node.target) == "solar.sdpa.default":
            total += F.sdpa_flop_count(*(a.shape for a in args[:3]))
        elif str(node.target) == "solar.sdpa_backward.default":
            total += F.sdpa_backward_flop_count(*(a.shape for a in args[:4]))
    return total


def _torch_reasons(graph, fused_sdpa: bool = True) -> dict[str, int]:
    """Per operator node of solar's traced graph: what FlopCounterMode counts minus the
    products that reach an output (see the module docstring). ``fused_sdpa``: whether the
    reference counted attention as the fused SDPA operator (its backward rule: five
    contractions) or, False, as the math SDPA's matmuls (a backward of four: no scores
    recomputed)."""
    import torch

    from solar.frontend.torch.lower import bind_arguments

    aten = torch.ops.aten
    reasons: dict[str, int] = {}
    for node in graph.graph.nodes:
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        args = bind_arguments(node.target, node.args, node.kwargs)

        def shape(a) -> tuple[int, ...]:
            return tuple(int(s) for s in a.meta["val"].shape)

        if node.target == aten.convolution.default:
            x, w, out = shape(args[0]), shape(args[1]), shape(node)
            stride, pad, dil, transposed, _, groups = args[3:9]
            nsp = len(w) - 2
            stride, pad, dil = (_per_dim(v, nsp) for v in (stride, pad, dil))
            k = w[2:]
            if transposed:
                per_mac = 2 * x[0] * x[1] * w[1]
                sizes = zip(x[2:], k, stride, dil, pad, out[2:], strict=True)
                useful = math.prod(hits(*z) for z in sizes)
                _add(reasons, "cropped transposed-conv outputs",
                     per_mac * (math.prod(x[2:]) * math.prod(k) - useful))  # fmt: skip
            else:
                per_mac = 2 * out[0] * out[1] * (x[1] // groups)
                sizes = zip(out[2:], k, stride, dil, pad, x[2:], strict=True)
                useful = math.prod(hits(*z) for z in sizes)
                _add(reasons, "conv padding taps",
                     per_mac * (math.prod(out[2:]) * math.prod(k) - useful))  # fmt: skip
        elif node.target == aten.convolution_backward.default and not args[7]:
            # grad_input and grad_weight pair the same (output position, tap) products as the
            # forward: each computed gradient skips the forward's padding taps
            dy, x, w = shape(args[0]), shape(args[1]), shape(args[2])
            stride, pad, dil = (_per_dim(v, len(w) - 2) for v in args[4:7])
            groups, mask = args[9], args[10]
            per_mac = 2 * dy[0] * dy[1] * (x[1] // groups)
            sizes = zip(dy[2:], w[2:], stride, dil, pad, x[2:], strict=True)
            useful = math.prod(hits(*z) for z in sizes)
            taps = per_mac * (math.prod(dy[2:]) * math.prod(w[2:]) - useful)
            _add(reasons, "conv padding taps (backward)", taps * (int(mask[0]) + int(mask[1])))
        elif str(node.target) == "solar.sdpa.default" and args[5]:  # is_causal
            q, v, kk = shape(args[0]), shape(args[2]), shape(args[1])
            lq, lk = q[-2], kk[-2]
            pairs = sum(min(i + 1, lk) for i in range(lq))
            heads = math.prod(q[:-2])
            _add(reasons, "causal attention", 2 * heads * (lq * lk - pairs) * (q[-1] + v[-1]))
        elif str(node.target) == "solar.sdpa_backward.default" and args[7]:  # is_causal
            q, kk, v = shape(args[1]), shape(args[2]), shape(args[3])
            lq, lk = q[-2], kk[-2]
            pairs = sum(min(i + 1, lk) for i in range(lq))
            heads = math.prod(q[:-2])
            # five contractions over the (query, key) pairs: QKᵀ again, dQ and dK over the
            # head dim E; dV and dP over the value dim Ev
            if fused_sdpa:
                _add(reasons, "causal attention (backward)",
                     2 * heads * (lq * lk - pairs) * (3 * q[-1] + 2 * v[-1]))  # fmt: skip
            else:  # the reference's math SDPA: dQ, dK, dV, dP over every pair, no QKᵀ again
                full = lq * lk * (2 * q[-1] + 2 * v[-1])
                _add(reasons, "causal attention (backward; the reference's math SDPA)",
                     2 * heads * (full - pairs * (3 * q[-1] + 2 * v[-1])))  # fmt: skip
        elif node.target == aten._int_mm.default:
            (m, k), (_, n) = shape(args[0]), shape(args[1])
            _add(reasons, "no FlopCounterMode rule (_int_mm)", -2 * m * n * k)
        elif node.target == aten._trilinear.default:
            _add(reasons, "no FlopCounterMode rule (_trilinear)", -_trilinear_flops(args, shape))
    return reasons


def _trilinear_flops(args, shape) -> int:
    """``nn.Bilinear``: ``y[b,o] = Σ_i Σ_j x1[b,i] W[o,i,j] x2[b,j]``, as solar evaluates it:
    ``t[b,o,j] = Σ_i x1[b,i] W[o,i,j]`` (B·O·I·J products), then ``Σ_j t[b,o,j] x2[b,j]``
    (B·O·J)."""
    b, i = shape(args[0])
    o, _, j = shape(args[1])
    return 2 * b * o * j * (i + 1)


def _per_dim(v, n: int) -> list[int]:
    v = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    return v * n if len(v) == 1 else v


def torch_row(path: Path) -> Row:
    from solar.api import trace as trace_program
    from solar.problem import load_problem

    problem = load_problem(path)
    trace = trace_program(problem.model, problem.inputs, name=problem.name)
    reference, fused_sdpa = _fcm_flops(problem.model, problem.inputs, trace.graph)
    reasons = _torch_reasons(trace.graph, fused_sdpa)
    # FlopCounterMode counts a complex product as one multiply-add (2 flops); solar as the
    # 3M algorithm's 3 real multiply-adds (6 flops, docs/counting.md): the reference is a third
    _add(reasons, "complex products as 3 real multiply-adds", -2 * _complex_flops(trace) // 3)
    return Row(
        problem.name,
        "PyTorch",
        _contraction_flops(trace.program),
        reference,
        reasons,
    )


def _complex_flops(trace) -> int:
    """Contraction flops of the statements that write complex tensors."""
    from solar.ir.cost import statement_kind, statement_ops

    program = trace.program
    return sum(
        sum(statement_ops(program, st, k).values())
        for k in program.kernels
        for st in k.statements
        if statement_kind(st) == "contraction"
        and program.tensors[program.base(st.out.tensor)].dtype.startswith("complex")
    )


# ---------------------------------------------------------------------------------- JAX


def _jaxpr_counts(jaxpr, times: int = 1) -> tuple[int, dict[str, int]]:
    """FlopCounterMode's rules over a jaxpr (sub-jaxprs included, scan bodies times their
    length), and the holes and padding taps of its convolutions."""
    total, reasons = 0, {}
    for eqn in jaxpr.eqns:
        name, p = eqn.primitive.name, eqn.params
        if name == "dot_general":
            (lc, _), (lb, _) = p["dimension_numbers"]
            a = eqn.invars[0].aval.shape
            out = eqn.outvars[0].aval.shape
            total += times * 2 * math.prod(out) * math.prod(a[d] for d in lc)
        elif name == "conv_general_dilated":
            flops, lost = _jax_conv(eqn)
            total += times * flops
            for why, n in lost.items():
                _add(reasons, why, times * n)
        inner_times = times * int(p.get("length", 1)) if name == "scan" else times
        # custom_linear_solve runs its solve; its matvec (and transposes) serve differentiation
        subs = [p["jaxprs"].solve] if name == "custom_linear_solve" else p.values()
        for sub in subs:
            for j in sub if isinstance(sub, (list, tuple)) else [sub]:
                inner = getattr(j, "jaxpr", j)
                if hasattr(inner, "eqns"):
                    t, r = _jaxpr_counts(inner, inner_times)
                    total += t
                    for k, v in r.items():
                        _add(reasons, k, v)
    return total, reasons


def _jax_conv(eqn) -> tuple[int, dict[str, int]]:
    """FlopCounterMode-rule flops of a convolution, and those on padding and on holes of the
    input (lhs) dilation: per spatial dim, output ``q`` meets tap ``r`` at dilated input
    ``s·q + rd·r − lo``; a product when that is a multiple of ``ld`` inside the input."""
    p = eqn.params
    lhs, rhs = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
    out = eqn.outvars[0].aval.shape
    ls, rs, os_ = p["dimension_numbers"]
    taps = [rhs[d] for d in rs[2:]]
    windows = math.prod(out[d] for d in os_[2:]) * math.prod(taps)
    per_window = 2 * math.prod(out[d] for d in os_[:2]) * rhs[rs[1]]
    inside = real = 1
    for i, n_taps in enumerate(taps):
        s, rd = int(p["window_strides"][i]), int(p["rhs_dilation"][i])
        ld, lo = int(p["lhs_dilation"][i]), int(p["padding"][i][0])
        size, n_out = lhs[ls[2 + i]], out[os_[2 + i]]
        pos = [s * q + rd * r - lo for r in range(n_taps) for q in range(n_out)]
        inside *= sum(0 <= x <= (size - 1) * ld for x in pos)
        real *= sum(0 <= x <= (size - 1) * ld and x % ld == 0 for x in pos)
    return per_window * windows, {
        "conv padding taps": per_window * (windows - inside),
        "input-dilation holes": per_window * (inside - real),
    }


def jax_row(path: Path, fn, inputs) -> Row:
    import jax

    from solar.frontend.jax import trace_jax
    from solar.frontend.jax.trace import prepare

    trace = trace_jax(fn, inputs, name=path.stem)
    prep = prepare(fn, inputs)  # a Flax module as the function of its state that is traced
    reference, reasons = _jaxpr_counts(jax.make_jaxpr(prep.fn)(*prep.args).jaxpr)
    return Row(path.stem, "JAX", _contraction_flops(trace.program), reference, reasons)


# ------------------------------------------------------------------------------- driver


def row(path: Path) -> Row:
    try:
        from solar.frontend.jax.problem import load_jax_problem
        from solar.problem import load_module

        jax_problem = load_jax_problem(load_module(path))
    except ImportError:
        jax_problem = None
    try:
        return jax_row(path, *jax_problem) if jax_problem else torch_row(path)
    except Exception as e:  # noqa: BLE001  (a row that failed says why)
        return Row(path.stem, "?", 0, 0, error=f"{type(e).__name__}: {e}")


def _fmt(x: int) -> str:
    return f"{x:.4g}" if x else "0"


def markdown(rows: Iterable[Row]) -> str:
    rows = list(rows)
    same = sum(r.explained and r.solar == r.reference and r.solar > 0 for r in rows)
    none = sum(r.explained and r.solar == r.reference == 0 for r in rows)
    lines = [
        "# Contraction flops: solar against FlopCounterMode",
        "",
        "Every program of `examples/`: the flops of solar's contraction statements (2 per "
        "multiply-accumulate that reaches an output) against `torch.utils.flop_counter."
        "FlopCounterMode` (PyTorch programs: over the aten graph, on the meta device) or the "
        "same rules applied to the jaxpr (JAX programs). Where the ratio is not 1, the "
        "difference is derived by hand per operator from its shapes and parameters (see "
        "`solar/bench/counts.py`): the *explained* column is that derivation, and solar's count "
        "equals reference − explained exactly on every row. Regenerate: "
        "`python -m solar.bench.counts`.",
        "",
        f"{len(rows)} programs: {same} with equal counts, {none} without contractions, "
        f"{sum(r.explained for r in rows) - same - none} that differ, each explained; "
        f"{sum(not r.explained for r in rows)} unexplained. A negative amount is work "
        "FlopCounterMode does not count (it has no rule for the operator).",
        "",
        "| program | framework | solar | reference | ratio | explained difference |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.error:
            lines.append(f"| {r.program} | {r.framework} | | | | ERROR {r.error} |")
            continue
        if r.solar == r.reference:
            ratio = "1" if r.solar else "-"
        else:
            ratio = f"{r.solar / r.reference:.9f}".rstrip("0") if r.reference else "n/a"
        why = "; ".join(f"{k}: {_fmt(v)}" for k, v in r.reasons.items() if v)
        if not r.explained:
            why = f"UNEXPLAINED ({_fmt(r.reference - r.solar)}) {why}"
        lines.append(
            f"| {r.program} | {r.framework} | {_fmt(r.solar)} | {_fmt(r.reference)} | {ratio} "
            f"| {why} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m solar.bench.counts", description=__doc__)
    ap.add_argument("files", nargs="*", type=Path, help="problem files (default: examples/)")
    args = ap.parse_args(argv)
    paths = args.files or sorted((ROOT / "examples").glob("*.py"))
    rows = [row(p) for p in paths]
    text = markdown(rows)
    if args.files:
        print(text)
    else:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "contraction_flops.md").write_text(text)
        doc = [asdict(r) | {"explained": r.explained} for r in rows]
        (RESULTS / "contraction_flops.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(text)
    bad = [r.program for r in rows if not r.explained]
    if bad:
        print(f"unexplained: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
