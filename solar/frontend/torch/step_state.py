"""What a PyTorch training step reads and updates besides its arguments: the parameters and
buffers of the ``nn.Module`` s it uses and the state of its ``torch.optim`` optimizers.

A training step is an ordinary function (``loss.backward(); optimizer.step()``) that reaches
its model and optimizer through its closure or the module's globals. :func:`find_step_objects`
finds them there; :class:`StepState` names every tensor (``layers.0.weight``,
``layers.0.weight:exp_avg``) and, while the step is traced, puts fake tensors in their place
(:meth:`StepState.swapped`): in every module slot that holds a parameter or buffer, in the
optimizers' parameter groups, and as the optimizers' state. Everything is put back afterwards:
tracing never changes the user's model or optimizer.

The step is traced in its *steady state*: the optimizer state exists (an optimizer that has
not stepped yet is stepped once on fake tensors first, see :func:`optimizer_state_specs`),
and gradients start as ``None`` (as after ``optimizer.zero_grad()``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FunctionType, MethodType

import torch

#: The optimizer-state key that PyTorch's optimizers keep as a host-side step count.
STEP_KEY = "step"


@dataclass(frozen=True)
class StateSpec:
    """One tensor of an optimizer's state: ``opt.state[param][key]``."""

    optimizer: int  # index into StepState.optimizers
    param: str  # the parameter's name
    key: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    host_value: float | None = None  # a host-side step count (a Python number in the trace)

    @property
    def name(self) -> str:
        return f"{self.param}:{self.key}"


@dataclass
class StepState:
    """The modules and optimizers of a training step and the tensors they hold, by name."""

    modules: list[torch.nn.Module]
    optimizers: list[torch.optim.Optimizer]
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    state: list[StateSpec] = field(default_factory=list)
    static: dict[tuple[int, str], dict] = field(default_factory=dict)  # non-tensor state
    notes: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, modules, optimizers, prefixes=None) -> StepState:
        s = cls(list(modules), list(optimizers))
        seen: dict[int, str] = {}
        for i, m in enumerate(s.modules):
            prefix = prefixes[i] if prefixes and len(s.modules) > 1 else ""
            for n, p in m.named_parameters():
                if id(p) not in seen:
                    seen[id(p)] = prefix + n
                    s.params[prefix + n] = p
            for n, b in m.named_buffers():
                if b is not None and id(b) not in seen:
                    seen[id(b)] = prefix + n
                    s.buffers[prefix + n] = b
        loose = [
            p
            for o in s.optimizers
            for g in o.param_groups
            for p in g["params"]
            if id(p) not in seen
        ]
        if loose:
            raise ValueError(
                f"the optimizer holds {len(loose)} tensor(s) of shape "
                f"{tuple(loose[0].shape)} that no nn.Module of the step owns; solar swaps "
                "parameters through their modules: register them in an nn.Module the step "
                "uses (or pass modules=[...])"
            )
        return s

    def param_name(self, p: torch.Tensor) -> str:
        for n, q in self.params.items():
            if q is p:
                return n
        raise KeyError("not a parameter of the step")

    @contextmanager
    def swapped(self, params, buffers, state, *, foreach: bool) -> Iterator[None]:
        """Install ``params``/``buffers`` (name -> tensor) in every module slot holding the
        originals and in the optimizers' groups, and ``state`` ({(optimizer, param name):
        {key: value}}) as the optimizers' state; with ``foreach``, groups that leave
        ``foreach`` unset run the foreach implementation (PyTorch's default on CUDA)."""
        by_id = {id(self.params[n]): t for n, t in params.items()}
        by_id.update({id(self.buffers[n]): t for n, t in buffers.items()})
        undo: list = []
        try:
            for m in self.modules:
                for sub in m.modules():
                    for slots in (sub._parameters, sub._buffers):
                        for k, v in list(slots.items()):
                            if v is not None and id(v) in by_id:
                                undo.append((slots, k, v))
                                slots[k] = by_id[id(v)]
            for oi, o in enumerate(self.optimizers):
                undo.append((o.__dict__, "state", o.state))
                o.state = _state_dict(
                    {
                        by_id[id(p)]: dict(state.get((oi, self.param_name(p)), {}))
                        for g in o.param_groups
                        for p in g["params"]
                        if (oi, self.param_name(p)) in state
                    }
                )
                for g in o.param_groups:
                    undo.append((g, "params", g["params"]))
                    g["params"] = [by_id[id(p)] for p in g["params"]]
                    if foreach and g.get("foreach", "absent") is None and not g.get("fused"):
                        undo.append((g, "foreach", None))
                        g["foreach"] = True
            yield
        finally:
            for slots, k, v in reversed(undo):
                slots[k] = v


def _state_dict(entries: dict) -> object:
    from collections import defaultdict

    d: defaultdict = defaultdict(dict)
    d.update(entries)
    return d


# ---------------------------------------------------------------------------------------------
# Finding the model and the optimizer of a step function


def find_step_objects(fn) -> tuple[list, list, list[str]]:
    """``(modules, optimizers, names)``: the ``nn.Module`` s and ``torch.optim.Optimizer`` s a
    step function reaches through its closure, the globals its code names, a bound method's
    ``self`` or a ``functools.partial``'s arguments (and, one level down, the attributes of
    objects found there and the functions it calls), with the name each was found under.
    Submodules of a module already found are not listed again."""
    found: dict[int, tuple[str, object]] = {}
    _collect(fn, "", found, depth=0, seen=set())
    modules = [(n, o) for n, o in found.values() if isinstance(o, torch.nn.Module)]
    inner = {id(s) for _, m in modules for s in list(m.modules())[1:]}
    modules = [(n, m) for n, m in modules if id(m) not in inner]
    optimizers = [o for _, o in found.values() if isinstance(o, torch.optim.Optimizer)]
    return [m for _, m in modules], optimizers, [f"{n}." for n, _ in modules]


