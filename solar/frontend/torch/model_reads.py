"""Python values read from the model's own tensors: known where the model has real values.

The trace runs on fake tensors, so ``.item()`` (or a tensor turned into a Python number by an
argument parser: ``x.new_full((n, 1), self.stride[i])``, YOLO's anchor strides) normally stops
it as data-dependent. But a model built on a real device holds the values of its parameters
and buffers, so a value computed from them alone is known, not data: ``stride[i]`` of a buffer
``[8, 16, 32]`` is 16 whatever the input, and so is a tensor the program holds as a plain
attribute (YOLO's ``Detect.stride``, a constant of the traced graph). While tracing, such a read
is answered by evaluating, on the real tensors, only the part of the traced graph that computes
it (its ancestors, back to the parameters, buffers and constants); a read that depends on an
input, on a ``meta`` tensor or on a tensor the program changed in place before reading it
(anything aliasing the storage it reads from) is left as it was.
"""

from __future__ import annotations

import torch
import torch.fx as fx
from torch.utils import _pytree as pytree


class ModelReads:
    """Evaluates reads of fake tensors computed from the model's real parameters and buffers.

    ``reals`` holds, in placeholder order, the real tensor of each of the traced graph's first
    placeholders (the parameters, then the buffers), or None where it has no values (``meta``).
    """

    def __init__(self, reals: list[torch.Tensor | None]) -> None:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode

        self.reals = reals
        self.proxy = get_proxy_mode()

    def value(self, t: torch.Tensor) -> torch.Tensor | None:
        """The real value of fake ``t``, or None where it is not computed from real model
        tensors alone."""
        from torch.fx.experimental.proxy_tensor import get_proxy_slot

        if self.proxy is None:
            return None
        slot = get_proxy_slot(t, self.proxy.tracer, None)
        node = getattr(getattr(slot, "proxy", None), "node", None)
        if not isinstance(node, fx.Node):
            return None
        return self._evaluate(node)

    def _evaluate(self, target: fx.Node) -> torch.Tensor | None:
        graph = target.graph
        placeholders = {n: k for k, n in enumerate(n for n in graph.nodes if n.op == "placeholder")}
        ancestors: set[fx.Node] = set()
        stack = [target]
        while stack:
            n = stack.pop()
            if n not in ancestors:
                ancestors.add(n)
                stack.extend(n.all_input_nodes)
        roots = [n for n in ancestors if n.op in ("placeholder", "get_attr")]
        real = {n: self._root(n, placeholders) for n in roots}
        if any(v is None for v in real.values()):
            return None  # an input or a meta tensor: its values are data
        if _mutated_since(graph, roots):
            return None
        values: dict[fx.Node, object] = {}
        with torch.no_grad():
            for n in graph.nodes:  # graph order is a topological order
                if n not in ancestors:
                    continue
                if n in real:
                    values[n] = real[n].clone()  # type: ignore[union-attr]
                elif n.op == "call_function":
                    args, kwargs = pytree.tree_map(
                        lambda a: values[a] if isinstance(a, fx.Node) else a, (n.args, n.kwargs)
                    )
                    try:
                        values[n] = n.target(*args, **kwargs)  # type: ignore[operator]
                    except Exception:  # noqa: BLE001 - a kernel the CPU lacks: unknown
                        return None
                else:
                    return None
        out = values[target]
        return out if isinstance(out, torch.Tensor) else None

    def _root(self, node: fx.Node, placeholders: dict[fx.Node, int]) -> torch.Tensor | None:
        """The real tensor of a parameter or buffer placeholder, or of a tensor the program
        holds as a plain attribute (YOLO's ``Detect.stride``: a constant of the graph)."""
        from torch._subclasses.fake_tensor import FakeTensor

        if node.op == "placeholder":
            k = placeholders[node]
            return self.reals[k] if k < len(self.reals) else None
        value = getattr(self.proxy.tracer.root, str(node.target), None)  # type: ignore[union-attr]
        if not isinstance(value, torch.Tensor) or isinstance(value, FakeTensor):
            return None
        return None if value.device.type == "meta" else value


def _mutated_since(graph: fx.Graph, roots: list[fx.Node]) -> bool:
    """Whether an in-place operator of the graph so far wrote a tensor derived from ``roots``
    (a view of a buffer changed in place changes the buffer)."""
    derived, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n not in derived:
            derived.add(n)
            stack.extend(n.users)
    for n in graph.nodes:
        schema = getattr(n.target, "_schema", None)
        if schema is None or not schema.is_mutable:
            continue
        for arg, value in zip(schema.arguments, n.args, strict=False):
            if arg.alias_info is not None and arg.alias_info.is_write and value in derived:
                return True
        for name, value in n.kwargs.items():
            if value in derived and any(
                a.name == name and a.alias_info is not None and a.alias_info.is_write
                for a in schema.arguments
            ):
                return True
    return False
