"""Trace a whole PyTorch training step: forward, ``loss.backward()`` (or
``torch.autograd.grad``) and ``optimizer.step()``, on fake tensors.

``make_fx`` records below autograd, so the backward kernels the autograd engine runs and the
optimizer's kernels (``_foreach_*`` launches, ``_fused_adamw_``, or the per-parameter loop)
are recorded like the forward ones, in the order eager runs them. Parameters, buffers and the
optimizer's state become fake graph inputs (:mod:`.step_state`); nothing is allocated, so a
7B-parameter step is analysed without its weights, gradients or optimizer state.

What the IR of a step is:

- inputs: parameters and buffers (role ``weight``), the optimizer's state tensors (role
  ``weight``: resident like the parameters) and the step's tensor arguments (``input``);
- outputs: what the step returns (the loss), then every input the step updates in place
  (parameters, optimizer state, running statistics), so the fused bound writes them once;
- every kernel carries a ``phase`` (``forward``, ``backward``, ``recompute`` for forward
  kernels a checkpoint re-runs during backward, ``optimizer``) and an ``origin``: for a
  backward kernel the autograd node and the forward kernel it differentiates (its module and
  source line are the forward op's), for an optimizer kernel the parameters it updates.

Eager on CUDA is the reference: a group that leaves ``foreach`` unset runs the foreach
implementation (PyTorch's default for CUDA tensors), and the optimizer's host-side work (the
CPU ``step`` counters, bias corrections computed in Python) launches no kernel and is dropped.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch
from torch.utils import _pytree as pytree

from solar.frontend.protocol import Trace
from solar.frontend.torch import fused_grad  # noqa: F401  (backward of the fused calls)
from solar.frontend.torch.fused import intercept_fused
from solar.frontend.torch.precision import torch_policy
from solar.frontend.torch.provenance import record_provenance
from solar.frontend.torch.sparse import sparse_tensors
from solar.frontend.torch.step_graph import (
    PhaseRecorder,
    StepLowerer,
    drop_host_work,
    drop_open_full_slices,
)
from solar.frontend.torch.step_state import (
    StepState,
    code_names,
    fake_like,
    find_step_objects,
    optimizer_state_specs,
)
from solar.frontend.torch.symbolic_shapes import SymbolicShapes
from solar.frontend.torch.trace import (
    _argument_names,
    _as_tuple,
    _autocast_on,
    _symbolic_error,
    _symbolic_failure,
    _tracing_error,
)
from solar.frontend.torch.wrappers import unwrap_module

_TRAINING_NAMES = {"backward", "grad"}


def _path(keypath) -> tuple:
    """A pytree key path as the plain keys :func:`solar.frontend.torch.structure.lookup`
    takes (indices and dict keys)."""
    return tuple(getattr(k, "idx", getattr(k, "key", k)) for k in keypath)


def is_training_step(fn) -> bool:
    """Whether ``fn`` (a plain function, not a module) is a training step: its code (or a
    function it calls) names ``backward`` or ``grad`` (``torch.autograd.grad``), or it reaches
    a ``torch.optim.Optimizer``."""
    if isinstance(fn, torch.nn.Module) or not callable(fn):
        return False
    if _known_step(fn) is not None or code_names(fn) & _TRAINING_NAMES:
        return True
    return bool(find_step_objects(fn)[1])


@dataclass(frozen=True)
class StepFeed:
    """How a traced training step meets the live model, optimizer and inputs
    (:class:`~solar.frontend.protocol.Feed`). The trace's ``bindings`` also map optimizer-state
    inputs to ``("state", (optimizer index, parameter name, key))``; its ``updated`` are the IR
    inputs the step writes (after the step's own outputs in ``output_names``)."""

    state: StepState
    timer: str | None = None

    def values(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> dict[str, torch.Tensor]:
        """The IR inputs' values from the live model, optimizer and ``inputs``. The optimizer
        must have state (run one real step first: the IR is a steady-state step)."""
        return {name: self._live(b, inputs).detach() for name, b in trace.bindings.items()}

    def runner(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> Callable[[], object]:
        """Run the real step once; its returned tensors, then the updated inputs' new values,
        in the order of ``output_names``."""

        def run() -> list[torch.Tensor]:
            with torch.enable_grad():
                result = fn(*inputs)  # type: ignore[operator]
            out = [t.detach() for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
            return out + [self._live(trace.bindings[n], inputs).detach() for n in trace.updated]

        return run

    def flatten(self, trace: Trace, result: object) -> list[torch.Tensor]:
        return list(result)  # type: ignore[call-overload]

    def _live(self, binding, args) -> torch.Tensor:
        kind, key = binding
        s = self.state
        if kind == "param":
            return s.params[key]
        if kind == "buffer":
            return s.buffers[key]
        if kind == "state":
            oi, pname, k = key
            st = s.optimizers[oi].state.get(s.params[pname])
            if not st or k not in st:
                raise ValueError(
                    f"the optimizer has no state {k!r} for {pname}: run one real step before "
                    "validating (solar traces the steady-state step)"
                )
            return st[k]
        v: object = args
        for k in (key,) if isinstance(key, int) else key:
            v = v[k]  # type: ignore[index]
        return v  # type: ignore[return-value]


@dataclass
class StepGraph:
    """A training step traced to an fx graph (before lowering): the graph (host-side work
    dropped), the step's state, the graph inputs in placeholder order ``(IR name stem, role,
    binding, tensor)``, the phase recorder and the autocast device types remapped."""

    gm: object
    state: StepState
    graph_inputs: list
    recorder: PhaseRecorder
    device: torch.device
    remapped: set[str]


def trace_step_graph(
    fn,
    inputs: object,
    *,
    modules=None,
    optimizers=None,
    symbolic: SymbolicShapes | None = None,
) -> StepGraph:
    """``make_fx`` of one training step ``fn(*inputs)`` on fake tensors: parameters, buffers
    and the optimizer's state swapped for fakes (:mod:`.step_state`), each node tagged with
    its phase. ``modules``/``optimizers`` default to those ``fn`` reaches. ``symbolic``: the
    fakes are made in its mode, dynamic on the dims it names (an optimizer-state tensor of
    its parameter's shape takes the parameter's sizes, see :func:`_symbolic_fakes`)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    args = _as_tuple(inputs)
    state = _step_state(fn, modules, optimizers)
    leaves_with_paths, spec = pytree.tree_flatten_with_path(args)
    leaves = [v for _, v in leaves_with_paths]
    tensor_leaves = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    reals = [*state.params.values(), *state.buffers.values(), *(leaves[i] for i in tensor_leaves)]
    devices = [t.device for t in reals if t.device.type != "meta"]
    device = devices[0] if devices else torch.device("cpu")
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    state.state = specs = optimizer_state_specs(state, mode, device)
    traced_state = [s for s in specs if s.host_value is None]
    arg_names = _argument_names(fn, len(args))
    graph_inputs = _graph_inputs(state, traced_state, leaves_with_paths, tensor_leaves, arg_names)
    if symbolic is None:
        with mode:
            fakes = [
                fake_like(t, device, grad=binding[0] in ("param", "input"))
                for _, _, binding, t in graph_inputs
            ]
    else:
        fakes = _symbolic_fakes(symbolic, graph_inputs, device)
    recorder, remapped = PhaseRecorder(), set()
    n_p, n_b, n_s = len(state.params), len(state.buffers), len(traced_state)

    def traced(*flat: torch.Tensor) -> object:
        ps = dict(zip(state.params, flat[:n_p], strict=True))
        bs = dict(zip(state.buffers, flat[n_p : n_p + n_b], strict=True))
        st: dict[tuple[int, str], dict] = {k: dict(v) for k, v in state.static.items()}
        for s, t in zip(traced_state, flat[n_p + n_b : n_p + n_b + n_s], strict=True):
            st.setdefault((s.optimizer, s.param), {})[s.key] = t
        for s in specs:
            if s.host_value is not None:  # a host-side counter: a constant of the trace
                value = torch.tensor(s.host_value, dtype=s.dtype)
                st.setdefault((s.optimizer, s.param), {})[s.key] = value
        xs = list(leaves)
        for i, t in zip(tensor_leaves, flat[n_p + n_b + n_s :], strict=True):
            xs[i] = t
        recorder.params = ps
        with (
            state.swapped(ps, bs, st, foreach=True),
            intercept_fused(),
            _autocast_on(device.type, remapped),
            torch.enable_grad(),
            sparse_tensors(),  # sparse layouts as their stored elements (sparse.py)
        ):
            return fn(*pytree.tree_unflatten(xs, spec))

    root = state.modules[0] if len(state.modules) == 1 else None
    sizes_kept = symbolic.active() if symbolic is not None else nullcontext()
    try:
        with record_provenance(root), recorder.recording(), _foreach_on_fakes(), sizes_kept:
            gm = make_fx(traced, tracing_mode="fake")(*fakes)
    except Exception as e:
        error = _tracing_error(e)
        if error is None and symbolic is not None and _symbolic_failure(e):
            error = _symbolic_error(e, symbolic)
        if error is None:
            raise
        raise error from e
    drop_host_work(gm)
    if symbolic is not None:
        drop_open_full_slices(gm)
    return StepGraph(gm, state, graph_inputs, recorder, device, remapped)


def _symbolic_fakes(symbolic: SymbolicShapes, graph_inputs, device) -> list[torch.Tensor]:
    """The fakes of a symbolic trace, in ``symbolic``'s mode: parameters, buffers and inputs
    dynamic on their named dims (leaves that require grad as :func:`fake_like` makes them);
    an optimizer-state tensor of its parameter's shape takes the parameter's fake's sizes
    (the same symbols); one of another shape is static: a scalar (a step count), or the
    state of a parameter with no named dim (otherwise how its dims follow the parameter's
    is not known: an error)."""
    leaves = [(i, b, t) for i, (_, _, b, t) in enumerate(graph_inputs) if b[0] != "state"]
    made = dict(zip([i for i, _, _ in leaves], symbolic.fakes([(b, t) for _, b, t in leaves])))
    params = {b[1]: (i, t) for i, b, t in leaves if b[0] == "param"}
    named = {b for b, _ in symbolic.dims}
    fakes = []
    for i, (_, _, binding, t) in enumerate(graph_inputs):
        if binding[0] != "state":
            f = made[i]
            if binding[0] in ("param", "input") and t.requires_grad:
                f.requires_grad_(True)
            fakes.append(f)
            continue
        _, pname, key = binding[1]
        pi, p = params[pname]
        if tuple(t.shape) == tuple(p.shape):
            shape = made[pi].shape
        elif t.dim() > 0 and ("param", pname) in named:
            raise NotImplementedError(
                f"symbolic sizes: the optimizer state {pname}:{key} has shape "
                f"{tuple(t.shape)}, not its parameter's {tuple(p.shape)}: how it follows the "
                "named sizes is not known; bound this step at one size (without symbolic=)"
            )
        else:
            shape = tuple(t.shape)
        with symbolic.mode:
            fakes.append(torch.empty(shape, dtype=t.dtype, device=device))
    return fakes


def _step_state(fn, modules, optimizers) -> StepState:
    prefixes = None
    known = _known_step(fn)
    if known is not None and modules is None and optimizers is None:
        modules, optimizers = known
    if modules is None or optimizers is None:
        found_m, found_o, prefixes = find_step_objects(fn)
        modules = found_m if modules is None else modules
        optimizers = found_o if optimizers is None else optimizers
        prefixes = prefixes if len(found_m) == len(modules) else None
    return StepState.of(modules, optimizers, prefixes)


def trace_training_step(
    fn,
    inputs: object,
    *,
    modules=None,
    optimizers=None,
    name: str | None = None,
    precision: str | None = None,
    symbolic: SymbolicShapes | None = None,
) -> Trace:
    """Trace one training step ``fn(*inputs)`` (:func:`trace_step_graph`) and lower it to the
    IR (see the module docstring). ``symbolic``: the dims it names are symbols, traced and
    lowered as in :func:`solar.frontend.torch.trace.trace_torch`."""
    policy = torch_policy(precision)
    sg = trace_step_graph(fn, inputs, modules=modules, optimizers=optimizers, symbolic=symbolic)
    prog_name = name or getattr(fn, "__name__", "") or "train_step"
    lowerer = StepLowerer(sg.gm, prog_name, policy, sg.recorder)
    placeholders = [n for n in sg.gm.graph.nodes if n.op == "placeholder"]
    bindings = {}
    with symbolic.active() if symbolic is not None else nullcontext():
        for node, (stem, role, binding, _) in zip(placeholders, sg.graph_inputs, strict=True):
            ir = lowerer.declare_input(node, stem, role, f"{binding[0]} {binding[1]!r}")
            bindings[ir.name] = binding
            lowerer.placeholder_names[node] = _label(binding)
        lowerer.run()
    updated = _written_inputs(lowerer.program)
    output_names = [*lowerer.outputs(), *updated]
    lowerer.program.outputs = list(dict.fromkeys(output_names))
    notes = _notes(sg, lowerer.program, len(updated)) + lowerer.notes
    return Trace(
        "torch",
        lowerer.verified(),
        bindings,
        tuple(output_names),
        StepFeed(sg.state),
        assumptions=tuple(notes),
        graph=sg.gm,
        updated=tuple(updated),
    )


def _notes(sg: StepGraph, program, n_updated: int) -> list[str]:
    """What the report must say about how the step was traced."""
    notes = list(sg.state.notes) + [
        "training step traced in eager CUDA's order: forward, backward (autograd engine), "
        f"optimizer; {n_updated} input(s) updated in place are outputs"
    ]
    groups = [g for o in sg.state.optimizers for g in o.param_groups]
    if any(g.get("foreach", 0) is None and not g.get("fused") for g in groups):
        notes.append("optimizer foreach=None traced as foreach=True (PyTorch's default on CUDA)")
    if any(k.op.startswith(("aten._foreach", "aten._fused")) for k in program.kernels):
        from solar.frontend.torch.ops.optim import ARG_SPACE, LIMITS

        lim = LIMITS[ARG_SPACE]
        cuda = "CUDA >= 13" if ARG_SPACE == "32KB" else "CUDA < 13"
        notes.append(
            f"foreach / fused optimizer ops: one kernel per multi_tensor_apply launch "
            f"(chunks of 65536 elements, at most {lim['blocks']} chunks and "
            f"{'/'.join(map(str, lim['tensors']))} tensors per launch by depth: the "
            f"{ARG_SPACE} launch-argument limits of {cuda})"
        )
    return notes + [
        f"torch.autocast({d!r}) traced with PyTorch's {sg.device.type} autocast policy"
        for d in sorted(sg.remapped)
    ]


def make_train_step(model, inputs, *, loss=None, targets=(), optimizer=None):
    """``(train_step, args)`` for :func:`solar.bound_training`: ``optimizer.zero_grad();
    out = model(*inputs); l = loss(out, *targets) (or out); l.backward(); optimizer.step();
    return l``. ``optimizer``: an optimizer, an optimizer class or a factory of the
    parameters (default ``torch.optim.AdamW``)."""
    model, _ = unwrap_module(model)  # a compiled or DataParallel model: the module it wraps
    inputs = _as_tuple(inputs)
    targets = _as_tuple(targets) if targets is not None else ()
    if optimizer is None:
        optimizer = torch.optim.AdamW
    if not isinstance(optimizer, torch.optim.Optimizer):
        optimizer = optimizer(model.parameters())
    n = len(inputs)

    def train_step(*batch):
        optimizer.zero_grad(set_to_none=True)
        out = model(*batch[:n])
        value = loss(out, *batch[n:]) if loss is not None else out
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(
                f"the loss must be one number; the model returns {shape}: pass loss=..."
            )
        value.backward()
        optimizer.step()
        return value

    train_step.__name__ = f"{type(model).__name__}_step"
    _STEP_OBJECTS[train_step] = ([model], [optimizer])
    return train_step, (*inputs, *targets)


#: Steps made by :func:`make_train_step` know their model and optimizer.
_STEP_OBJECTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _known_step(fn):
    try:
        return _STEP_OBJECTS.get(fn)
    except TypeError:  # not weak-referenceable: not one of ours
        return None


def _graph_inputs(state, traced_state, leaves_with_paths, tensor_leaves, arg_names):
    """(IR name stem, role, binding, tensor) of each graph input, in placeholder order:
    parameters, buffers, optimizer state, the step's tensor arguments."""
    from solar.frontend.torch.lower import ir_dtype

    out = []
    for n, p in state.params.items():
        ir_dtype(p.dtype, f"parameter {n!r}")
        out.append((n.replace(".", "_"), "weight", ("param", n), p))
    for n, b in state.buffers.items():
        ir_dtype(b.dtype, f"buffer {n!r}")
        out.append((n.replace(".", "_"), "weight", ("buffer", n), b))
    for s in traced_state:
        t = torch.empty(s.shape, dtype=s.dtype, device="meta")
        stem = f"{s.param}_{s.key}".replace(".", "_")
        out.append((stem, "weight", ("state", (s.optimizer, s.param, s.key)), t))
    for i in tensor_leaves:
        path = _path(leaves_with_paths[i][0])
        stem = "_".join([arg_names[path[0]], *map(str, path[1:])])
        t = leaves_with_paths[i][1]
        ir_dtype(t.dtype, f"input {stem!r}")
        out.append((stem, "input", ("input", path[0] if len(path) == 1 else path), t))
    return out


def _label(binding) -> str:
    kind, key = binding
    if kind == "state":
        return key[1]
    return str(key) if kind in ("param", "buffer") else f"input {key}"


def _written_inputs(program) -> list[str]:
    inputs = set(program.inputs)
    written = []
    for k in program.kernels:
        for st in k.statements:
            b = program.base(st.out.tensor)
            if b in inputs and b not in written:
                written.append(b)
    return [n for n in program.inputs if n in written]


@contextmanager
def _foreach_on_fakes() -> Iterator[None]:
    """Let PyTorch's foreach dispatch (``clip_grad_norm_``, ...) take fake tensors for the
    plain tensors they stand for, so utilities pick the foreach path as on CUDA."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils import _foreach_utils

    types = _foreach_utils._foreach_supported_types
    types.append(FakeTensor)
    try:
        yield
    finally:
        types.remove(FakeTensor)
