"""Trace a PyTorch module or function to an fx graph of aten operators, on fake tensors.

``make_fx`` runs the program on FakeTensors (no real compute, no memory for weights: a module on
the ``meta`` device works) and records every aten operator the dispatcher sees, with no
decomposition table: what it records is what eager PyTorch launches (CompositeImplicit
operators such as ``linear`` arrive already decomposed, as in eager). Parameters and buffers are
passed in through ``torch.func.functional_call`` so they become graph inputs.

The exceptions are library calls that eager CUDA runs as one fused kernel but a CPU/meta trace
records as their decomposition (``scaled_dot_product_attention``, cuDNN's LSTM/GRU/RNN): while
tracing, :func:`solar.frontend.torch.fused.intercept_fused` keeps each as one
``torch.ops.solar`` node (see :mod:`solar.frontend.torch.fused`).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch

from solar.frontend.protocol import Binding, Trace
from solar.frontend.torch import structure
from solar.frontend.torch.eager_checks import eager_checks
from solar.frontend.torch.fused import intercept_fused
from solar.frontend.torch.known import known_values
from solar.frontend.torch.lower import Lowerer, ir_dtype
from solar.frontend.torch.modes import mode_notes
from solar.frontend.torch.precision import torch_policy
from solar.frontend.torch.provenance import is_user_file, record_provenance
from solar.frontend.torch.ranges import ranged_items
from solar.frontend.torch.registry import DataDependentOperatorError, UnsupportedOperatorError
from solar.frontend.torch.sizes import Routing, SizePolicy, sized_fake_ops
from solar.frontend.torch.sizes import observe as observe_sizes
from solar.frontend.torch.sparse import dense_outputs, sparse_tensors
from solar.frontend.torch.symbolic_shapes import SymbolicShapes
from solar.frontend.torch.unknown_values import check_fills_only
from solar.frontend.torch.wrappers import unwrap_module


@dataclass(frozen=True)
class TorchFeed:
    """How a PyTorch trace meets real tensors (:class:`~solar.frontend.protocol.Feed`).

    A trace's ``bindings`` map each IR input name to ``("param", name)``, ``("buffer", name)``
    (as in ``named_parameters``/``named_buffers``), ``("input", i)``, the position in
    ``inputs`` (a path, a tuple of keys, indices and
    :class:`~solar.frontend.torch.structure.Attr` s, for tensors nested in lists, dicts or
    objects such as a KV cache), or ``("kwarg", path)`` (the path starts with the keyword).
    Its ``output_names`` follow :func:`solar.frontend.torch.structure.tensors` of the result."""

    timer: str | None = None

    def values(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> dict[str, torch.Tensor]:
        """Real tensors of ``fn``'s parameters and buffers and of ``inputs`` (and ``kwargs``),
        by IR input name."""
        roots = {"input": inputs, "kwarg": dict(kwargs)}
        named: dict[str, dict[str, torch.Tensor]] = {"param": {}, "buffer": {}}
        fn, _ = unwrap_module(fn)
        if isinstance(fn, torch.nn.Module):
            named["param"] = dict(fn.named_parameters())
            named["buffer"] = dict(fn.named_buffers())
        out = {}
        for ir_name, (kind, key) in trace.bindings.items():
            if kind in roots:
                path = (key,) if isinstance(key, int) else key
                v = structure.lookup(roots[kind], path)  # type: ignore[arg-type]
            else:
                v = named[kind][key]  # type: ignore[index]
            out[ir_name] = v.detach()  # type: ignore[union-attr]
        return out

    def runner(
        self, trace: Trace, fn: object, inputs: tuple, kwargs: Mapping[str, object]
    ) -> Callable[[], object]:
        kw = dict(kwargs)
        return lambda: fn(*inputs, **kw)  # type: ignore[operator]

    def flatten(self, trace: Trace, result: object) -> list[torch.Tensor]:
        return structure.tensors(result, unique=False)


def trace_torch(
    fn: Callable[..., object] | torch.nn.Module,
    inputs: object,
    *,
    kwargs: Mapping[str, object] | None = None,
    name: str | None = None,
    precision: str | None = None,
    observe: bool = False,
    routing: object = "any",
    symbolic: SymbolicShapes | None = None,
) -> Trace:
    """Trace ``fn(*inputs, **kwargs)`` and lower it to the Affine Loop IR.

    ``fn`` is an ``nn.Module`` (its parameters and buffers become IR weights; a
    ``torch.compile``d, ``DataParallel`` or ``DistributedDataParallel`` one is traced as the
    module it wraps, and the assumptions say so) or a plain callable; ``inputs`` a tensor or a
    tuple/list of arguments, each a tensor or any structure holding tensors (lists, dicts,
    dataclasses, objects such as a Hugging Face KV cache: see
    :mod:`solar.frontend.torch.structure`); other values are passed through as constants.
    Tensors may be ``meta`` tensors, and one tensor passed twice is one graph input. Every
    tensor of the result, however nested, is a program output. ``precision`` ("tf32" or
    "ieee") overrides PyTorch's float32 matmul setting. Nothing is computed and no weight is
    allocated; the caller's model, inputs and their objects are left as they were.

    Data-dependent sizes (``nonzero``, boolean masks, ``unique``, ...) are traced at their
    smallest possible value, or with ``observe=True`` at the sizes of one real run of the
    program on ``inputs`` (real tensors and weights; a stateful program runs once more);
    ``routing`` splits the rows of grouped GEMMs over the experts (see
    :mod:`solar.frontend.torch.sizes`). The trace's assumptions list every size taken.
    ``symbolic`` makes the dims it names symbols (keyed by each graph input's binding,
    ``("input", 0)`` or ``("param", name)``): the program's sizes are then
    :class:`~solar.algebra.size.Size` s (see :mod:`solar.frontend.torch.symbolic_shapes`).
    """
    policy = torch_policy(precision)
    fn, wrapper_notes = unwrap_module(fn)
    sizes = SizePolicy(Routing.parse(routing))
    if observe:
        sizes.observed = _observe(fn, inputs, kwargs)
    args, kw = _as_tuple(inputs), dict(kwargs or {})
    module = fn if isinstance(fn, torch.nn.Module) else None
    params = dict(module.named_parameters()) if module is not None else {}
    buffers = dict(module.named_buffers()) if module is not None else {}
    tensor_inputs = structure.flatten((args, kw))
    specs = _graph_inputs(
        params,
        buffers,
        tensor_inputs,
        _argument_names(module.forward if module is not None else fn, len(args)),
    )
    n_named = len(params) + len(buffers)
    reals = _real_values([*params.values(), *buffers.values()])  # outside the fake mode

    def traced(*flat: torch.Tensor) -> list[torch.Tensor]:
        fakes_of = {id(t): f for (_, t), f in zip(tensor_inputs, flat[n_named:], strict=True)}
        call_args, call_kw = structure.rebuild((args, kw), lambda t: fakes_of[id(t)], device)  # type: ignore[misc]
        with (
            intercept_fused(),
            _autocast_on(device.type, remapped),
            known_values(sizes, reals) as k,
            ranged_items(k.values, sizes.chosen) if sizes.observed is None else nullcontext(),
            # innermost: the calls as the program makes them, on the user's devices
            eager_checks(module, [(f, t.device) for f, (*_, t) in zip(flat, specs, strict=True)]),
            sparse_tensors(sizes),  # innermost: sparse layouts as their stored elements
        ):
            routers.append(k)
            if module is None:
                result = fn(*call_args, **call_kw)
            else:
                p = dict(zip(params, flat[: len(params)], strict=True))
                b = dict(zip(buffers, flat[len(params) : n_named], strict=True))
                result = torch.func.functional_call(module, (p, b), tuple(call_args), call_kw)
        return dense_outputs(structure.tensors(result, unique=False))

    routers: list = []  # the KnownValues of the trace (its routing notes)
    if symbolic is None:
        fakes = _fake_tensors([t for *_, t in specs])
    else:
        fakes = symbolic.fakes([(binding, t) for _, _, binding, t in specs])
    sizes_kept = symbolic.active() if symbolic is not None else nullcontext()
    device = fakes[0].device if fakes else torch.device("cpu")
    remapped: set[str] = set()
    from torch.fx._lazy_graph_module import _use_lazy_graph_module
    from torch.fx.experimental.proxy_tensor import make_fx

    try:
        # a lazy graph module: its Python code is generated only if it is run, which the
        # lowering never does (FX's code for `aten.random_.from` is not valid Python)
        with (
            torch.no_grad(),
            _state_kept(module),
            record_provenance(module),
            _use_lazy_graph_module(True),
            sized_fake_ops(sizes),
            sizes_kept,
        ):
            gm = make_fx(traced, tracing_mode="fake")(*fakes)
        check_fills_only(gm)
    except Exception as e:
        error = _tracing_error(e)
        if error is None and symbolic is not None and _symbolic_failure(e):
            error = _symbolic_error(e, symbolic)
        if error is None:
            raise
        raise error from e

    default_name = type(module).__name__ if module is not None else getattr(fn, "__name__", "")
    prog_name = name or default_name or "program"
    lowerer = Lowerer(gm, prog_name, policy)
    lowerer.sizes = sizes
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    bindings: dict[str, Binding] = {}
    with symbolic.active() if symbolic is not None else nullcontext():
        for node, (stem, role, binding, _) in zip(placeholders, specs, strict=True):
            what = f"{binding[0]} {binding[1]!r}"
            bindings[lowerer.declare_input(node, stem, role, what).name] = binding
        lowerer.run()
    output_names = lowerer.outputs()
    lowerer.program.outputs = list(dict.fromkeys(output_names))
    notes = [
        f"torch.autocast({d!r}) traced with PyTorch's {device.type} autocast policy (the same "
        "low-precision matmul/conv list; ops CUDA upcasts to fp32 stay low-precision: fewer "
        "bytes, still a lower bound)"
        for d in sorted(remapped)
    ]
    notes += wrapper_notes + mode_notes(module, lowerer.program)
    notes += [line for k in routers[:1] for line in k.notes()] + sizes.notes() + lowerer.notes
    return Trace(
        "torch",
        lowerer.verified(),
        bindings,
        tuple(output_names),
        TorchFeed(),
        assumptions=tuple(notes),
        graph=gm,
        kernels_of=lowerer.kernels_of,
    )


def _observe(fn: object, inputs: object, kwargs: Mapping[str, object] | None) -> dict:
    """The data-dependent sizes of one real run of ``fn(*inputs, **kwargs)``."""
    args, kw = _as_tuple(inputs), dict(kwargs or {})
    tensors = [t for _, t in structure.flatten((args, kw))]
    if isinstance(fn, torch.nn.Module):
        tensors += [*fn.parameters(), *fn.buffers()]
    if any(t.device.type == "meta" for t in tensors):
        raise ValueError(
            "observe=True runs the program once on its inputs to see its data-dependent sizes: "
            "pass real tensors and a model with real weights (not on the meta device)"
        )
    with intercept_fused():  # the operators the trace will see (one_hot checks no values)
        return observe_sizes(lambda: fn(*args, **kw))


def _graph_inputs(
    params: dict[str, torch.Tensor],
    buffers: dict[str, torch.Tensor],
    tensor_inputs: list[tuple[tuple, torch.Tensor]],
    arg_names: list[str],
) -> list[tuple[str, str, Binding, torch.Tensor]]:
    """(IR name stem, role, binding, tensor) of each graph input, in placeholder order
    (parameters, buffers, tensor inputs: paths into ``(args, kwargs)``); rejects dtypes the IR
    cannot express."""
    specs: list[tuple[str, str, Binding, torch.Tensor]] = []
    for pname, t in params.items():
        ir_dtype(t.dtype, f"parameter {pname!r}")
        specs.append((pname.replace(".", "_"), "weight", ("param", pname), t))
    for bname, t in buffers.items():
        ir_dtype(t.dtype, f"buffer {bname!r}")
        specs.append((bname.replace(".", "_"), "weight", ("buffer", bname), t))
    for (root, first, *rest), t in tensor_inputs:
        if root == 0:  # a positional argument
            label = structure.path_label((arg_names[first], *rest))  # type: ignore[index]
            key: object = first if not rest else (first, *rest)
            binding: Binding = ("input", key)
        else:
            label = structure.path_label((first, *rest))
            binding = ("kwarg", (first, *rest))
        ir_dtype(t.dtype, f"input {label!r}")
        specs.append((label, "input", binding, t))
    return specs


def _real_values(named: list[torch.Tensor]) -> list[torch.Tensor | None]:
    """The real tensor of each parameter and buffer (None on ``meta``): values the trace may
    read (:mod:`solar.frontend.torch.model_reads`)."""
    return [None if t.device.type == "meta" else t.detach() for t in named]


def _as_tuple(inputs: object) -> tuple:
    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (list, tuple)):
        return tuple(inputs)
    return (inputs,)


def _argument_names(fn: object, n: int) -> list[str]:
    """Readable names for ``n`` positional arguments of ``fn`` (``x``, ``args0``, ...)."""
    names: list[str] = []
    try:
        params = list(inspect.signature(fn).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        params = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names += [f"{p.name}{k}" for k in range(n - len(names))]
    names += [f"input{k}" for k in range(len(names), n)]
    return names[:n]


def _fake_tensors(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Contiguous FakeTensors with the shapes and dtypes of ``tensors``, on one device: the
    first non-meta device among them (mixing ``meta`` weights with CPU inputs is fine)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    devices = [t.device for t in tensors if t.device.type != "meta"]
    # All-meta programs trace on fake CPU tensors (still nothing allocated): on meta,
    # torch.autocast would silently do nothing and a mixed-precision model would be costed fp32.
    device = devices[0] if devices else torch.device("cpu")
    # a shape environment holds the unknown numbers read from tensors (unknown_values.py)
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv())
    with mode:
        return [torch.empty(tuple(t.shape), dtype=t.dtype, device=device) for t in tensors]


@contextmanager
def _state_kept(module: torch.nn.Module | None) -> Iterator[None]:
    """Put every parameter, buffer and plain attribute of ``module`` and its submodules back
    after tracing. ``functional_call`` swaps the fakes in and out, but with a submodule
    registered under two names (``self.b = self.a``) torch leaves the fakes in the model; and a
    forward that stores a tensor in an attribute (``self.hidden = torch.tanh(...)``, a cache
    filled on first use) would leave a fake tensor there, breaking the next real run."""
    modules = list(module.modules()) if module is not None else []
    saved = [
        (slots, key, value)
        for m in modules
        for slots in (m._parameters, m._buffers)
        for key, value in slots.items()
    ]
    attrs = [(m, dict(vars(m))) for m in modules]
    try:
        yield
    finally:
        for slots, key, value in saved:
            if slots.get(key) is not value:
                slots[key] = value
        for m, before in attrs:
            now = vars(m)
            for key in [k for k in now if k not in before]:
                del now[key]
            for key, value in before.items():
                if now.get(key, _GONE) is not value:
                    now[key] = value


_GONE = object()


@contextmanager
def _autocast_on(device_type: str, remapped: set[str]) -> Iterator[None]:
    """While tracing, ``torch.autocast`` for another device type (``"cuda"`` in a program
    traced on CPU fake tensors) applies to the tracing device instead, keeping its dtype
    (CUDA's default float16 when none is given); each remapped type is recorded."""
    from torch.amp import autocast_mode

    cls = autocast_mode.autocast
    original = cls.__init__

    def init(self, device_type_=None, dtype=None, enabled=True, cache_enabled=None, **kw):
        requested = kw.pop("device_type", device_type_)
        if requested != device_type and requested in ("cuda", "cpu", "xpu", "hpu", "mps"):
            remapped.add(requested)
            if dtype is None:
                dtype = torch.get_autocast_dtype(requested)
            requested = device_type
        original(self, requested, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    cls.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        cls.__init__ = original  # type: ignore[method-assign]


#: what PyTorch says where an operator's fake kernel cannot take symbolic shapes
_SYMBOLIC_FAILURES = (
    "symbolic",
    "SymInt",
    "TensorIterator does not support",
    "INTERNAL ASSERT FAILED",
    "modify sizes for customized tensor",
)


def _symbolic_failure(e: Exception) -> bool:
    return isinstance(e, RuntimeError) and any(m in str(e) for m in _SYMBOLIC_FAILURES)


def _symbolic_error(e: Exception, symbolic: SymbolicShapes) -> Exception:
    """PyTorch's own failure to trace an operator with symbolic shapes, in one line naming the
    sizes, the user line and the way out (the numeric path traces it)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if is_user_file(f.filename)]
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    names = ", ".join(sorted({name for name, _ in symbolic.dims.values()}))
    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return NotImplementedError(
        f"symbolic sizes {names}: PyTorch cannot trace this program with symbolic shapes{where}"
        f" ({first[:160]}); bound it at one size (solar.bound without symbolic=)"
    )


def _tracing_error(e: Exception) -> Exception | None:
    """Turn fake-tensor failures into one-line errors naming the operator and the user line."""
    from torch._subclasses import fake_tensor as ft
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    frames = [f for f in traceback.extract_tb(e.__traceback__) if is_user_file(f.filename)]
    source = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    if isinstance(e, (ft.DynamicOutputShapeException, ft.DataDependentOutputException)):
        return DataDependentOperatorError(e.func, source)
    if isinstance(e, GuardOnDataDependentSymNode):  # a branch or a size on an unknown number
        return DataDependentOperatorError(torch.ops.aten._local_scalar_dense.default, source)
    if isinstance(e, ft.UnsupportedOperatorException):
        return UnsupportedOperatorError(e.func, source, "cannot run on fake tensors")
    return None
