"""What a compiler made of a program, in the frontends' common terms (issue 33).

``torch.compile`` (Inductor) and ``jax.jit`` (XLA) turn a program into kernels that each compute
a part of it: a Triton or C++ kernel Inductor generated, an extern call it made (cuBLAS, cuDNN,
flash attention), an XLA fusion. Each frontend's compile module
(:mod:`solar.frontend.torch.compiled`, :mod:`solar.frontend.jax.compiled`) compiles the program,
reads the compiler's own provenance (Inductor's kernel -> post-grad node -> pre-grad node
mappings; the op metadata of XLA's HLO), traces the graph the compiler was handed into solar's
IR, and answers one :class:`CompiledTrace`: the IR program and, per generated kernel in launch
order, the IR kernels it computes (a part of) — or, for a kernel that maps to nothing, why.

Everything above the frontends (grouping, a bound per group, the headroom report) reads these
records and never asks which compiler made them. Nothing here imports torch or JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from solar.frontend.protocol import Trace

#: the modes ``torch.compile`` takes (``mode=``)
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class KernelKind(StrEnum):
    """Who wrote a generated kernel's code."""

    TRITON = "triton"  # a Triton kernel Inductor generated (GPU)
    CPP = "cpp"  # a C++ kernel Inductor generated (CPU)
    EXTERN = "extern"  # a library call the compiler made: cuBLAS, cuDNN, flash attention, ...
    XLA = "xla"  # an XLA fusion or custom call


@dataclass(frozen=True)
class GeneratedKernel:
    """One kernel of a compiled program, in launch order.

    ``name``: as the compiler names it (``triton_poi_fused_add_relu_0``, ``extern_kernels.mm``,
    ``loop_add_fusion``); ``launch``: the names its launches carry on the device or in the
    profiler (a Triton kernel's own name; an extern call's operator, ``aten::mm``);
    ``ir_kernels``: the IR kernels of :attr:`CompiledTrace.trace` it computes, whole or in
    part; ``ops``: the compiler-side operations it runs (Inductor's post-grad nodes, HLO
    instructions); ``sources``: the user's source lines they come from; ``unmapped``: why
    ``ir_kernels`` is empty (a copy the compiler added, an operation solar's trace has not);
    ``mapped_by``: ``"provenance"`` (the compiler's node mapping) or ``"source line"`` (its
    nodes carry no provenance: the IR kernels of the program's calls on the lines its stack
    traces name)."""

    name: str
    kind: KernelKind
    launch: tuple[str, ...]
    ir_kernels: tuple[str, ...]
    ops: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    unmapped: str = ""
    mapped_by: str = "provenance"


@dataclass(frozen=True)
class CompiledTrace:
    """A compiled program: solar's trace of the graph the compiler was handed, the kernels the
    compiler made of it in launch order, and the compiled callable (``run()`` runs it once on
    the inputs it was compiled for). ``compiler``: ``"inductor"`` or ``"xla"``; ``mode``: the
    compile mode (``default``, ``max-autotune``, ``reduce-overhead``); ``notes``: what the
    report must say about the mapping (graph breaks, provenance the compiler did not keep)."""

    trace: Trace
    kernels: tuple[GeneratedKernel, ...]
    compiler: str
    mode: str
    run: Callable[[], object] = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()
    source_code: str = field(default="", repr=False, compare=False)
