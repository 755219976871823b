"""The steps a serving engine runs, as programs of the model's own code, and their bounds at
any batch and context from one trace (docs/serving.md).

- the **decode step**: :func:`step_phase`, ``new`` tokens per sequence (1, or ``k + 1`` when
  verifying k speculative drafts) after ``context`` cached ones, in a ``StaticCache`` of
  ``context + new`` slots written in place (:class:`solar.llm.StaticDecodeStep`); an fp8 KV
  cache stores its keys and values in float8 and converts them as attention reads them;
  chunked prefill runs a chunk of a prompt in the same program (:class:`MixedStep`);
- the **prefill**: :func:`prefill_phase`, the prompt's forward (after a cached shared prefix
  when prefix caching is on).

:class:`StepTrace` traces a step once with ``batch`` and ``context`` as symbols where PyTorch
can (docs/symbolic.md): a point inside the trace's count region is its formula (the traced
GPU) or its symbolic graph evaluated there (any other GPU, any plan), without a new trace; a
point outside (``batch = 1``), or a model PyTorch cannot trace symbolically (a router's
data-dependent sizes), is traced at that point, once (memoized).
"""

from __future__ import annotations

from collections.abc import Callable

from solar.api import bound_graph, bound_parallel, trace_and_lift
from solar.backend.result import Bound
from solar.hw import load_spec
from solar.questions.executors import one_line
from solar.questions.serving_engine import Engine

Maker = Callable[[int, int], object]  # (batch, context) -> a solar.llm.Phase


def _fp8_layer(layer) -> None:
    """Make one cache layer store float8 keys and values, converted back as attention reads
    them (the class of ``layer`` with :meth:`update` wrapped)."""
    import torch

    base = type(layer)

    def update(self, key_states, value_states, *args, **kwargs):
        fp8 = self.keys.dtype
        keys, values = base.update(self, key_states.to(fp8), value_states.to(fp8), *args, **kwargs)
        return keys.to(key_states.dtype), values.to(value_states.dtype)

    layer.__class__ = type(f"Fp8{base.__name__}", (base,), {"update": update})
    assert layer.keys.dtype == torch.float8_e4m3fn


def step_phase(model, batch: int, context: int, engine: Engine, *, new: int | None = None):
    """One serving step of ``model``: ``new`` tokens (default the engine's: 1, or k + 1) per
    sequence of ``batch`` after ``context`` cached tokens (see the module docstring)."""
    import torch
    import transformers

    from solar.frontend.torch.llm import Phase, StaticDecodeStep, _device_dtype, _ids, _kv_shape

    new = engine.new_tokens if new is None else new
    device, dtype = _device_dtype(model)
    _, key_shape, value_shape = _kv_shape(model, batch, context)
    kv_dtype = torch.float8_e4m3fn if engine.kv_cache == "fp8" else dtype
    ids = _ids(model, batch, new, device)
    positions = (torch.arange(new, device=device) + context).expand(batch, new)
    cache = transformers.StaticCache(config=model.config, max_cache_len=context + new)
    for layer in cache.layers:
        layer.lazy_initialization(
            torch.empty((*key_shape[:2], 1, key_shape[3]), dtype=kv_dtype, device=device),
            torch.empty((*value_shape[:2], 1, value_shape[3]), dtype=kv_dtype, device=device),
        )
        layer.cumulative_length = torch.tensor(context, dtype=torch.long, device=device)
        if engine.kv_cache == "fp8":
            _fp8_layer(layer)
    return Phase(StaticDecodeStep(model, context), (ids, positions, cache))


def step_sizes(phase, new: int, context: int) -> dict[str, list[tuple]]:
    """``batch`` and ``context`` of a :func:`step_phase` as symbolic sizes: the ids', the
    positions' and every cached key's and value's first dim, and the cache's slots
    (``context + new``) of each layer whose cache holds the whole context (a sliding-window
    layer's holds ``min(window, context + new)``: its length is left a number, see
    :func:`window_range`); of a :class:`MixedStep`, those of its decode part."""
    from solar.frontend.torch import structure

    cache = phase.inputs[2]
    slots = context + new
    batch: list[tuple] = [(0, 0), (1, 0)]
    context: list[tuple] = []
    for path, tensor in structure.flatten(cache):
        if path[-1] in (structure.Attr("keys"), structure.Attr("values")):
            binding = ("input", (2, *path))
            batch.append((binding, 0))
            if not getattr(_layer_of(cache, path), "is_sliding", False) or (
                tensor.shape[2] == slots
            ):
                context.append((binding, 2, new))
    return {"batch": batch, "context": context}


def _layer_of(cache, path):
    """The cache layer a flattened path (``layers, i, keys``) belongs to."""
    from solar.frontend.torch import structure

    if len(path) > 1 and path[0] == structure.Attr("layers") and isinstance(path[1], int):
        return cache.layers[path[1]]
    return None


def window_range(model, context: int, new: int) -> tuple[int, float]:
    """The contexts where a step traced at ``context`` has the same cache layout: a model with
    sliding-window layers caps their cache at the window ``W``, so a trace with ``context + new
    >= W`` holds for every context that long, one below it for every context that short."""
    text = model.config.get_text_config()
    window = getattr(text, "sliding_window", None)
    kinds = getattr(text, "layer_types", None) or ()
    if not isinstance(window, int) or not any("sliding" in str(k) for k in kinds):
        return 1, float("inf")
    if context + new >= window:
        return max(1, window - new), float("inf")
    return 1, window - new


