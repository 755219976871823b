"""Frontends: trace a framework's program and lower it to the Affine Loop IR (solar.ir).

One subpackage per framework (``solar.frontend.torch``, ``solar.frontend.jax``), both built on
one lowering framework (``solar.frontend.lowering``: the registry class, the base lowerer and
context, the shared errors and precision policy) and the neutral helpers of
``solar.frontend.common``. A frontend knows nothing about GPUs or bounds; it only produces IR,
plus the bindings a validator needs to feed the IR real values.

Layer: imports only the IR (:mod:`solar.ir`) and :mod:`solar.fmt`; nothing below the frontends
imports them.
"""
