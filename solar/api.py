"""The analysis API: ``solar.trace``, ``solar.bound`` (one GPU: a :class:`Bound`),
``solar.plan`` (N GPUs: a :class:`ParallelBound`), ``solar.bound_program``, and the
trace-once/analyse-many pair (:func:`trace_and_lift`, :func:`bound_graph`) the questions on top
of a bound (compare, provision, sweep) are built from. Each entry point answers one type; the
framework is told by the types of the model and inputs, or by ``framework=``
(:func:`framework_of`).

Layer: above the frontends, the graph and the backends; below the questions, the device-side
modules, the views and the CLI.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from solar.backend import analyze
from solar.backend.parallel.model import ParallelModel, link_bandwidth
from solar.backend.parallel.parallel_bound import ParallelBound
from solar.backend.parallel.search import best_plan
from solar.backend.result import Bound
from solar.frontend.compiled import CompiledTrace
from solar.frontend.frameworks import FRONTENDS, frontend_of, owners
from solar.frontend.program_errors import ProgramError as ProgramError  # re-exported
from solar.frontend.program_errors import located
from solar.frontend.protocol import SymbolicShapeError as SymbolicShapeError  # re-exported
from solar.frontend.protocol import Trace
from solar.graph import lift
from solar.hw import load_spec
from solar.ir.program import Program

FRAMEWORKS = tuple(FRONTENDS)


def framework_of(model, inputs, kwargs=None, framework: str | None = None) -> str:
    """``"torch"`` or ``"jax"``: ``framework`` when given, else what the types of the model
    and its inputs say (:func:`solar.frontend.frameworks.frontend_of`). Raises a one-line error
    naming ``framework=`` when they say nothing (a function of no tensors, numpy inputs) or
    say both."""
    return frontend_of(model, inputs, kwargs, framework).name


class InputError(TypeError):
    """An input solar cannot trace (a numpy array, a list of numbers): names it and says what
    to pass instead."""


def _check_inputs(model, inputs, kwargs, framework: str | None = None) -> None:
    """Reject inputs no frontend takes before tracing, naming the input (not a ValueError
    from deep inside when a numpy array meets ``==``). A JAX program may take numpy arrays
    (JAX converts them); it is one when ``framework="jax"``, a JAX array or a Flax module
    says so."""
    if framework is not None:
        framework_of(model, inputs, kwargs, framework)  # a bad keyword is named first
    if framework == "jax" or (framework is None and "jax" in owners(model, inputs, kwargs)):
        return
    torch_model = FRONTENDS["torch"].owns(model)
    hint = "" if torch_model else ", or framework='jax' for a JAX function of numpy arrays"
    leaves = [(f"input {i}", x) for i, x in enumerate(_top_level(inputs))]
    leaves += [(f"keyword input {k!r}", x) for k, x in (kwargs or {}).items()]
    for what, x in leaves:
        kind = type(x)
        if kind.__module__ == "numpy" and kind.__name__ == "ndarray":
            raise InputError(
                f"{what} is a numpy array {tuple(x.shape)} {x.dtype}; solar traces PyTorch "
                "tensors or JAX arrays: pass torch.from_numpy(x) (or jnp.asarray(x))" + hint
            )


def _top_level(inputs) -> list:
    """The positional inputs as the program receives them."""
    return list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]


def trace(
    model,
    inputs: Sequence | object,
    *,
    kwargs: dict | None = None,
    precision: str | None = None,
    name=None,
    framework: str | None = None,
    **sizes,
) -> Trace:
    """Trace a program into the Affine Loop IR: a :class:`~solar.frontend.protocol.Trace`
    (``.program`` is the IR). PyTorch modules and functions of tensors (any structure of
    them: dicts, dataclasses, KV-cache objects; ``kwargs`` are keyword arguments), JAX
    functions of arrays or ``jax.ShapeDtypeStruct`` s (pytrees welcome) and Flax modules are
    supported. ``framework`` (``"torch"`` or ``"jax"``) says which when the types of the
    model and inputs cannot (:func:`framework_of`: a step function of no tensors, numpy
    inputs). ``sizes``: ``observe`` and ``routing`` of :func:`bound` (PyTorch). One trace
    runs at a time in a process (the frameworks' tracers are not thread-safe); what follows it
    (lifting, the bounds) runs in parallel in several threads."""
    _check_inputs(model, inputs, kwargs, framework)
    fw = frontend_of(model, inputs, kwargs, framework)
    with _TRACE_LOCK, _fake_tensor_log_quiet():
        try:
            return fw.trace(model, inputs, kwargs=kwargs, precision=precision, name=name, **sizes)
        except Exception as e:
            error = located(e, model)
            if error is None:
                raise
            raise error from e


# The frameworks' tracers keep process-wide state (torch.fx's patcher, fake-tensor modes, the
# logger level set below): one trace at a time; lowering's result, lifting and the bounds of
# several threads run at once.
_TRACE_LOCK = threading.RLock()


@contextmanager
def _fake_tensor_log_quiet() -> Iterator[None]:
    """Silence the traceback PyTorch logs when a fake-tensor kernel fails (about 20 lines per
    shape mismatch): the error raised says it in one line, its cause keeps the traceback."""
    import logging

    log = logging.getLogger("torch._subclasses.fake_tensor")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def trace_and_lift(
    model,
    inputs,
    *,
    kwargs=None,
    precision: str | None = None,
    name=None,
    notes=(),
    framework: str | None = None,
    **sizes,
):
    """Trace and lift once: ``(IR program, einsum graph)`` — where the IR and the graph are
    (a :class:`Bound` keeps neither). The trace's assumptions (autocast, precision policy,
    train mode, ...) and ``notes`` (how the program was built) travel with the graph (its
    :class:`~solar.graph.types.GraphInfo`'s ``trace_notes``) into every bound
    :func:`bound_graph` makes of it."""
    traced = trace(
        model,
        inputs,
        kwargs=kwargs,
        precision=precision,
        name=name,
        framework=framework,
        **sizes,
    )
    notes = (*notes, *traced.assumptions)
    g = lift(traced.program, verified=True, notes=notes)  # the frontend verified it
    return traced.program, g


def lift_problem(problem, *, precision: str | None = None):
    """:func:`trace_and_lift` of a loaded problem file (:class:`solar.problem.Problem`), its
    build notes included."""
    try:
        _check_inputs(problem.model, problem.inputs, None)
    except InputError as e:  # say which file's get_inputs() returned it
        raise InputError(f"{Path(problem.path).name}: get_inputs() {e}") from None
    return trace_and_lift(
        problem.model,
        problem.inputs,
        precision=precision,
        name=problem.name,
        notes=getattr(problem, "notes", ()),
    )


def bound_graph(g, spec) -> Bound:
    """Bounds of an already lifted graph on one spec (a HardwareSpec, name or path); the
    graph holds every fact the bounds read (a Bound is data: it keeps neither graph nor IR)."""
    return analyze(g, load_spec(spec), notes=list(g.info.trace_notes) or None)


def bound_program(program: Program, hw="H100") -> Bound:
    """Bounds of an already-built IR program (any frontend)."""
    return bound_graph(lift(program), hw)


#: the keywords of :func:`plan` that :func:`bound` names it for
_PLAN_KEYWORDS = ("gpus", "tp", "pp", "dp", "micro_batches", "batch", "split", "level")


def _sizes(observe: bool, routing) -> dict:
    sizes: dict = {"observe": True} if observe else {}
    if routing != "any":
        sizes["routing"] = routing
    return sizes


def _graph(model, inputs, kwargs, precision, name, framework, observe, routing):
    """The einsum graph :func:`bound` and :func:`plan` analyse (their keywords, as given)."""
    _, g = trace_and_lift(
        model,
        inputs,
        kwargs=kwargs,
        precision=precision,
        name=name,
        framework=framework,
        **_sizes(observe, routing),
    )
    return g


def bound(
    model,
    inputs,
    hw="H100",
    *,
    kwargs=None,
    precision: str | None = None,
    name=None,
    framework: str | None = None,
    observe: bool = False,
    routing="any",
    symbolic=None,
    **plan_keywords,
) -> Bound:
    """Speed-of-light bounds of ``model(*inputs, **kwargs)`` on one GPU ``hw`` (a catalogue
    name or alias such as ``"H100"``, a YAML path, a dict or a HardwareSpec): a :class:`Bound`.

    ``inputs`` may hold any structure of tensors (dicts, dataclasses, a Hugging Face KV cache);
    every tensor of the result is an output. ``precision`` overrides the framework's fp32
    matmul policy: ``"tf32"`` or ``"ieee"``. ``framework`` (``"torch"``, ``"jax"``) is
    needed only where the types of the model and inputs do not say it. Tracing runs on fake
    tensors (PyTorch) or abstract values (JAX): meta-device models and
    ``jax.ShapeDtypeStruct`` inputs are analysed without allocating weights.

    A size that depends on tensor values (``nonzero``, boolean masks, ``unique``, ...) is
    taken at its smallest possible value, so the bound holds for every input;
    ``observe=True`` runs the program once on ``inputs`` (real tensors and weights) and uses
    the sizes it produced. ``routing`` splits a mixture-of-experts layer's tokens over its
    experts (``torch._grouped_mm``): ``"any"`` (default: valid for every routing, the fewest
    experts a top-k router touches), ``"balanced"`` or a list of per-expert token counts. The
    bound's assumptions list every size taken.

    ``symbolic={"batch": (0, 0), "seq": (0, 1)}`` makes sizes symbols (name -> (input index,
    dim), or a list of such places for a size several inputs share): the result is a
    :class:`~solar.symbolic.symbolic_bound.SymbolicBound`, the Bound at the traced sizes whose
    numbers
    are also formulas of the sizes (``b.formula("fused")``, ``b.at(batch=8)``,
    ``b.crossovers("batch")``; docs/symbolic.md).

    Several GPUs (``gpus=N``, ``tp``/``pp``/``dp``) are :func:`plan`'s question.
    """
    _reject_plan_keywords("bound", plan_keywords)
    if symbolic is not None:
        return _bound_symbolic(
            model, inputs, hw, symbolic, kwargs, precision, name, framework, observe, routing
        )
    spec = load_spec(hw)
    g = _graph(model, inputs, kwargs, precision, name, framework, observe, routing)
    return bound_graph(g, spec)


def _bound_symbolic(model, inputs, hw, marks, kwargs, precision, name, framework, observe, routing):
    """:func:`bound` with ``symbolic=``: one symbolic trace of the program's framework."""
    if observe or routing != "any":
        raise ValueError("symbolic= takes the sizes as symbols: observe= and routing= do not apply")
    if frontend_of(model, inputs, kwargs, framework).name == "jax":
        from solar.symbolic.jax import bound_symbolic_jax

        if kwargs:
            raise ValueError("symbolic= of a JAX function takes positional inputs only (kwargs=)")
        return bound_symbolic_jax(
            model, inputs, hw, marks, precision=precision, name=name, numeric=bound
        )
    from solar.symbolic.trace import bound_symbolic

    return bound_symbolic(
        model, inputs, hw, marks, kwargs=kwargs, precision=precision, name=name, numeric=bound
    )


def _reject_plan_keywords(fn: str, keywords: dict) -> None:
    """``bound(..., gpus=2)``: name :func:`plan`; any other unknown keyword: Python's error."""
    plan_like = [k for k in keywords if k in _PLAN_KEYWORDS]
    if plan_like and (keywords.get("gpus", 2) != 1 or len(plan_like) > 1):
        raise TypeError(
            f"{fn}() bounds one GPU; for {', '.join(f'{k}=' for k in plan_like)} use "
            "solar.plan(model, inputs, hw, gpus=N, tp=..., pp=..., dp=...)"
        )
    other = [k for k in keywords if k not in _PLAN_KEYWORDS]
    if other:
        raise TypeError(f"{fn}() got an unexpected keyword argument {other[0]!r}")


def plan(
    model,
    inputs,
    hw="H100",
    *,
    gpus: int,
    kwargs=None,
    precision: str | None = None,
    name=None,
    framework: str | None = None,
    observe: bool = False,
    routing="any",
    level: str = "fused",
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    micro_batches: int | None = None,
    batch: str | None = None,
    split: Sequence[str] | None = None,
) -> ParallelBound:
    """The :class:`~solar.backend.parallel.ParallelBound` of the best tensor/pipeline/data
    parallel plan of ``gpus`` GPUs of ``hw`` for ``model(*inputs, **kwargs)`` (the other
    keywords as in :func:`bound`); ``level``, ``tp``, ``pp``, ``dp``, ``micro_batches``,
    ``batch`` and ``split`` pin or steer it (:func:`bound_parallel`)."""
    spec = load_spec(hw)
    g = _graph(model, inputs, kwargs, precision, name, framework, observe, routing)
    return bound_parallel(
        g,
        spec,
        gpus,
        level=level,
        tp=tp,
        pp=pp,
        dp=dp,
        micro_batches=micro_batches,
        batch=batch,
        split=split,
    )


def bound_parallel(
    g,
    hw,
    gpus: int,
    *,
    level: str = "fused",
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    micro_batches: int | None = None,
    batch: str | None = None,
    split: Sequence[str] | None = None,
    model: ParallelModel | None = None,
    single: Bound | None = None,
) -> ParallelBound:
    """The best plan of ``gpus`` GPUs of ``hw`` for a lifted graph, by its ``level`` bound
    (:mod:`solar.backend.parallel.search`). ``tp``/``pp``/``dp`` pin degrees; ``micro_batches``
    the pipeline's micro-batch count; ``batch`` (``"input"`` or ``"input:axis"``) the axis
    data parallelism and micro-batches split (default: axis 0 of the first input); ``split``
    (``["c_fc_weight:0", ...]``: graph tensor names and axes) the axes tensor parallelism
    splits, instead of the search's choice."""
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        raise ValueError(f"gpus must be a whole number >= 1, got {gpus!r}")
    spec = load_spec(hw)
    link_bandwidth(spec, gpus)  # a spec without links, or more GPUs than a host: say so first
    model = model or ParallelModel(g)
    batch_gid = model.index.batch_group(*_batch_axis(batch))
    split_gids = None if split is None else tuple(_split_group(model, s) for s in split)
    single = single or bound_graph(g, spec)
    best = best_plan(
        model,
        spec,
        gpus,
        level=level,
        micro_batches=micro_batches,
        batch=batch_gid,
        single=single,
        fixed={"tp": tp, "pp": pp, "dp": dp},
        split=split_gids,
    )
    if best is None:
        pinned = ", ".join(f"{k}={v}" for k, v in (("tp", tp), ("pp", pp), ("dp", dp)) if v)
        pinned = f" with {pinned}" if pinned else ""
        raise ValueError(
            f"no plan splits {g.info.name} over {gpus} GPUs{pinned}: "
            "tensor parallelism needs a weight axis its degree divides, data parallelism and "
            "micro-batches a batch it divides, pipelines enough kernels; try another count"
        )
    return best


def _split_group(model: ParallelModel, name: str) -> int:
    tensor, axis = _batch_axis(name)
    gid = model.index.group_of_axis(tensor, axis)
    if gid is None:
        weights = [t for t, i in model.g.info.tensors.items() if i.role == "weight"]
        raise ValueError(
            f"split {name!r}: no such tensor axis in the graph; weights: {', '.join(weights[:8])}"
            + (" ..." if len(weights) > 8 else "")
        )
    grp = model.index.groups[gid]
    if grp.reason is not None:
        raise ValueError(f"split {name!r}: cannot be split ({grp.reason})")
    return gid


def _batch_axis(batch: str | None) -> tuple[str | None, int]:
    if batch is None:
        return None, 0
    name, _, axis = str(batch).partition(":")
    try:
        return name, int(axis or 0)
    except ValueError:
        raise ValueError(f"batch must be 'input' or 'input:axis', got {batch!r}") from None


def bound_training(
    model,
    inputs,
    hw="H100",
    *,
    loss=None,
    targets=(),
    optimizer=None,
    precision: str | None = None,
    name: str | None = None,
) -> Bound:
    """Speed-of-light bounds of one training step of a PyTorch ``model``: ``out =
    model(*inputs)``, ``loss(out, *targets)`` (default: ``out`` is the loss),
    ``loss.backward()``, ``optimizer.step()``.

    ``optimizer``: a ``torch.optim.Optimizer`` over the model's parameters, an optimizer class
    or a factory ``f(parameters)`` (default: ``torch.optim.AdamW``). Traced on fake tensors
    in the steady state (the optimizer's state exists; see :mod:`solar.frontend.torch.training`),
    so a meta-device model is analysed without allocating weights, gradients or state.
    """
    from solar.frontend.torch.training import make_train_step

    step, args = make_train_step(model, inputs, loss=loss, targets=targets, optimizer=optimizer)
    return bound(
        step,
        args,
        hw,
        precision=precision,
        name=name or f"{type(model).__name__} step",
        framework="torch",
    )


def compile_program(
    model: Callable | object,
    inputs: object,
    *,
    kwargs: Mapping[str, object] | None = None,
    mode: str = "default",
    name: str | None = None,
    precision: str | None = None,
    framework: str | None = None,
) -> list[CompiledTrace]:
    """Compile a program with its framework's compiler — ``torch.compile`` (Inductor, in
    ``mode``) or ``jax.jit`` (XLA) — and map its kernels onto solar's trace: one
    :class:`CompiledTrace` per compiled graph."""
    fw = frontend_of(model, inputs, kwargs, framework).name
    if fw == "jax":
        if mode not in ("default", "jit"):
            raise ValueError(f"jax.jit has no mode {mode!r}: XLA compiles one way (drop mode)")
        from solar.frontend.jax.compiled import compile_jax

        args = inputs if isinstance(inputs, (list, tuple)) else (inputs,)
        return [compile_jax(model, args, kwargs, name=name)]
    from solar.frontend.torch.compiled import compile_torch

    return compile_torch(model, inputs, kwargs=kwargs, mode=mode, name=name, precision=precision)
