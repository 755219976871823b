"""The einsum graph: a networkx view of the program for backends, inspection and export."""

from solar.graph.lift import lift

__all__ = ["lift"]
