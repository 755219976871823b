"""Loop-nest definitions of aten operators, one module per family.

Importing this package registers every lowering in :data:`solar.frontend.torch.LOWERINGS`.
To add an operator, add a row or a ``@lowering(torch.ops.aten.<op>.<overload>)`` function to
the family it belongs to (or to your own module): it receives the lowering context and the
operator's schema arguments, and emits statements with ``ctx.statement``.

- ``elementwise``: pointwise arithmetic, activations, comparisons (a table), triu/tril
- ``creation``: full/zeros/ones/fill, arange, empty, scalar_tensor
- ``matmul``: mm, bmm, mv, dot, addmm, baddbmm, addmv, addbmm
- ``reduction``: sum, mean, prod, amax/amin, max/min (full and ``dim``), argmax/argmin
- ``softmax``: _softmax, _log_softmax
- ``normalization``: native_layer_norm
- ``views``: views (generic, free), clone/_to_copy/copy_, cat, stack
"""

from solar.frontend.torch.ops import (  # noqa: F401  (registration side effects)
    creation,
    elementwise,
    matmul,
    normalization,
    reduction,
    softmax,
    views,
)
