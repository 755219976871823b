"""On a real device (DESIGN.md §7): numerical validation of the IR against the source program
(:mod:`.validate`), timing and per-kernel profiling (:mod:`.measure`), headroom and classified
violations (:mod:`.headroom`), measured ceilings (:mod:`.calibrate`) and the SOL score
(:mod:`.score`).

The public functions are exported from :mod:`solar` itself (``solar.validate``,
``solar.headroom``, ``solar.calibrate``, ``solar.sol_score``); this package does not re-export
them, so its submodules keep their names.
"""

from solar.gpu.score import sol_score

__all__ = ["register", "sol_score"]


def register(subparsers) -> None:
    """Add ``solar validate``, ``solar headroom`` and ``solar calibrate`` to the CLI."""
    from solar.gpu import calibrate, headroom_batch, validate

    validate.register(subparsers)
    headroom_batch.register(subparsers)
    calibrate.register(subparsers)
