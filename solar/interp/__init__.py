"""Interpreters of the Affine Loop IR: run a program on real arrays of one framework.

The IR (:mod:`solar.ir`) is pure data: its operator and routine tables say what each operator
is and costs, not how to compute it. An interpreter supplies the computation. One exists today,
:mod:`solar.interp.torch` (torch tensors on CPU or CUDA), used by validation, the tests and the
counting oracle. Layer: above :mod:`solar.ir` (it imports the IR), below the frontends.
"""
