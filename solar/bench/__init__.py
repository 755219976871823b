"""Analysis speed and memory: ``python -m solar.bench`` (see :mod:`solar.bench.__main__`).

:mod:`~solar.bench.models` builds the workloads without allocating weights,
:mod:`~solar.bench.stages` measures one stage of one workload in a fresh process,
:mod:`~solar.bench.report` writes the tables and checks the targets.

Layer: the top, beside the CLI; it measures the public API.
"""
