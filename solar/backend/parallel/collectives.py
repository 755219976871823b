"""Communication lower bounds of collectives among ``n`` GPUs of one kind.

The model: each GPU has full-duplex links of ``B`` bytes/s per direction to its peers (all its
links together: :attr:`solar.hw.interconnect.Interconnect.link_bandwidth`), data are not
compressed, and a collective on an ``M``-byte tensor (the whole tensor one group of ``n``
GPUs holds, or the partial sums each of them holds) takes at least ``bytes(kind, M, n) / B``,
where ``bytes`` is what one GPU must send or receive. Proof sketches, for any algorithm:

- **all-gather** (each GPU holds ``M/n``, all end with ``M``): a GPU lacks ``(n-1)M/n`` bytes
  of information, which it must receive: ``(n-1)M/n``.
- **reduce-scatter** (each GPU holds ``M`` of partial sums, ends with its ``M/n`` of the
  totals): every other GPU's total depends on this GPU's partials, so information about them
  (at least one element for each of its ``(n-1)M/n`` elements) must leave it: ``(n-1)M/n``.
- **all-reduce** without in-network reduction (the GPUs do the adds): for every element, its
  full sum is first formed on some GPU; before that, each of the ``n-1`` other GPUs must have
  sent a message carrying its contribution (a partial sum), and after it the ``n-1`` GPUs
  other than that one must each receive a message carrying the full sum. The two kinds of
  message differ (one is sent before the sum exists, one after), so all GPUs together send at
  least ``2(n-1)`` element-messages per element, and the busiest sends ``2(n-1)M/n``
  (Patarasuk & Yuan, JPDC 2009; the ring algorithm meets it).
- **all-reduce with in-network reduction** (NVLink SHARP: the switch adds): every GPU's
  contribution to every element must leave it, and every GPU must receive the others' sum of
  every element: ``M`` each way (less than ``2(n-1)M/n`` only for ``n > 2``).
- **all-to-all** (reshard: each GPU holds ``M/n`` and keeps ``1/n`` of it): it sends the other
  ``(n-1)/n`` of its part: ``(n-1)M/n²``.
- **send** (pipeline stage to stage): the ``M`` bytes cross one link: ``M``.

When the readers need only part of the tensor (a slice: ``F = f M`` bytes), only that part
must move: an all-reduce or reduce-scatter of ``F``; an all-gather of what a GPU lacks of it,
at least ``F - M/n``; an all-to-all is then not charged (the part may already be local).

Sends and receives use opposite directions of the links, so a GPU that sends ``s`` and
receives ``r`` bytes needs at least ``max(s, r) / B``; the collectives above are symmetric.
Latency (per-message start-up) is not counted: it only adds time.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "send")


def per_gpu_bytes(
    kind: str, tensor_bytes: float, n: int, in_network: bool = False, fraction: float = 1.0
) -> float:
    """Bytes one GPU must send (or receive) in collective ``kind`` over ``n`` GPUs on an
    ``tensor_bytes``-byte tensor of which the readers need ``fraction`` (see the module
    docstring for the proofs)."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective {kind!r}; one of {', '.join(KINDS)}")
    m = float(tensor_bytes)
    f = min(max(float(fraction), 0.0), 1.0) * m  # the part that must move
    if kind == "send":
        return f
    if n <= 1:
        return 0.0
    if kind == "all-reduce":
        return f if in_network else 2.0 * (n - 1) / n * f
    if kind == "reduce-scatter":
        return (n - 1) / n * f
    if kind == "all-gather":
        return (n - 1) / n * m if fraction >= 1 else max(0.0, f - m / n)
    return (n - 1) / (n * n) * m if fraction >= 1 else 0.0  # all-to-all


@dataclass(frozen=True)
class Collective:
    """One collective a plan cannot avoid, on one tensor."""

    tensor: str
    kind: str  # one of KINDS
    mesh: str  # "tp", "dp" or "pp" (which GPUs take part)
    n: int  # GPUs in the collective
    tensor_bytes: float  # M: the tensor one group holds
    kernel: int  # index of the kernel after which it happens (for pipeline stages)
    batch: bool = False  # the tensor has the batch axis (it shrinks with micro-batches)
    fraction: float = 1.0  # the part of the tensor its readers need

    def bytes_per_gpu(self, in_network: bool = False) -> float:
        return per_gpu_bytes(self.kind, self.tensor_bytes, self.n, in_network, self.fraction)

    def to_dict(self) -> dict:
        return dict(self.__dict__)
