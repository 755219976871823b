"""A graph's Template rebuilds exactly what walking it rebuilds (solar.algebra.template):
the same numbers at another point, the same sharing (an object reached twice rebuilt once,
objects without a size reused as they are, lists and dicts new), and it survives a copy."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

from solar.algebra.size import Size, symbol
from solar.algebra.template import Template
from solar.algebra.walk import evaluate, map_values, rehint
from solar.graph.types import Graph
from solar.problem import problem_at
from solar.symbolic.trace import bound_symbolic

ATTENTION = Path(__file__).resolve().parents[1] / "examples" / "attention_bf16.py"


def _plain(g: Graph) -> tuple:
    return (g.info, g.records, g.links)


def test_template_rebuilds_a_traced_graph_as_the_walk_does():
    b = bound_symbolic(*problem_at(ATTENTION, "S", 300), "H100", {"S": [(0, 2), (1, 2), (2, 2)]})
    g, t = b.analysis.graph, Template(b.analysis.graph)
    for s in (2, 77, 4096):
        point = {symbol("S"): s}
        assert _plain(evaluate(g, point, t)) == _plain(evaluate(g, point))
        walked, built = rehint(g, point), rehint(g, point, t)
        assert _plain(built) == _plain(walked)
        sizes: list = []
        map_values(built, lambda v, found=sizes: found.append(v) or v)
        assert sizes and all(v.hint == v.expr.subs(point) for v in sizes)  # values at s
    assert _plain(Template(copy.deepcopy(g)).build(lambda v: 0)) == _plain(
        pickle.loads(pickle.dumps(t)).build(lambda v: 0)
    )


@dataclasses.dataclass(frozen=True)
class _Box:
    size: object
    label: str = "x"
    items: tuple = ()


def test_template_keeps_the_walks_sharing():
    n = Size(3, symbol("n"))
    shared = _Box(n)
    plain = _Box(4, items=("a", (1, 2)))
    obj = {"a": [shared, shared], "b": plain, "c": (plain, [1]), "d": frozenset({n})}
    t = Template(obj)

    def fn(v):
        return Size(v.hint + 1, v.expr)

    out = t.build(fn)
    ref = map_values(obj, fn)
    assert out == ref
    assert out["a"][0] is out["a"][1]  # reached twice, rebuilt once
    assert out["b"] is plain and out["c"][0] is plain  # no size inside: the same object
    assert out["c"][1] is not obj["c"][1]  # a list is always a new one, as the walk makes
    assert out["a"][0].size == 4 and out["a"][0] is not shared
    assert t.build(fn) is not out  # each build anew
