"""Render an einsum graph as text, Graphviz DOT, or JSON (node-link, records as plain data)."""

from __future__ import annotations

import json

from solar.fmt import fmt_bytes, fmt_ops
from solar.graph.types import Graph, plain


def to_text(g: Graph) -> str:
    info = g.info
    ops = list(g.ops())
    lines = [f"einsum graph {info.name}: {len(ops)} ops"]
    for name, t in info.tensors.items():
        if t.role in ("input", "weight", "constant", "output"):
            lines.append(f"  {t.role:<8} {name}{list(t.shape)} {t.dtype} ({fmt_bytes(t.bytes)})")
    for d in ops:
        n = d.id
        ins = ", ".join(f"{key}<-{src}" for src, key, _ in g.in_edges(n))
        lines.append(f"  {n:<16} {d.op_kind:<11} {d.einsum}")
        lines.append(
            f"  {'':<16} ranks {dict(d.ranks)}  work {fmt_ops(d.ops)}"
            + (f"  from {ins}" if ins else "")
        )
    return "\n".join(lines)


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: Graph) -> str:
    out = [f"digraph {_q(g.info.name)} {{", "  rankdir=TB; node [fontname=monospace];"]
    for d in g.nodes():
        if d.kind == "op":
            label = f"{d.id}\\n{d.op_kind}\\n{d.einsum}"
            out.append(f"  {_q(d.id)} [shape=box, label={_q(label)}];")
        else:
            out.append(f"  {_q(d.id)} [shape=ellipse, label={_q(d.kind + ': ' + d.tensor)}];")
    for u, v, k, e in g.edges():
        label = _q(f"{k} {fmt_bytes(e.footprint_bytes)}")
        out.append(f"  {_q(u)} -> {_q(v)} [label={label}];")
    out.append("}")
    return "\n".join(out) + "\n"


def to_json(g: Graph) -> str:
    """Node-link JSON: each node's and edge's record fields as its attributes, the graph
    record's fields as ``graph``."""
    data = {
        "directed": True,
        "multigraph": True,
        "graph": plain(g.info),
        "nodes": [{**plain(d), "id": d.id} for d in g.nodes()],
        "edges": [{**plain(e), "source": u, "target": v, "key": k} for u, v, k, e in g.edges()],
    }
    return json.dumps(data, indent=2, default=str)