def _mixed_module():
    import torch

    class MixedStep(torch.nn.Module):
        """A decode step and a prompt chunk in one program: chunked prefill's step (the
        weights are read once for both)."""

        def __init__(self, decode, chunk) -> None:
            super().__init__()
            self.decode, self.chunk = decode, chunk

        def forward(self, ids, positions, cache, chunk_ids, chunk_positions, chunk_cache):
            return self.decode(ids, positions, cache), self.chunk(
                chunk_ids, chunk_positions, chunk_cache
            )

    return MixedStep


def mixed_phase(model, batch: int, context: int, engine: Engine, prompt: int):
    """The chunked-prefill step: the decode step and ``engine.chunked_prefill`` tokens of one
    prompt after half of the rest of it (the mean of the chunks' cached tokens, rounded down)."""
    from solar.frontend.torch.llm import Phase

    chunk = min(engine.chunked_prefill, prompt - engine.prefix_tokens)
    done = engine.prefix_tokens + (prompt - engine.prefix_tokens - chunk) // 2
    step = step_phase(model, batch, context, engine)
    part = step_phase(model, 1, max(done, 1), engine, new=chunk)
    program = _mixed_module()(step.program, part.program)
    return Phase(program, (*step.inputs, *part.inputs))


def prefill_phase(model, batch: int, prompt: int, engine: Engine):
    """The prompt's forward: the whole prompt, or (prefix caching) the prompt's own tokens
    after the shared ones, cached."""
    from solar.frontend.torch.llm import prefill

    if engine.prefix_tokens:
        return step_phase(
            model, batch, engine.prefix_tokens, engine, new=prompt - engine.prefix_tokens
        )
    return prefill(model, batch=batch, context=prompt)


class StepTrace:
    """One step's bounds at any ``(batch, context)`` (see the module docstring); ``spec``: the
    GPU the symbolic trace is analysed on (others re-analyse its graph)."""

    def __init__(
        self, make: Maker, *, name: str, notes, spec, new: int, ref: tuple[int, int],
        contexts: tuple[int, float] = (1, float("inf")),
    ):  # fmt: skip
        self.make, self.name, self.notes = make, name, list(notes)
        self.contexts = contexts  # where the symbolic trace's cache layout holds
        self.spec = load_spec(spec)
        self.symbolic = None
        self.why_numeric: str | None = None
        self.traces = 0
        self._graphs: dict[tuple[int, int], object] = {}
        phase = make(*ref)
        try:
            from solar.symbolic.trace import bound_symbolic

            self.symbolic = bound_symbolic(
                phase.program, phase.inputs, self.spec, step_sizes(phase, new, ref[1]), name=name,
                numeric=None,
            )  # fmt: skip
            self.traces += 1
        except (NotImplementedError, ValueError, TypeError) as e:
            self.why_numeric = one_line(e)

    def _sizes(self, batch: int, context: int) -> dict[str, int]:
        """The symbolic sizes at this point (no ``context`` where every layer's cache is a
        window's, of one length at every context in :attr:`contexts`)."""
        return (
            {"batch": batch, "context": context}
            if "context" in self.symbolic.sizes
            else {"batch": batch}
        )

    def _point(self, batch: int, context: int) -> dict:
        return self.symbolic.analysis.point(self._sizes(batch, context))

    def inside(self, batch: int, context: int) -> bool:
        """Whether the symbolic trace counts this point exactly."""
        lo, hi = self.contexts
        return (
            self.symbolic is not None
            and lo <= context <= hi
            and self.symbolic.analysis.inside(self._point(batch, context))
        )

    def graph(self, batch: int, context: int):
        """The step's einsum graph at this point: the symbolic graph evaluated there, else a
        trace there (memoized)."""
        key = (batch, context)
        if key not in self._graphs:
            if self.inside(batch, context):
                from solar.algebra.walk import evaluate

                a = self.symbolic.analysis
                self._graphs[key] = evaluate(a.graph, self._point(*key), a._graph_template())
            else:
                phase = self.make(batch, context)
                _, g = trace_and_lift(phase.program, phase.inputs, name=self.name, notes=self.notes)
                self.traces += 1
                self._graphs[key] = g
        return self._graphs[key]

    def bound(self, batch: int, context: int, spec=None) -> Bound:
        """The step's Bound on one GPU: the formula where it holds on the traced GPU."""
        spec = self.spec if spec is None else load_spec(spec)
        if spec.key == self.spec.key and self.inside(batch, context):
            return self.symbolic.quick_at(**self._sizes(batch, context))
        return bound_graph(self.graph(batch, context), spec)

    def on(self, batch: int, context: int, spec, gpus: int):
        """``(time at the fused level, bound by, per-GPU peak bytes, fits, plan in words)`` of
        the step on ``gpus`` GPUs of ``spec`` with the best plan (:func:`solar.api.
        bound_parallel`); one GPU: its Bound."""
        spec = load_spec(spec)
        if gpus == 1:
            b = self.bound(batch, context, spec)
            peak = b.memory.peak_bytes if b.memory is not None else 0
            return float(b.fused), str(b.fused_bound_by), float(peak), bool(b.fits), "one GPU"
        single = self.bound(batch, context, spec)
        pb = bound_parallel(self.graph(batch, context), spec, gpus, single=single)
        return (
            float(pb.fused),
            str(pb.fused_bound_by),
            float(pb.peak_bytes),
            pb.fits,
            pb.plan.describe(),
        )

    def terms(self) -> dict[str, str]:
        """The terms whose max is the step's fused bound on the traced GPU (each unit's compute
        time, DRAM bytes over bandwidth, the latency floor), in seconds, as formulas of batch
        and context (sympy text); empty when the step is traced at each point."""
        if self.symbolic is None:
            return {}
        return {k: str(v) for k, v in self.symbolic.terms("fused").items()}
