"""The sliding window of convolutions and pooling, dilation and padding included, written once
for both frontends: the input index ``s·p + d·r − pad`` of output loop ``p`` and tap loop ``r``
(stride ``s``, dilation ``d``), and the guards that keep it inside the input, so taps in the
padding read nothing and do no work.

Used by PyTorch's convolutions, pooling and their backward (:mod:`solar.frontend.torch.ops`)
and JAX's ``conv_general_dilated`` (:mod:`solar.frontend.jax.ops.contraction`, per residue
class of its lhs dilation).
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.ir.affine import Affine, AffineLike
from solar.ir.program import Guard


def range_guard(e: Affine, size: int, extents: dict[str, int]) -> list[Guard]:
    """``0 <= e < size`` where the loop box can leave that range, else nothing."""
    lo, hi = e.bounds(extents)
    return [Guard(e, 0, size)] if lo < 0 or hi >= size else []


def window(
    ps: Sequence[AffineLike],
    rs: Sequence[AffineLike],
    stride: Sequence[int],
    dilation: Sequence[int],
    padding: Sequence[int],
    sizes: Sequence[int],
    extents: dict[str, int],
) -> tuple[list[Affine], list[Guard]]:
    """``(spatial, guards)`` of a sliding window: the input index ``s·p + d·r − pad`` of each
    output loop ``p`` and tap loop ``r``, and the guards keeping it inside ``sizes`` (padding
    taps read nothing and do no work)."""
    spatial = [
        Affine.of(p) * s + Affine.of(r) * d - pad
        for p, r, s, d, pad in zip(ps, rs, stride, dilation, padding, strict=True)
    ]
    guards = [gd for e, n in zip(spatial, sizes, strict=True) for gd in range_guard(e, n, extents)]
    return spatial, guards
