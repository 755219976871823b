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

import operator
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree

from solar.frontend.torch import fused_grad  # noqa: F401  (backward of the fused calls)
from solar.frontend.torch.fused import intercept_fused
from solar.frontend.torch.lower import Lowerer, tensor_vals
from solar.frontend.torch.precision import PrecisionPolicy
from solar.frontend.torch.provenance import module_label, node_source, record_provenance
from solar.frontend.torch.step_state import (
    StepState,
    code_names,
    fake_like,
    find_step_objects,
    optimizer_state_specs,
)
from solar.frontend.torch.trace import (
    TorchTrace,
    _argument_names,
    _as_tuple,
    _autocast_on,
    _path,
    _tracing_error,
)

PHASES = ("forward", "backward", "recompute", "optimizer")
_TRAINING_NAMES = {"backward", "grad"}


def is_training_step(fn, inputs=()) -> bool:
    """Whether ``fn`` (a plain function, not a module) is a training step: its code (or a
    function it calls) names ``backward`` or ``grad`` (``torch.autograd.grad``), or it reaches
    a ``torch.optim.Optimizer``."""
    if isinstance(fn, torch.nn.Module) or not callable(fn):
        return False
    if _known_step(fn) is not None or code_names(fn) & _TRAINING_NAMES:
        return True
    return bool(find_step_objects(fn)[1])


