"""Frontends: trace a framework's program and lower it to the Affine Loop IR (solar.ir).

One subpackage per framework (``solar.frontend.torch``). A frontend knows nothing about GPUs or
bounds; it only produces IR, plus the bindings a validator needs to feed the IR real values.
"""
