"""The torch interpreter of the Affine Loop IR.

- :mod:`~solar.interp.torch.execute`: :func:`execute` a program on torch tensors, vectorised;
  one runner per statement kind (:mod:`~solar.interp.torch.kinds`) over the shared data access
  of :mod:`~solar.interp.torch.statement`;
- :mod:`~solar.interp.torch.scalar`: the torch function of every scalar operator, reduction
  and scan;
- :mod:`~solar.interp.torch.routine_kernels`: the torch implementation of every extern routine;
- :mod:`~solar.interp.torch.dtypes`: IR dtype names to torch dtypes;
- :mod:`~solar.interp.torch.oracle`: the counting oracle (counts by enumeration, on the
  values the executor computes).
"""
