"""In-place view operators (``unsqueeze_``, ``squeeze_``, ``transpose_``, ``t_``; ``swapdims_``
traces as ``transpose_``): they change only ``self``'s sizes and strides, never its data.
Lowered like every view (``lower_view`` in :mod:`solar.frontend.torch.lower`): the node's
output is a view of ``self``'s storage with the layout the trace recorded, and later uses of
``self`` (which the trace routes through this node) read that view. No kernel, no bytes."""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, lower_view
from solar.frontend.torch.registry import lowering

aten = torch.ops.aten


@lowering(
    aten.unsqueeze_.default,
    aten.squeeze_.default,
    aten.squeeze_.dim,
    aten.squeeze_.dims,
    aten.transpose_.default,
    aten.t_.default,
)
def metadata_inplace(ctx: LoweringContext, x: object, *args: object) -> None:
    """``self`` with new sizes and strides: a view of its storage, as traced."""
    lower_view(ctx)
