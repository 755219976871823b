"""Numbers that carry their formula: the bottom layer every stage computes with.

:mod:`.size` holds :class:`~solar.algebra.size.Size` (an ``int``) and
:class:`~solar.algebra.size.Real` (a ``float``) that carry their sympy expression of the size
symbols, and the guards a computation decides on them; :mod:`.prove` proves relations for every
size, :mod:`.memo` keeps memo caches exact for sizes, :mod:`.region` is where a formula holds,
:mod:`.walk` and :mod:`.template` rebuild objects at other sizes, :mod:`.numeric` compiles
expressions for evaluation at many points, :mod:`.total` sums symbolic times in one pass.
Imports nothing of solar above it (docs/architecture.md).
"""
