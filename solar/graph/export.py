"""Render an einsum graph as text, Graphviz DOT, or JSON (node-link)."""

from __future__ import annotations

import json

import networkx as nx

from solar.fmt import fmt_bytes, fmt_ops


def to_text(g: nx.MultiDiGraph) -> str:
    n_ops = sum(1 for _, d in g.nodes(data=True) if d["kind"] == "op")
    lines = [f"einsum graph {g.graph['name']}: {n_ops} ops"]
    for name, info in g.graph["tensors"].items():
        if info["role"] in ("input", "weight", "constant", "output"):
            lines.append(
                f"  {info['role']:<8} {name}{info['shape']} {info['dtype']} "
                f"({fmt_bytes(info['bytes'])})"
            )
    for n, d in g.nodes(data=True):
        if d["kind"] != "op":
            continue
        ins = ", ".join(f"{key}<-{src}" for src, _, key in g.in_edges(n, keys=True))
        lines.append(f"  {n:<16} {d['op_kind']:<11} {d['einsum']}")
        lines.append(
            f"  {'':<16} ranks {d['ranks']}  work {fmt_ops(d['ops'])}"
            + (f"  from {ins}" if ins else "")
        )
    return "\n".join(lines)


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.MultiDiGraph) -> str:
    out = [f"digraph {_q(g.graph['name'])} {{", "  rankdir=TB; node [fontname=monospace];"]
    for n, d in g.nodes(data=True):
        if d["kind"] == "op":
            label = f"{n}\\n{d['op_kind']}\\n{d['einsum']}"
            out.append(f"  {_q(n)} [shape=box, label={_q(label)}];")
        else:
            out.append(f"  {_q(n)} [shape=ellipse, label={_q(d['kind'] + ': ' + d['tensor'])}];")
    for u, v, k, d in g.edges(keys=True, data=True):
        label = _q(f"{k} {fmt_bytes(d['footprint_bytes'])}")
        out.append(f"  {_q(u)} -> {_q(v)} [label={label}];")
    out.append("}")
    return "\n".join(out) + "\n"


def to_json(g: nx.MultiDiGraph) -> str:
    data = nx.node_link_data(g, edges="edges")
    return json.dumps(data, indent=2, default=str)
