"""On a real device (docs/validation.md): numerical validation of the IR against the source program
(:mod:`.validate`), timing and per-kernel profiling (:mod:`.measure`), headroom and classified
violations (:mod:`.headroom`), measured ceilings (:mod:`.calibrate`) and the SOL score
(:mod:`.score`) of solutions as SOL-ExecBench publishes them (:mod:`.solution`: read and
built; :mod:`.correctness`: outputs within a workload's tolerance; :mod:`.defences`: gamed
timings caught; :mod:`.trace`: its trace records).

Layer: beside the questions, above the analysis API (it bounds what it measures) and the
executors of :mod:`solar.questions.executors` (batches on Ray); below the views and the CLI.
Its reports are plain dataclasses; their text and plots live in :mod:`solar.report`.

The public functions are exported from :mod:`solar` itself (``solar.validate``,
``solar.headroom``, ``solar.calibrate``, ``solar.sol_score``); this package does not re-export
them, so its submodules keep their names.
"""

from solar.gpu.score import sol_score

__all__ = ["sol_score"]
