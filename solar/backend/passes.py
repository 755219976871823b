"""The backend as a declared pipeline of pure passes over one einsum graph and one GPU spec.

A :class:`Pass` reads the :class:`Analysis` so far (the graph, the spec and the facts earlier
passes computed) and returns either a new graph (a *graph pass*: ``Graph -> Graph``, such as
the narrow-format recharge) or one named fact (a *fact pass*: ``Graph -> facts``, such as the
rooflines or the cache-aware model). :func:`run` folds a pipeline over a graph; no pass
changes the graph it is given, so one graph serves every spec, thread and question.
:mod:`solar.backend.analyze` declares the pipeline of the three bounds and folds its facts
into a :class:`~solar.backend.result.Bound`; adding an analysis is adding a pass to it
(docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from solar.graph.types import Graph
from solar.graph.verify import checked


@dataclass(frozen=True)
class Analysis:
    """One graph on one spec, and the facts the passes computed so far (by name)."""

    graph: Graph
    spec: object
    notes: tuple[str, ...] = ()  # the caller's notes (the trace's assumptions)
    facts: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    def __getitem__(self, name: str) -> object:
        """The fact ``name``; a pass that reads a fact no earlier pass computed says so."""
        try:
            return self.facts[name]
        except KeyError:
            raise KeyError(f"no pass before this one computes the fact {name!r}") from None

    def with_fact(self, name: str, value: object) -> Analysis:
        return replace(self, facts=MappingProxyType({**self.facts, name: value}))

    def reading(self, names: Sequence[str]) -> Analysis:
        """The analysis as a pass that declared it reads ``names`` sees it: those facts only."""
        return replace(self, facts=MappingProxyType({n: self.facts[n] for n in names}))


@dataclass(frozen=True)
class Pass:
    """A named step: ``run(analysis)`` gives the new graph (``graph=True``) or the fact
    ``name``; ``reads`` names the facts it needs, the only ones it is shown (checked when the
    pipeline is declared)."""

    name: str
    run: Callable[[Analysis], object]
    reads: tuple[str, ...] = ()
    graph: bool = False  # a graph pass: its result replaces the analysis's graph


def check_pipeline(passes: Sequence[Pass]) -> None:
    """Every fact a pass reads is computed by a pass before it; no name twice."""
    known: set[str] = set()
    for p in passes:
        missing = [r for r in p.reads if r not in known]
        if missing:
            raise ValueError(f"pass {p.name!r} reads {missing} before any pass computes them")
        if p.name in known:
            raise ValueError(f"two passes are named {p.name!r}")
        known.add(p.name)


def run(passes: Sequence[Pass], analysis: Analysis) -> Analysis:
    """Fold ``passes`` over ``analysis`` in order. A graph pass returns a graph, or a record
    whose ``graph`` is one (and what else it found, kept as the fact of its name); the later
    passes read that graph."""
    for p in passes:
        out = p.run(analysis.reading(p.reads))
        if p.graph:
            new = out if isinstance(out, Graph) else getattr(out, "graph", None)
            if not isinstance(new, Graph):
                raise TypeError(f"graph pass {p.name!r} returned {type(out).__name__}")
            analysis = replace(analysis, graph=checked(new))
        analysis = analysis.with_fact(p.name, out)
    return analysis