_MAX_ITEMS = 64  # of a list or dict searched (a dataset held in a global is not walked)


def _collect(obj, name: str, found: dict, *, depth: int, seen: set) -> None:
    if id(obj) in seen or depth > 3:
        return
    seen.add(id(obj))
    if isinstance(obj, (torch.nn.Module, torch.optim.Optimizer)):
        found.setdefault(id(obj), (name, obj))
        return
    if isinstance(obj, MethodType):
        _collect(obj.__self__, name or "self", found, depth=depth, seen=seen)
        _collect(obj.__func__, name, found, depth=depth, seen=seen)
        return
    if isinstance(obj, FunctionType):
        if obj.__module__ and obj.__module__.split(".")[0] in ("torch", "solar"):
            return
        try:
            cv = inspect.getclosurevars(obj)
        except (TypeError, ValueError):
            return
        for n, v in {**cv.globals, **cv.nonlocals}.items():
            _collect(v, n, found, depth=depth + 1, seen=seen)
        return
    func = getattr(obj, "func", None)  # functools.partial
    if callable(func) and hasattr(obj, "args"):
        for v in (func, *obj.args, *getattr(obj, "keywords", {}).values()):
            _collect(v, name, found, depth=depth + 1, seen=seen)
        return
    if isinstance(obj, (list, tuple)):
        for v in obj[:_MAX_ITEMS]:
            _collect(v, name, found, depth=depth + 1, seen=seen)
    elif isinstance(obj, dict):
        for k, v in list(obj.items())[:_MAX_ITEMS]:
            _collect(v, str(k), found, depth=depth + 1, seen=seen)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not inspect.ismodule(obj):
        for k, v in vars(obj).items():  # an object holding the model/optimizer (a trainer)
            _collect(v, k, found, depth=depth + 1, seen=seen)


def code_names(fn, depth: int = 0) -> set[str]:
    """Attribute and global names a function's code (and the user functions it calls) uses."""
    if isinstance(fn, MethodType):
        fn = fn.__func__
    code = getattr(fn, "__code__", None)
    if code is None or depth > 3:
        return set()
    if fn.__module__ and fn.__module__.split(".")[0] in ("torch", "solar"):
        return set()
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    try:
        cv = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return names
    for v in {**cv.globals, **cv.nonlocals}.values():
        if isinstance(v, FunctionType):
            names |= code_names(v, depth + 1)
    return names


# ---------------------------------------------------------------------------------------------
# Optimizer state


def optimizer_state_specs(s: StepState, mode, device) -> list[StateSpec]:
    """The tensors of each optimizer's state (non-tensor entries go to ``s.static``). An
    optimizer that has not stepped yet is stepped once first, on fake tensors of ``mode`` on
    ``device`` (nothing is allocated, the user's optimizer is left as it was), so its lazily
    created state exists: the traced step is a steady-state step. A 0-dim ``step`` entry that
    PyTorch keeps on the host (neither ``capturable`` nor ``fused``) becomes a Python number
    of the trace (``host_value``)."""
    empty = [oi for oi, o in enumerate(s.optimizers) if not o.state]
    warm = _warm_up(s, empty, mode, device) if empty else {}
    if empty:
        s.notes.append(
            "optimizer state created by one untraced step on fake tensors: the traced step is "
            "a steady-state step (state read and written; gradients start as after zero_grad())"
        )
    specs = []
    for oi, o in enumerate(s.optimizers):
        states = warm[oi] if oi in warm else {s.param_name(p): st for p, st in o.state.items()}
        device_steps = {
            s.param_name(p): bool(g.get("capturable") or g.get("fused"))
            for g in o.param_groups
            for p in g["params"]
        }
        for pname, st in states.items():
            for key, v in st.items():
                if not isinstance(v, torch.Tensor):
                    s.static.setdefault((oi, pname), {})[key] = v
                    continue
                host = key == STEP_KEY and v.ndim == 0 and not device_steps.get(pname, False)
                value = _number(v) if host else None
                specs.append(StateSpec(oi, pname, key, tuple(v.shape), v.dtype, value))
    return specs


def _number(t: torch.Tensor) -> float:
    constant = getattr(t, "constant", None)  # a FakeTensor that knows its value
    if constant is not None:
        return float(constant)
    if t.device.type == "meta":
        return 1.0
    return float(t.item())


def _warm_up(s: StepState, which: list[int], mode, device) -> dict[int, dict]:
    """Step optimizers ``which`` once on fake parameters with fake gradients (inside ``mode``)
    and return the state each created, by parameter name; nothing of the user's changes."""
    with mode:
        fakes = {n: fake_like(p, device, grad=True) for n, p in s.params.items()}
        fake_buffers = {n: fake_like(b, device) for n, b in s.buffers.items()}
        for f in fakes.values():
            if f.requires_grad:
                f.grad = torch.empty_like(f).requires_grad_(False)
    states = {}
    with s.swapped(fakes, fake_buffers, {}, foreach=True), mode:
        for oi in which:
            o = s.optimizers[oi]
            o.step()
            states[oi] = {n: dict(o.state[f]) for n, f in fakes.items() if f in o.state}
    return states


def fake_like(t: torch.Tensor, device, grad: bool = False) -> torch.Tensor:
    """A contiguous tensor like ``t`` on ``device`` (call inside a FakeTensorMode), a leaf
    that requires grad when ``t`` does and ``grad`` is set."""
    f = torch.empty(tuple(t.shape), dtype=t.dtype, device=device)
    if grad and t.requires_grad:
        f.requires_grad_(True)
    return f
