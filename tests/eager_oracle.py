"""The frontend tests' oracle: trace a PyTorch callable, execute its IR on the same values and
compare every output with eager PyTorch.

Each test module keeps its own ``rand`` (its own seeds) and ``case``; the comparison lives here
once. ``tol(want) -> (rtol, atol, equal_nan)`` picks the tolerance of one output.
"""

from __future__ import annotations

import torch
from torch.utils import _pytree as pytree

from solar.frontend.torch import trace_torch
from solar.graph.lift import lift
from solar.interp.torch.execute import execute

TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float64: 1e-10}


def by_dtype(w: torch.Tensor) -> tuple[float, float, bool]:
    """:data:`TOL` by dtype (1e-5 otherwise), NaNs equal."""
    tol = TOL.get(w.dtype, 1e-5)
    return tol, tol, True


def by_dtype_and_magnitude(w: torch.Tensor) -> tuple[float, float, bool]:
    """:func:`by_dtype`, bf16's absolute error relative to the magnitude (eager CPU rounds
    partial sums too)."""
    tol, atol, nan = by_dtype(w)
    return tol, atol * max(1.0, w.abs().max().item()) if w.dtype == torch.bfloat16 else atol, nan


def exact(w: torch.Tensor) -> tuple[float, float, bool]:
    """Copies and indices: bit-exact, NaNs not equal."""
    return 0.0, 0.0, False


def outputs(value: object) -> list[torch.Tensor]:
    """The tensors of a (nested) result, flattened in order."""
    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


def compare(got: dict, want: list[torch.Tensor], names: list[str], tol=by_dtype) -> None:
    """``got[name]`` (IR outputs) against ``want`` (eager), by position, with ``tol``."""
    assert len(want) == len(names)
    for name, w in zip(names, want, strict=True):
        g = got[name]
        assert g.shape == w.shape and g.dtype == w.dtype, (name, g.shape, g.dtype, w.shape)
        rtol, atol, equal_nan = tol(w)
        torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=equal_nan, msg=name)


def check(fn, *inputs, kernels=None, reference=None, tol=by_dtype, lifted=False, observe=False):
    """Trace ``fn(*inputs)``, run the IR on the same values, compare every output with eager
    PyTorch (``reference`` instead of ``fn`` for operators without a CPU kernel; eager runs on
    copies, so in-place updates of inputs are compared as outputs); optionally check the
    kernels' operators, and (``lifted``) that the program lifts, costing every statement.
    ``observe``: data-dependent sizes as the inputs produce them. Returns the trace."""
    trace = trace_torch(fn, inputs, observe=observe)
    got = execute(trace.program, trace.values(fn, inputs))
    clones = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        want = outputs((reference or fn)(*clones))
    compare(got, want, trace.output_names, tol)
    if kernels is not None:
        assert [k.op for k in trace.program.kernels] == kernels, str(trace.program)
    if lifted:
        lift(trace.program)
    return trace


def trace_pre_dispatch(fn, *inputs):
    """Lower ``fn`` traced at the pre-dispatch level: how a CPU-only test sees the operators
    that a CUDA build records but a CPU build decomposes (``_fused_rms_norm`` has a CUDA
    kernel and a CompositeImplicit definition elsewhere). Returns the program, the values of
    its inputs and its output names."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from solar.frontend.torch.lower import Lowerer
    from solar.frontend.torch.precision import torch_policy

    gm = make_fx(fn, tracing_mode="fake", pre_dispatch=True)(*inputs)
    lowerer = Lowerer(gm, "pre_dispatch", torch_policy())
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    names = [lowerer.declare_input(n, n.name, "input", n.name).name for n in placeholders]
    lowerer.run()
    out_names = lowerer.outputs()
    lowerer.program.outputs = list(dict.fromkeys(out_names))
    return lowerer.program, dict(zip(names, inputs, strict=True)), out_names
