"""The einsum graph: a networkx view of the program for backends, inspection and export.

Layer: the deterministic lifter (:mod:`.lift`) reads only the IR (:mod:`solar.ir`) and fills
the frozen records that are the graph's schema (:mod:`.types`); the structure cache
(:mod:`.cache`) computes each distinct kernel's cost facts once. Imports nothing
above the IR.
"""

from solar.graph.lift import lift

__all__ = ["lift"]
