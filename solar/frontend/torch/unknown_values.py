"""Python numbers read from tensors whose values nothing gives: unknown numbers that may only
become tensor data.

A float read from a tensor (``.item()``, a tensor passed where a number is expected) whose value
neither the model (:mod:`solar.frontend.torch.model_reads`: a model built on ``meta`` has none)
nor an observed run gives is traced, as PyTorch's own tracers do, as an unbacked ``SymFloat``: a
number with no value. A bound cannot depend on it, so it may go only where its value changes no
work: the value of a tensor made from it (``full``, ``new_full``, ``fill_``, ``masked_fill``,
``scalar_tensor``, ``where`` with a number, ...), possibly after Python arithmetic on it. Every
other use stops the trace with the one-line data-dependent error, as before: a branch or a size on
it (PyTorch refuses to guard on it), or a number an operator's cost could depend on (``x * v``,
``pow(x, v)``). The IR fills such a tensor with NaN, and the report says which values were
unknown.
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx

from solar.frontend.torch.scalars import SCALAR_FUNCTIONS

aten = torch.ops.aten

UNKNOWN = math.nan  # the IR's value of an unknown number (a fill: no work depends on it)
WHY = (
    "unknown (read from a tensor with no values: a model built on meta, or data); traced as an "
    "unknown number that only fills tensors, whose value changes no work (NaN in the IR)"
)

#: operators whose listed argument positions a number may take without changing any work
FILLS: dict[object, tuple[int, ...]] = {
    aten.full.default: (1,),
    aten.new_full.default: (2,),
    aten.full_like.default: (1,),
    aten.fill.Scalar: (1,),
    aten.fill_.Scalar: (1,),
    aten.masked_fill.Scalar: (2,),
    aten.masked_fill_.Scalar: (2,),
    aten.index_fill.int_Scalar: (3,),
    aten.index_fill_.int_Scalar: (3,),
    aten.scalar_tensor.default: (0,),
    aten.where.ScalarOther: (2,),
    aten.where.ScalarSelf: (1,),
    aten.where.Scalar: (1, 2),
}


def unknown_number(fake_mode: object, arg: torch.Tensor) -> torch.SymFloat | None:
    """An unbacked ``SymFloat`` for ``arg.item()`` of a float tensor, or None where the trace
    has no shape environment or ``arg`` is not a float tensor."""
    env = getattr(fake_mode, "shape_env", None)
    if env is None or not arg.dtype.is_floating_point:
        return None
    return env.create_unbacked_symfloat()


def is_unknown(node: object) -> bool:
    """Whether ``node`` is a read that :func:`unknown_number` answered."""
    return (
        isinstance(node, fx.Node)
        and node.target is aten._local_scalar_dense.default
        and isinstance(node.meta.get("val"), torch.SymFloat)
    )


def check_fills_only(gm: fx.GraphModule) -> None:
    """Stop with the data-dependent error where an unknown number (or Python arithmetic on it)
    reaches anything but a fill position of :data:`FILLS`."""
    from solar.frontend.torch.provenance import node_source
    from solar.frontend.torch.registry import DataDependentOperatorError

    for read in [n for n in gm.graph.nodes if is_unknown(n)]:
        stack, seen = [read], set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            for user in node.users:
                if user.target in SCALAR_FUNCTIONS and isinstance(
                    user.meta.get("val"), torch.SymFloat
                ):
                    stack.append(user)
                    continue
                fills = FILLS.get(user.target, ())
                elsewhere = [a for k, a in enumerate(user.args) if k not in fills]
                elsewhere += list(user.kwargs.values())
                if any(k < len(user.args) and user.args[k] is node for k in fills) and not any(
                    a is node for a in elsewhere
                ):
                    continue
                # the message a read with no value always had, at the line that read it
                where = node_source(read)
                raise DataDependentOperatorError(aten._local_scalar_dense.default, where)
