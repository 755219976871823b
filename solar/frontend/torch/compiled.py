"""``torch.compile`` a program and say which part of it each generated kernel computes (issue 33).

The program is compiled by Inductor behind a thin backend that keeps what the compiler hands
over and what it returns, with Inductor's own provenance tracking on
(``config.trace.provenance_tracking_level = 1``):

- Dynamo's graph of the program (the *pre-grad* graph: one node per torch call) and, per
  graph it compiled, Inductor's mapping of each generated kernel (``name:handle``, in launch
  order) to the *post-grad* nodes it computes and of each post-grad node to the pre-grad nodes
  it came from (``CompiledFxGraph.inductor_provenance_mapping_str``);
- the wrapper code, whose ``# [Provenance debug handles] NAME:HANDLE`` lines give the launches
  in the order the wrapper runs them.

solar then traces Dynamo's graph itself (an ``fx.Interpreter`` run under
``preserve_node_meta``, so each aten node solar lowers names the pre-grad node it ran for), and
:attr:`Trace.kernels_of` takes each pre-grad node to the IR kernels lowered from it. A
generated kernel's IR kernels are those of the pre-grad nodes behind its post-grad nodes.
Numbers are those of ``solar.bound`` on the uncompiled program: the same aten calls are traced
(Dynamo's graph replays the program's torch calls), only parameters arrive as graph inputs.

AOTAutograd's cache is bypassed for the compile (a hit skips the compiler call that returns the
provenance); Inductor's FX graph cache keeps it and is left on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from solar.frontend.compiled import MODES, CompiledTrace, GeneratedKernel, KernelKind
from solar.frontend.torch.provenance import user_source
from solar.frontend.torch.trace import trace_torch

__all__ = ["MODES", "compile_torch", "extern_operator"]

#: post-grad nodes of the random seeds Inductor draws for a graph's random operations
_SEEDS = ("inductor_seeds", "inductor_lookup_seed", "inductor_random")

_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+):(\d+)\s*$")


@dataclass
class _Compiled:
    """One graph Dynamo handed to the backend, and what Inductor returned for it."""

    gm: fx.GraphModule
    example_inputs: list
    outputs: list = field(default_factory=list)  # CompiledFxGraph per inner compile


def compile_torch(
    fn: Callable | torch.nn.Module,
    inputs: object,
    *,
    kwargs: Mapping[str, object] | None = None,
    mode: str = "default",
    name: str | None = None,
    precision: str | None = None,
) -> list[CompiledTrace]:
    """Compile ``fn`` with ``torch.compile(mode=mode)`` on the real ``inputs`` (it runs once),
    and map the kernels Inductor generated onto solar's trace: one :class:`CompiledTrace` per
    graph Dynamo compiled (more than one where the program has graph breaks)."""
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    if mode not in MODES:
        raise ValueError(f"torch.compile mode {mode!r} is not one of {', '.join(MODES)}")
    graphs: list[_Compiled] = []

    def backend(gm: fx.GraphModule, example_inputs: list) -> Callable:
        rec = _Compiled(gm, list(example_inputs))
        graphs.append(rec)

        def inner(gm_: fx.GraphModule, ex: Sequence, **kw: object) -> object:
            out = compile_fx_inner(gm_, ex, **kw)
            rec.outputs.append(out)
            return out

        patches = {
            **list_mode_options(mode, dynamic=False),
            "trace.provenance_tracking_level": 1,
            "cpp.enable_kernel_profile": True,  # C++ kernels are named in a CPU profile
        }
        return compile_fx(gm, example_inputs, inner_compile=inner, config_patches=patches)

    args = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    kw = dict(kwargs or {})
    compiled = torch.compile(fn, backend=backend, dynamic=False)
    import torch._functorch.config as functorch_config

    with torch.no_grad(), functorch_config.patch(enable_autograd_cache=False):
        compiled(*args, **kw)

    def run() -> object:
        with torch.no_grad():
            return compiled(*args, **kw)

    base = name or getattr(fn, "__name__", None) or type(fn).__name__
    notes: list[str] = []
    if len(graphs) > 1:
        notes.append(
            f"torch.compile split the program into {len(graphs)} graphs (graph breaks): each is "
            "bounded alone, and the eager code between them is not"
        )
    out = []
    for i, rec in enumerate(graphs):
        gname = base if len(graphs) == 1 else f"{base}[graph {i}]"
        out.append(_map_graph(rec, gname, mode, precision, run, tuple(notes)))
    return out


def _map_graph(
    rec: _Compiled, name: str, mode: str, precision: str | None, run: Callable, notes: tuple
) -> CompiledTrace:
    """solar's trace of one Dynamo graph, and its generated kernels mapped onto it."""
    gm = rec.gm
    # the example inputs as they are (real or Dynamo's fakes): the trace reads their sizes,
    # dtypes and device only, and a constant Dynamo baked onto their device agrees with them
    trace = trace_torch(_interpreted(gm), list(rec.example_inputs), name=name, precision=precision)
    # pre-grad (Dynamo) node -> IR kernels, through the aten nodes solar lowered for it
    ir_of: dict[str, list[str]] = {}
    for node in trace.graph.graph.nodes:
        ks = trace.kernels_of.get(node.name)
        src = node.meta.get("from_node")
        if ks and src:
            ir_of.setdefault(src[0].name, []).extend(ks)
    line_of = {n.name: user_source(n.meta.get("stack_trace")) for n in gm.graph.nodes}
    _name_sources(trace, ir_of, line_of)
    kernels: list[GeneratedKernel] = []
    codes: list[str] = []  # the wrapper code of each compiled graph
    for out in rec.outputs:
        mapping = json.loads(getattr(out, "inductor_provenance_mapping_str", None) or "{}")
        stacks = json.loads(getattr(out, "inductor_provenance_stack_traces_str", None) or "{}")
        code = getattr(out, "source_code", "") or ""
        codes.append(code)
        kernels += _kernels(code, mapping, stacks, ir_of, line_of)
    extra = ()
    if not rec.outputs:
        extra = ("Inductor compiled this graph without returning its provenance",)
    return CompiledTrace(
        trace=trace,
        kernels=tuple(kernels),
        compiler="inductor",
        mode=mode,
        run=run,
        notes=notes + extra,
        source_code="\n".join(codes),
    )


