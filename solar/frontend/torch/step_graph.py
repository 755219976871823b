"""The graph of a traced training step: the phase of each node, the host-side work eager CUDA
launches no kernel for, and the lowering that tags each kernel with its phase and origin.

While make_fx traces (:class:`PhaseRecorder`): a node made inside ``optimizer.step()`` is
``optimizer``; one made while the autograd engine runs a node is ``backward`` (``recompute``
when a ``torch.utils.checkpoint`` frame is re-running the forward); the ``ones_like`` seed of
``loss.backward()`` is ``backward``; a node made under ``no_grad`` after the backward
(clipping, a hand-written update) is ``optimizer``; the rest is ``forward``. A forward node is
keyed by the sequence number of the autograd node it creates, so a backward node finds the
forward node it differentiates through ``grad_fn._sequence_nr()``.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.fx as fx

from solar.frontend.torch.lower import Lowerer, tensor_vals
from solar.frontend.torch.provenance import module_label, node_source


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
            node.meta["solar_grad_fn"] = ("loss gradient seed", None)
        else:
            node.meta["solar_phase"] = "forward"
            seq = torch.autograd._get_sequence_nr() - 1
            if seq >= 0:  # an autograd node exists (this one's, or an earlier op's)
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


def drop_open_full_slices(gm: fx.GraphModule) -> None:
    """In a symbolic trace: the ``slice_backward`` of an open full slice (``x[:, 0:]``,
    start 0, no end, step 1) is its gradient unchanged. Eager indexing returns ``x`` itself
    for such a slice (no slice, hence no backward kernel) when the dim's size is a number,
    which a numeric trace records; with a symbolic size PyTorch cannot tell the slice is
    whole and records it. An explicit end (``narrow``, ``split``) is left as traced."""
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target is not torch.ops.aten.slice_backward.default:
            continue
        g, _, _, start, end, step = n.args
        plain = all(type(v) is int for v in (start, end, step))
        if plain and start == 0 and end >= sys.maxsize and step == 1:
            n.replace_all_uses_with(g)
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
            fwd = self.recorder.forward_of_seq.get(seq) if seq is not None else None
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
