"""A ``jax.jit`` program as XLA compiled it: each kernel XLA launches, mapped to the jaxpr
equations it computes and from them to solar's IR kernels (issue 33; the records are
:mod:`solar.frontend.compiled`'s).

How the mapping is made:

1. solar traces the program (:func:`~solar.frontend.jax.trace.trace_jax`); the trace's
   ``kernels_of`` maps each equation's key (:mod:`~solar.frontend.jax.equation_keys`:
   ``"3"``, ``"3/1"``) to the IR kernels it was lowered into.
2. The same jaxpr is compiled with ``jax.jit(...).lower(...).compile()``, each equation's key
   appended to its name stack (:func:`~solar.frontend.jax.equation_keys.tag`). ``jax.jit(fn)``
   compiles exactly this jaxpr; names are metadata, which XLA's fusion does not read, so the
   kernels are the ones ``jax.jit(fn)`` gets.
3. Every kernel-launching instruction of the optimized HLO (:mod:`.hlo_text`: a fusion, a
   custom call such as a cuBLAS GEMM, an unfused copy or dot; the kernels of a while loop's
   body in its place) becomes one :class:`~solar.frontend.compiled.GeneratedKernel`; the keys
   in its instructions' ``op_name`` metadata give its equations, and ``kernels_of`` their IR
   kernels. An equation lowered to no IR kernel of its own (a scan lowered as one looped
   kernel) maps through the equation that holds it. A kernel none of whose instructions map
   to an IR kernel says why (a copy or layout change XLA added, views, loop counters).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from solar.frontend.compiled import CompiledTrace, GeneratedKernel, KernelKind
from solar.frontend.jax.equation_keys import equations, keys_of_op_name, parent, tag
from solar.frontend.jax.hlo_text import HloModuleText, Instruction, parse_hlo
from solar.frontend.jax.lower import user_source
from solar.frontend.jax.trace import _is_abstract, _is_array, _leaves, prepare, trace_jax
from solar.frontend.protocol import Trace

NAMES_NOTE = (
    "XLA compiled solar's jaxpr of the program with each equation's place in its name stack "
    "(metadata only: the fusions are jax.jit's own); kernels are mapped to equations through "
    "the HLO's op_name metadata"
)


def compile_jax(
    fn: Callable[..., object] | object,
    args: object,
    kwargs: Mapping[str, object] | None = None,
    *,
    name: str | None = None,
    **trace_options: Any,
) -> CompiledTrace:
    """Compile ``fn(*args, **kwargs)`` with XLA (``jax.jit``) on the default backend and map
    every kernel it launches to the IR kernels of solar's trace of the same program.

    ``fn`` and ``args`` are what :func:`~solar.frontend.jax.trace.trace_jax` takes (a Flax
    module included); ``kwargs`` are closed over (their arrays are constants of the program).
    ``trace_options`` go to ``trace_jax`` (``precision``, ``weights``, ``scan``). The result's
    ``run()`` runs the compiled program once on ``args``, waits for it and answers its
    flattened outputs (a list, in the trace's ``output_names`` order); ``source_code`` is the
    optimized HLO's text. Kernels inside a while loop (a ``scan``, a ``fori_loop``) are listed
    once, where the loop runs: its condition's, then its body's."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    if trace_options.get("symbolic") is not None:
        raise ValueError(
            "compile_jax compiles the program at its traced sizes: drop symbolic= (XLA "
            "compiles one size at a time)"
        )
    call = fn
    if kwargs:
        call = _with_kwargs(fn, dict(kwargs))
    trace = trace_jax(call, args, name=name, **trace_options)
    closed = trace.graph
    prep = prepare(call, args, trace_options.get("weights"))
    arrays = [leaf for _, leaf in _leaves(prep.args) if _is_array(leaf)]
    jitted = jax.jit(jaxpr_as_fun(tag(closed)))
    compiled = jitted.lower(*arrays).compile()
    text = compiled.as_text()
    module = parse_hlo(text)
    kernels = tuple(_generated(module, trace, equations(closed)))
    notes = [NAMES_NOTE, f"XLA backend: {jax.default_backend()}"]
    missing = _not_computed(trace, kernels)
    if missing:
        notes.append(
            "IR kernels no XLA kernel is mapped to: "
            + ", ".join(missing)
            + " (XLA kept no op_name naming their equations)"
        )

    def run() -> object:
        if any(_is_abstract(a) for a in arrays):
            raise ValueError(
                "the program was compiled for ShapeDtypeStructs; running it needs concrete "
                "arrays: compile it with real inputs"
            )
        return jax.block_until_ready(compiled(*arrays))

    return CompiledTrace(trace, kernels, "xla", "jit", run, notes=tuple(notes), source_code=text)


def _with_kwargs(fn: object, kwargs: dict[str, object]) -> Callable[..., object]:
    def call(*xs: object) -> object:
        return fn(*xs, **kwargs)  # type: ignore[operator]

    call.__name__ = getattr(fn, "__name__", type(fn).__name__)
    return call


def _generated(
    module: HloModuleText, trace: Trace, eqns: Mapping[str, object]
) -> list[GeneratedKernel]:
    """One record per launching instruction, in execution order."""
    position = {k.name: i for i, k in enumerate(trace.program.kernels)}
    out = []
    for ins in module.launches():
        inside = module.inside(ins)
        keys = list(dict.fromkeys(k for i in inside for k in keys_of_op_name(i.op_name)))
        ir: set[str] = set()
        for key in keys:
            ir.update(_ir_kernels(trace, key))
        sources = tuple(
            dict.fromkeys(
                s for s in (user_source(eqns[k].source_info) for k in keys if k in eqns) if s
            )
        )
        out.append(
            GeneratedKernel(
                name=ins.name,
                kind=KernelKind.XLA,
                launch=tuple(dict.fromkeys((ins.name, _kernel_symbol(ins.name)))),
                ir_kernels=tuple(sorted(ir, key=position.__getitem__)),
                ops=tuple(_op(i) for i in inside),
                sources=sources,
                unmapped="" if ir else _why_unmapped(ins, inside, keys, eqns),
            )
        )
    return out


def _op(ins: Instruction) -> str:
    """An HLO instruction as :attr:`GeneratedKernel.ops` lists it: ``tanh.0 (tanh, equation
    3)``, its equations' keys (:mod:`~solar.frontend.jax.equation_keys`; several, space
    separated, for an instruction XLA merged from several)."""
    keys = keys_of_op_name(ins.op_name)
    if not keys:
        return f"{ins.name} ({ins.opcode})"
    return f"{ins.name} ({ins.opcode}, equation {' '.join(keys)})"


def equations_of(kernel: GeneratedKernel) -> tuple[str, ...]:
    """The keys of the jaxpr equations an XLA kernel computes (from its ``ops``, as
    :func:`_op` writes them), in the order its instructions name them: a finer mapping than
    its ``ir_kernels`` (XLA recomputes cheap producers in several fusions; solar's IR kernel
    groups them with a heavy anchor)."""
    keys: list[str] = []
    for op in kernel.ops:
        _, sep, named = op.rstrip(")").partition(", equation ")
        if sep:
            keys.extend(named.split(" "))
    return tuple(dict.fromkeys(keys))


def _ir_kernels(trace: Trace, key: str) -> tuple[str, ...]:
    """The IR kernels of equation ``key``, or of the nearest equation holding it that has
    some (a looped scan's body equations: the scan's kernel)."""
    k: str | None = key
    while k is not None:
        found = trace.kernels_of.get(k)
        if found:
            return found
        k = parent(k)
    return ()


def _kernel_symbol(name: str) -> str:
    """The name XLA's GPU backend gives an instruction's kernel (``loop_add_fusion.1`` ->
    ``loop_add_fusion_1``: LLVM function names carry no dots or dashes)."""
    return name.replace(".", "_").replace("-", "_")


def _why_unmapped(
    ins: Instruction, inside: list[Instruction], keys: list[str], eqns: Mapping[str, object]
) -> str:
    """Why a kernel computes no IR kernel: XLA made it of nothing the program wrote, or
    of equations that solar lowers to no kernel."""
    if not keys:
        ops = ", ".join(dict.fromkeys(i.opcode for i in inside))
        return (
            f"a {ins.opcode} XLA added ({ops}; no jaxpr equation in its metadata): a copy, a "
            "layout change, a dtype conversion or a loop's bookkeeping"
        )
    named = ", ".join(f"{k}: {_prim(eqns.get(k))}" for k in keys)
    return (
        f"its equations ({named}) lowered to no IR kernel in solar's trace (views, values "
        "known while tracing, loop control)"
    )


def _prim(eqn: object) -> str:
    return getattr(getattr(eqn, "primitive", None), "name", "?")


def _not_computed(trace: Trace, kernels: tuple[GeneratedKernel, ...]) -> list[str]:
    """IR kernels of the trace that no generated kernel computes, in program order."""
    done = {k for g in kernels for k in g.ir_kernels}
    return [k.name for k in trace.program.kernels if k.name not in done]