def _name_sources(
    trace: object, ir_of: Mapping[str, list[str]], line_of: Mapping[str, str]
) -> None:
    """Give each IR kernel the user's line of the Dynamo node it was lowered for, where the
    trace (run from solar's interpreter, not the user's code) found none; and its module path
    without Dynamo's ``L['self']`` root."""
    line = {k: line_of.get(node, "") for node, ks in ir_of.items() for k in ks}
    for k in trace.program.kernels:  # type: ignore[attr-defined]
        if not k.source:
            k.source = line.get(k.name, "")
        k.module = _DYNAMO_ROOT.sub("", k.module)


#: the root of Dynamo's module paths: ``L['self'].layers[0]`` -> ``layers[0]``
_DYNAMO_ROOT = re.compile(r"^L\['[^']*'\]\.?")


def _kernels(
    code: str,
    mapping: Mapping,
    stacks: Mapping[str, list[str]],
    ir_of: Mapping[str, list[str]],
    line_of: Mapping[str, str],
) -> list[GeneratedKernel]:
    """The generated kernels of one compiled graph in launch order, each with the IR kernels
    of the pre-grad nodes behind the post-grad nodes it computes; a kernel whose nodes carry
    no provenance (a node a pattern rewrite made, such as the online-softmax reduction
    Inductor splits a large softmax into) gets those of the program's calls on the lines its
    stack traces name."""
    on_line: dict[str, list[str]] = {}
    for node, line in line_of.items():
        if line:
            on_line.setdefault(line, []).append(node)

    def ir_kernels(pre: list[str]) -> list[str]:
        return list(dict.fromkeys(k for p in pre for k in ir_of.get(p, ())))

    to_post: Mapping[str, list[str]] = mapping.get("cppCodeToPost", {})
    to_pre: Mapping[str, list[str]] = mapping.get("postToPre", {})
    launches = [m.groups() for m in map(_HANDLE.search, code.splitlines()) if m]
    if not launches:  # no wrapper lines: the mapping's own order (handles count up)
        keys = sorted(to_post, key=lambda k: int(k.rpartition(":")[2] or 0))
        launches = [tuple(k.rsplit(":", 1)) for k in keys]
    out = []
    for kname, handle in launches:
        post = list(to_post.get(f"{kname}:{handle}", ()))
        pre = list(dict.fromkeys(p for n in post for p in to_pre.get(n, ())))
        ir = ir_kernels(pre)
        lines = tuple(dict.fromkeys(line_of[p] for p in pre if line_of.get(p)))
        by = "provenance"
        if not ir and post and not pre:
            lines = tuple(
                dict.fromkeys(
                    line
                    for t in stacks.get(f"{kname}:{handle}", ())
                    if (line := user_source(t)) and line in on_line
                )
            )
            pre = [n for line in lines for n in on_line[line]]
            ir = ir_kernels(pre)
            by = "source line"
        kind = _kind(kname)
        why = ""
        if not ir:
            if not post:
                why = "Inductor recorded no graph node for it"
            elif all(n.startswith(_SEEDS) for n in post):
                why = "Inductor's own: it draws the seeds of the program's random operations"
            elif not pre:
                why = (
                    f"its nodes ({', '.join(post[:4])}) come from no call of the program: a "
                    "copy or layout change Inductor added"
                )
            else:
                why = (
                    f"it computes {', '.join(pre[:4])}, for which solar's trace runs no kernel "
                    "(a view, or a copy solar does not make)"
                )
        out.append(
            GeneratedKernel(
                name=kname,
                kind=kind,
                launch=_launch_names(kname, kind),
                ir_kernels=tuple(ir),
                ops=tuple(post),
                sources=lines,
                unmapped=why,
                mapped_by=by if ir else "provenance",
            )
        )
    return out


