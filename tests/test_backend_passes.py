"""The backend's pass pipeline (solar/backend/passes.py): declared reads are checked and are
all a pass sees; a graph pass hands its new graph to the passes after it; the pipeline of
the bounds folds into the same Bound as the fold of its own facts."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import solar
from solar.backend.analyze import PIPELINE, analyze
from solar.backend.passes import Analysis, Pass, check_pipeline, run
from solar.hw import load_spec


def _graph():
    x, w = torch.empty(8, 64, device="meta"), torch.empty(64, 32, device="meta")
    return solar.trace_and_lift(torch.matmul, [x, w])[1]


def test_a_pass_reading_a_fact_computed_later_is_refused_when_declared():
    late = (Pass("a", lambda a: a["b"], reads=("b",)), Pass("b", lambda a: 1))
    with pytest.raises(ValueError, match="pass 'a' reads \\['b'\\] before"):
        check_pipeline(late)
    with pytest.raises(ValueError, match="two passes are named 'a'"):
        check_pipeline((Pass("a", lambda a: 1), Pass("a", lambda a: 2)))


def test_a_pass_sees_only_the_facts_it_declares():
    """``ops`` is computed before, but a pass that does not declare it cannot read it."""
    sneaky = (*PIPELINE, Pass("sneaky", lambda a: a["ops"]))
    check_pipeline(sneaky)
    with pytest.raises(KeyError, match="no pass before this one computes the fact 'ops'"):
        run(sneaky, Analysis(_graph(), load_spec("H100")))
    honest = (*PIPELINE, Pass("honest", lambda a: a["ops"], reads=("ops",)))
    done = run(honest, Analysis(_graph(), load_spec("H100")))
    assert done["honest"] == {"cuda_fp32": 2 * 8 * 64 * 32}  # 2 flops per multiply-add


def test_a_graph_pass_hands_its_graph_on_and_leaves_the_input_as_it_was():
    g = _graph()
    mm = next(g.ops())

    def zero_work(a: Analysis):
        return a.graph.with_nodes({mm.id: dataclasses.replace(mm, ops={})})

    pipeline = (
        Pass("zero", zero_work, graph=True),
        Pass("work", lambda a: dict(a.graph.op(mm.id).ops)),
    )
    done = run(pipeline, Analysis(g, load_spec("H100")))
    assert done["work"] == {} and done.graph is done["zero"]
    assert g.op(mm.id).ops == {"cuda_fp32": 2 * 8 * 64 * 32}
    with pytest.raises(TypeError, match="graph pass 'bad' returned int"):
        run((Pass("bad", lambda a: 1, graph=True),), Analysis(g, load_spec("H100")))


def test_analyze_is_the_fold_of_its_pipeline():
    """The pipeline's facts are the Bound's numbers: fused bytes (8·64 + 64·32 + 8·32 fp32
    elements of 4 bytes, each once) and the work per class."""
    g, spec = _graph(), load_spec("H100")
    done = run(PIPELINE, Analysis(g, spec))
    b = analyze(g, spec)
    assert done["fused_bytes"] == b.bytes_fused == (8 * 64 + 64 * 32 + 8 * 32) * 4
    assert dict(done["ops"]) == dict(b.flops)
    assert done["levels"]["fused"][0] == b.fused
