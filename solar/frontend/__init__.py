"""Frontends: trace a framework's program and lower it to the Affine Loop IR (solar.ir).

One subpackage per framework (``solar.frontend.torch``, ``solar.frontend.jax``) behind one
protocol (``solar.frontend.protocol``: the frozen ``Trace`` every frontend returns, the ``Feed``
that connects it to real arrays, the ``Frontend`` interface) and one table of frontends
(``solar.frontend.frameworks``: which framework a model and its inputs belong to, imported only
when a trace needs it). Both lower through one lowering framework (``solar.frontend.lowering``:
the registry class, the base lowerer and context, errors, precision policy) and one lowering
library written against its context (casts, pointwise statements, extern rows, the
convolution window, ``solar.frontend.routines``). A frontend knows nothing about GPUs or
bounds; it only produces IR, plus the bindings a validator needs to feed the IR real values,
and changes nothing process-wide (``solar.frontend.torchvision_ops`` says when its import hook
is installed).

Layer: imports only the IR (:mod:`solar.ir`) and :mod:`solar.fmt`; nothing below the frontends
imports them.
"""
