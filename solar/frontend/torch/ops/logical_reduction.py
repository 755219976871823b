"""``any`` and ``all`` (full, over one dim, over a list of dims): a boolean reduction of
``x != 0``, ``max`` for ``any`` and ``min`` for ``all``. ONE kernel, one compare per element
and the reduction's combines (an empty ``dim`` list reduces nothing: ``x != 0`` per element;
uint8 inputs give uint8 outputs, as PyTorch's do).
"""

from __future__ import annotations

import torch

from solar.frontend.torch.lower import LoweringContext, T
from solar.frontend.torch.ops.conventions import norm_dims
from solar.frontend.torch.ops.reduction import Nest
from solar.frontend.torch.registry import lowering
from solar.ir.scalar import Const, call

aten = torch.ops.aten

# ``_is_all_true``/``_is_any_true``: a bool tensor's all/any as a 0-d tensor (the checks of
# torch.distributions' argument validation)
ANY = (aten.any.default, aten.any.dim, aten.any.dims, aten._is_any_true.default)
ALL = (aten.all.default, aten.all.dim, aten.all.dims, aten._is_all_true.default)


@lowering(*ANY, *ALL)
def logical_reduction(ctx: LoweringContext, x: T, dim=None, keepdim: bool = False) -> None:
    out = ctx.out()
    empty = dim is not None and not isinstance(dim, int) and len(dim) == 0
    n = Nest(x, [] if empty else norm_dims(dim, x.ndim), bool(keepdim))  # dim=[]: elementwise
    true = call("ne", ctx.load(x, n.names), Const(0))
    value = true if out.dtype == "bool" else call("cast", true, dtype=out.dtype)
    reduce = "max" if ctx.op in ANY else "min"
    if n.count == 0:  # no terms: any is false, all is true
        kept = [d[:2] for d in n.dims if not d[2]]
        ctx.statement(kept, out, n.out_index, Const(int(reduce == "min")))
        return
    ctx.statement(n.dims, out, n.out_index, value, reduce=reduce)