def _kind(name: str) -> KernelKind:
    if name.startswith("triton_"):
        return KernelKind.TRITON
    if name.startswith("cpp_"):
        return KernelKind.CPP
    return KernelKind.EXTERN


def extern_operator(name: str) -> str:
    """The profiler operator an extern call of Inductor's wrapper runs as:
    ``extern_kernels.mm`` -> ``aten::mm``,
    ``torch.ops.aten._scaled_dot_product_flash_attention.default`` ->
    ``aten::_scaled_dot_product_flash_attention``, ``torch.ops.mkldnn._linear_pointwise`` ->
    ``mkldnn::_linear_pointwise``."""
    parts = [p for p in name.split(".") if p not in ("torch", "ops", "default")]
    if parts and parts[0] == "extern_kernels":
        return "aten::" + parts[-1]
    if len(parts) >= 2:
        return f"{parts[0]}::{parts[1]}"
    return name


def _launch_names(name: str, kind: KernelKind) -> tuple[str, ...]:
    """What a launch of the kernel is called in a profile: a Triton or C++ kernel by its own
    name (a C++ kernel's record function adds a ``graph_N_`` prefix, dropped when launches are
    matched), an extern call by its operator."""
    if kind is KernelKind.EXTERN:
        return (extern_operator(name),)
    return (name,)


def _interpreted(gm: fx.GraphModule) -> Callable:
    """``gm`` run node by node with node meta preserved: each aten node traced for it records
    the node in ``meta["from_node"]``."""
    import torch.fx.traceback as fx_traceback

    def run_graph(*args: object) -> object:
        with fx_traceback.preserve_node_meta():
            return fx.Interpreter(gm).run(*args)

    run_graph.__name__ = "graph"
    return run_graph
