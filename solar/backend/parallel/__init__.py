"""Speed-of-light bounds of one program on ``N`` GPUs of one spec (docs/overview.md, issue 15).

The pipeline of this package, each module one step:

- :mod:`.groups` — which ranks of the einsum graph can be split across GPUs (split groups);
- :mod:`.assign` — what splitting some groups forces: per-GPU work, bytes, memory and the
  collectives it cannot avoid (spec-independent);
- :mod:`.collectives` — communication lower bounds of collectives on the spec's interconnect;
- :mod:`.pipeline` — where to cut the kernel order into pipeline stages, and what crosses;
- :mod:`.bound` — the bound of one ``TP x PP x DP`` plan (:class:`~.bound.ParallelModel`);
- :mod:`.search` — the best plan over the factorisations of ``N``;
- :mod:`.result` — the result as data (:class:`~.result.ParallelBound`).

Layer: part of the backends; reads the einsum graph and the hardware spec (with its
``interconnect`` block), nothing above.
"""