@dataclass
class TrainingTrace(TorchTrace):
    """A traced training step. ``bindings`` also maps optimizer-state inputs to
    ``("state", (optimizer index, parameter name, key))``; ``updated`` are the IR inputs the
    step writes (after the step's own outputs in ``output_names``)."""

    state: StepState | None = None
    updated: list[str] = field(default_factory=list)

    def values(self, fn: object, inputs: object) -> dict[str, torch.Tensor]:
        """The IR inputs' values from the live model, optimizer and ``inputs``. The optimizer
        must have state (run one real step first: the IR is a steady-state step)."""
        args = _as_tuple(inputs)
        return {name: self._live(b, args).detach() for name, b in self.bindings.items()}

    def run_source(self, fn, inputs) -> list[torch.Tensor]:
        """Run the real step once; its returned tensors, then the updated inputs' new values,
        in the order of :attr:`output_names`."""
        args = _as_tuple(inputs)
        with torch.enable_grad():
            result = fn(*args)
        out = [t.detach() for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
        return out + [self._live(self.bindings[n], args).detach() for n in self.updated]

    def _live(self, binding, args) -> torch.Tensor:
        kind, key = binding
        s = self.state
        assert s is not None
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


def trace_training_step(
    fn,
    inputs: object,
    *,
    modules=None,
    optimizers=None,
    name: str | None = None,
    precision: str | None = None,
) -> TrainingTrace:
    """Trace one training step ``fn(*inputs)`` and lower it to the IR (see the module
    docstring). ``modules``/``optimizers`` default to those ``fn`` reaches
    (:func:`~solar.frontend.torch.step_state.find_step_objects`)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    policy = PrecisionPolicy.from_torch(precision)
    args = _as_tuple(inputs)
    prefixes = None
    known = _known_step(fn)
    if known is not None and modules is None and optimizers is None:
        modules, optimizers = known
    if modules is None or optimizers is None:
        found_m, found_o, prefixes = find_step_objects(fn)
        modules = found_m if modules is None else modules
        optimizers = found_o if optimizers is None else optimizers
        prefixes = prefixes if len(found_m) == len(modules) else None
    state = StepState.of(modules, optimizers, prefixes)
    leaves_with_paths, spec = pytree.tree_flatten_with_path(args)
    leaves = [v for _, v in leaves_with_paths]
    tensor_leaves = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    reals = [*state.params.values(), *state.buffers.values(), *(leaves[i] for i in tensor_leaves)]
    devices = [t.device for t in reals if t.device.type != "meta"]
    device = devices[0] if devices else torch.device("cpu")
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    specs = optimizer_state_specs(state, mode, device)
    state.state = specs
    traced_state = [s for s in specs if s.host_value is None]
    arg_names = _argument_names(fn, len(args))
    graph_inputs = _graph_inputs(state, traced_state, leaves_with_paths, tensor_leaves, arg_names)
    with mode:
        fakes = [
            fake_like(t, device, grad=True)
            if binding[0] in ("param", "input")
            else fake_like(t, device)
            for _, _, binding, t in graph_inputs
        ]
    recorder = PhaseRecorder()
    remapped: set[str] = set()
    n_p, n_b, n_s = len(state.params), len(state.buffers), len(traced_state)

    def traced(*flat: torch.Tensor) -> object:
        ps = dict(zip(state.params, flat[:n_p], strict=True))
        bs = dict(zip(state.buffers, flat[n_p : n_p + n_b], strict=True))
        st: dict[tuple[int, str], dict] = {k: dict(v) for k, v in state.static.items()}
        for s, t in zip(traced_state, flat[n_p + n_b : n_p + n_b + n_s], strict=True):
            st.setdefault((s.optimizer, s.param), {})[s.key] = t
        for s in specs:
            if s.host_value is not None:  # a host-side counter: a constant of the trace
                st.setdefault((s.optimizer, s.param), {})[s.key] = torch.tensor(
                    s.host_value, dtype=s.dtype
                )
        xs = list(leaves)
        for i, t in zip(tensor_leaves, flat[n_p + n_b + n_s :], strict=True):
            xs[i] = t
        call_args = pytree.tree_unflatten(xs, spec)
        recorder.params = ps
        with (
            state.swapped(ps, bs, st, foreach=True),
            intercept_fused(),
            _autocast_on(device.type, remapped),
            torch.enable_grad(),
        ):
            return fn(*call_args)

    root = state.modules[0] if len(state.modules) == 1 else None
    try:
        with record_provenance(root), recorder.recording(), _foreach_on_fakes():
            gm = make_fx(traced, tracing_mode="fake")(*fakes)
    except Exception as e:
        error = _tracing_error(e)
        if error is None:
            raise
        raise error from e
    drop_host_work(gm)
    prog_name = name or getattr(fn, "__name__", "") or "train_step"
    lowerer = StepLowerer(gm, prog_name, policy, recorder)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bindings = {}
    for node, (stem, role, binding, _) in zip(placeholders, graph_inputs, strict=True):
        ir = lowerer.declare_input(node, stem, role, f"{binding[0]} {binding[1]!r}")
        bindings[ir.name] = binding
        lowerer.placeholder_names[node] = _label(binding)
    lowerer.run()
    returned = lowerer.outputs()
    updated = _written_inputs(lowerer.program)
    output_names = [*returned, *updated]
    lowerer.program.outputs = list(dict.fromkeys(output_names))
    notes = list(state.notes) + [
        f"training step traced in eager CUDA's order: forward, backward (autograd engine), "
        f"optimizer; {len(updated)} input(s) updated in place are outputs"
    ]
    groups = [g for o in state.optimizers for g in o.param_groups]
    if any(g.get("foreach", 0) is None and not g.get("fused") for g in groups):
        notes.append("optimizer foreach=None traced as foreach=True (PyTorch's default on CUDA)")
    if any(k.op.startswith(("aten._foreach", "aten._fused")) for k in lowerer.program.kernels):
        from solar.frontend.torch.ops.optim import ARG_SPACE, LIMITS

        lim = LIMITS[ARG_SPACE]
        cuda = "CUDA >= 13" if ARG_SPACE == "32KB" else "CUDA < 13"
        notes.append(
            f"foreach / fused optimizer ops: one kernel per multi_tensor_apply launch "
            f"(chunks of 65536 elements, at most {lim['blocks']} chunks and "
            f"{'/'.join(map(str, lim['tensors']))} tensors per launch by depth: the "
            f"{ARG_SPACE} launch-argument limits of {cuda})"
        )
    notes += [
        f"torch.autocast({d!r}) traced with PyTorch's {device.type} autocast policy"
        for d in sorted(remapped)
    ]
    return TrainingTrace(
        lowerer.program, bindings, output_names, gm, notes, state=state, updated=updated
    )


def make_train_step(model, inputs, *, loss=None, targets=(), optimizer=None):
    """``(train_step, args)`` for :func:`solar.bound_training`: ``optimizer.zero_grad();
    out = model(*inputs); l = loss(out, *targets) (or out); l.backward(); optimizer.step();
    return l``. ``optimizer``: an optimizer, an optimizer class or a factory of the
    parameters (default ``torch.optim.AdamW``)."""
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


# ---------------------------------------------------------------------------------------------
# Phases


class PhaseRecorder:
    """While make_fx traces, tag each node with its phase (see the module docstring), the
    autograd node a backward node runs for, and the optimizer an optimizer node belongs to;
    forward nodes are keyed by the sequence number of the autograd node they create, so a
    backward node finds the forward node it differentiates."""

    def __init__(self) -> None:
        self.optimizer: str | None = None
        self.backward_seen = False
        self.forward_of_seq: dict[int, fx.Node] = {}
        self.params: dict[str, torch.Tensor] = {}  # the fake parameters, while tracing
        self.grad_names: dict[fx.Node, str] = {}  # the node of each parameter's gradient
        self._grads_seen = False

    def capture_grads(self) -> None:
        """Name the graph node of each parameter's ``.grad`` (once, after the backward)."""
        from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot

        mode = get_proxy_mode()
        if mode is None or self._grads_seen:
            return
        self._grads_seen = True
        for name, p in self.params.items():
            g = getattr(p, "grad", None)
            if g is None:
                continue
            slot = get_proxy_slot(g, mode.tracer, None)
            if slot is not None:
                self.grad_names.setdefault(slot.proxy.node, f"{name}.grad")

    @contextmanager
    def recording(self) -> Iterator[None]:
        from torch.fx.experimental.proxy_tensor import PythonKeyTracer
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        def pre(opt, *_):
            self.optimizer = type(opt).__name__
            self.capture_grads()

        def post(opt, *_):
            self.optimizer = None

        handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
        had = "create_node" in PythonKeyTracer.__dict__
        original = PythonKeyTracer.create_node

        def create_node(tracer, *a, **kw):  # type: ignore[no-untyped-def]
            node = original(tracer, *a, **kw)
            if node.op == "call_function":
                self.tag(node)
            return node

        PythonKeyTracer.create_node = create_node  # type: ignore[method-assign]
        try:
            yield
        finally:
            for h in handles:
                h.remove()
            if had:
                PythonKeyTracer.create_node = original  # type: ignore[method-assign]
            else:
                del PythonKeyTracer.create_node

    def tag(self, node: fx.Node) -> None:
        grad_fn = torch._C._current_autograd_node()
        if self.optimizer is not None:
            node.meta["solar_phase"] = "optimizer"
            node.meta["solar_optimizer"] = self.optimizer
        elif grad_fn is not None:
            self.backward_seen = True
            node.meta["solar_phase"] = "recompute" if _recomputing() else "backward"
            node.meta["solar_grad_fn"] = (grad_fn.name(), grad_fn._sequence_nr())
            if node.meta["solar_phase"] == "recompute":  # its own backward finds it
                self.forward_of_seq.setdefault(torch.autograd._get_sequence_nr() - 1, node)
        elif self.backward_seen and not torch.is_grad_enabled():
            node.meta["solar_phase"] = "optimizer"  # clipping, a hand-written update (no_grad)
            self.capture_grads()
        elif _seeding_gradients():
            node.meta["solar_phase"] = "backward"  # the ones_like seed of loss.backward()
            node.meta["solar_grad_fn"] = ("loss gradient seed", -1)
        else:
            node.meta["solar_phase"] = "forward"
            seq = torch.autograd._get_sequence_nr() - 1
            self.forward_of_seq.setdefault(seq, node)


def _seeding_gradients() -> bool:
    """Whether ``torch.autograd.backward``/``grad`` is making the initial gradients."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_make_grads":
            return True
        frame = frame.f_back
    return False


def _recomputing() -> bool:
    """Whether a checkpointed forward is being re-run (a torch.utils.checkpoint frame is on
    the stack while the autograd engine runs)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(("utils/checkpoint.py", "utils\\checkpoint.py")):
            return True
        frame = frame.f_back
    return False


# ---------------------------------------------------------------------------------------------
# Host-side work


def drop_host_work(gm: fx.GraphModule) -> None:
    """Remove what launches no GPU kernel in eager CUDA: profiler ranges
    (``record_function``) and host scalar work (0-dim constants and everything computed only
    from them, such as the optimizer's CPU ``step`` counters), unless a kernel consumes it."""
    nodes = list(gm.graph.nodes)
    host: set[fx.Node] = set()
    for n in nodes:
        if n.op == "get_attr":
            v = getattr(gm, n.target, None)
            if isinstance(v, torch.Tensor) and v.ndim == 0:
                host.add(n)
        elif n.op == "call_function" and _host_side(n, host):
            host.add(n)
    removable: set[fx.Node] = set()
    for n in reversed(nodes):
        if n in host and all(u in removable for u in n.users):
            removable.add(n)
    for n in reversed(nodes):
        if n in removable:
            gm.graph.erase_node(n)
    gm.recompile()


def _host_side(n: fx.Node, host: set[fx.Node]) -> bool:
    if getattr(n.target, "namespace", None) == "profiler":
        return True
    if n.target is operator.getitem:
        return n.args[0] in host
    scalar = all(v.ndim == 0 for v in tensor_vals(n.meta.get("val")))
    return bool(n.all_input_nodes) and all(i in host for i in n.all_input_nodes) and scalar


# ---------------------------------------------------------------------------------------------
# Lowering with provenance


class StepLowerer(Lowerer):
    """The graph walk of :class:`~solar.frontend.torch.lower.Lowerer`, tagging each kernel
    with its phase and origin."""

    def __init__(self, gm, name, policy, recorder: PhaseRecorder) -> None:
        super().__init__(gm, name, policy)
        self.recorder = recorder
        self.kernels_of: dict[fx.Node, list[str]] = {}
        self.placeholder_names: dict[fx.Node, str] = {}

    def lower_call(self, node: fx.Node) -> object:
        start = len(self.program.kernels)
        out = super().lower_call(node)
        new = self.program.kernels[start:]
        if new:
            self.kernels_of[node] = [k.name for k in new]
            for k in new:
                self.annotate(k, node)
        return out

    def annotate(self, k, node: fx.Node) -> None:
        phase = node.meta.get("solar_phase", "forward")
        k.phase = phase
        if phase in ("backward", "recompute"):
            gname, seq = node.meta.get("solar_grad_fn", ("", -1))
            fwd = self.recorder.forward_of_seq.get(seq)
            if phase == "recompute":
                k.origin = f"recomputed for {gname}"
            elif fwd is not None:
                k.origin = f"{gname} of {self.kernels_of.get(fwd, [fwd.name])[0]}"
                k.module = module_label(fwd) or k.module
                k.source = node_source(fwd) or k.source
            else:
                k.origin = gname
        elif phase == "optimizer":
            names = self._tensor_names(node)
            k.module = f"optimizer ({node.meta.get('solar_optimizer', 'gradients')})"
            k.origin = _origin(k.origin, names)

    def _tensor_names(self, node: fx.Node) -> list[str]:
        """The parameter (or input) behind each tensor of the node's first tensor argument."""
        for a in node.args:
            items = a if isinstance(a, (list, tuple)) else [a]
            if items and all(isinstance(x, fx.Node) for x in items):
                return [self._root_name(x) for x in items]
        return []

    def _root_name(self, n: fx.Node) -> str:
        """Follow first arguments (views, list items of foreach results) to a graph input
        or a parameter's gradient."""
        for _ in range(50):
            if n in self.recorder.grad_names:
                return self.recorder.grad_names[n]
            if n.op != "call_function" or not n.args:
                break
            first = n.args[0]
            if n.target is operator.getitem and isinstance(first, fx.Node):
                src = first.args[0] if first.args else None
                if isinstance(src, (list, tuple)) and n.args[1] < len(src):
                    n = src[n.args[1]]
                    continue
            if not isinstance(first, fx.Node):
                break
            n = first
        return self.placeholder_names.get(n, "")


def _origin(covered: str, names: list[str]) -> str:
    """The parameters an optimizer kernel updates: all of the node's list, or the items
    ``tensors[a:b]`` a foreach launch covers."""
    if covered.startswith("tensors[") and names:
        a, b = (int(x) for x in covered[len("tensors[") : -1].split(":"))
        names = names[a:b]
    elif covered:
        return covered
    names = [n for n in dict.fromkeys(names) if n]
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]} … {names[-1]} ({len(names)} tensors)"
