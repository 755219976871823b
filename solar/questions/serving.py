"""The serving frontier: per-token latency against tokens/s per GPU, at the speed of light
(``solar.serving``, ``solar serving hf:ID``; docs/serving.md).

For each GPU kind and count (the best TP x PP x DP plan :func:`solar.api.bound_parallel`
finds), over batch sizes from 1 to the largest whose weights, KV cache and activations fit each
GPU: the decode step's bound ``t(batch)`` at the mean context of a generation, TPOT
``= t / tokens per step`` (a lower bound) and tokens/s/GPU ``= batch x tokens per step / t /
GPUs`` (an upper bound); the TTFT bound of the prompt; the batch where the step turns from
memory-bound to compute-bound. Every number is a traced step's bound (the model's own code:
GQA, MLA, sliding windows, MoE routing), never a formula typed per architecture; the decode
step is traced once with batch and context as symbols where PyTorch can
(:mod:`solar.questions.serving_steps`). The engine's behaviours are switches
(:mod:`solar.questions.serving_engine`).

Targets, inverted exactly (bisection on integer batches, assuming TPOT grows with the batch):
the most tokens/s/GPU with TPOT <= ``tpot_s`` and TTFT <= ``ttft_s``, and the fewest GPUs that
serve ``requests_per_s`` requests of this shape, each with the term that binds it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from solar.api import bound_graph, bound_parallel, trace_and_lift
from solar.fmt import fmt_time
from solar.frozen import Frozen
from solar.hw import load_spec
from solar.questions.inverse import _largest
from solar.questions.serving_engine import Engine, ServingError
from solar.questions.serving_steps import (
    StepTrace,
    mixed_phase,
    prefill_phase,
    step_phase,
    window_range,
)
from solar.viewable import Viewable

#: bound-by terms of a step that are not a compute unit
MEMORY_TERMS = ("dram", "latency", "link", "pipeline")


@dataclass(frozen=True)
class FrontierPoint:
    """One batch size on one configuration."""

    batch: int
    step_s: float  # the decode step's bound (fused level)
    tpot_s: float  # step / tokens per step
    tokens_per_s_per_gpu: float
    ttft_s: float
    bound_by: str
    peak_bytes: float  # per GPU, at the held context
    plan: str


@dataclass(frozen=True)
class Frontier:
    """The frontier of one GPU kind and count."""

    hw: str
    hw_key: str
    gpus: int
    max_batch: int | None  # the largest batch that fits (None: not even batch 1)
    memory_binds: bool  # the batch search stopped at the memory limit (not at max_batch)
    compute_bound_from: int | None  # the first batch whose step is compute-bound
    ttft_s: float  # of one prompt (continuous batching), else at batch 1
    points: tuple[FrontierPoint, ...]
    reason: str | None = None  # why there is no frontier


@dataclass(frozen=True)
class Target:
    """One inverted question's answer: the configuration and batch, and what binds it."""

    question: str
    hw_key: str
    gpus: int | None
    batch: int | None
    tpot_s: float
    ttft_s: float
    tokens_per_s_per_gpu: float
    binding: str
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Serving(Frozen, Viewable):
    """The serving frontier of one model and request shape (see the module docstring)."""

    model: str
    prompt: int
    output: int
    decode_context: int
    held_context: int
    engine: Engine
    frontiers: tuple[Frontier, ...]
    targets: tuple[Target, ...]
    step_terms: Mapping[str, str]  # the decode step's bound on the first GPU: the max of these
    assumptions: tuple[str, ...]

    def frontier(self, hw: str, gpus: int) -> Frontier:
        """The frontier of ``gpus`` GPUs of ``hw`` (a catalogue key such as ``"H100"``)."""
        key = load_spec(hw).key
        for f in self.frontiers:
            if f.hw_key == key and f.gpus == gpus:
                return f
        raise KeyError(f"no frontier for {gpus} x {hw}: asked for {self.configurations()}")

    def configurations(self) -> str:
        return ", ".join(f"{f.gpus} x {f.hw_key}" for f in self.frontiers)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["step_terms"] = dict(self.step_terms)
        d["engine"] = self.engine.to_dict()
        return {"kind": "solar.serving/1", **d}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_number)


def _json_number(x):
    return float(x)


class _Config:
    """One GPU kind and count, with the steps' bounds memoized per batch."""

    def __init__(self, step: StepTrace, prefill, spec, gpus: int, ctx: dict, engine: Engine):
        self.step, self.prefill, self.spec, self.gpus = step, prefill, spec, gpus
        self.ctx, self.engine = ctx, engine
        self._memo: dict = {}

    def at(self, batch: int, context: int):
        key = (batch, context)
        if key not in self._memo:
            self._memo[key] = self.step.on(batch, context, self.spec, self.gpus)
        return self._memo[key]

    def peak(self, batch: int) -> float:
        """Per-GPU peak bytes with each sequence's cache of the held context's slots (the step
        at a context ``new`` tokens short of it), the shared prefix held once."""
        held, shared = self.ctx["held"] - self.engine.new_tokens, self.engine.prefix_tokens
        own = self.at(batch, held - shared)[2]
        if not shared:
            return own
        return own + self.at(1, held)[2] - self.at(1, held - shared)[2]

    def fits(self, batch: int) -> bool:
        return self.peak(batch) <= self.spec.dram_capacity

    def step_s(self, batch: int) -> float:
        return self.at(batch, self.ctx["decode"])[0]

    def tpot(self, batch: int) -> float:
        return self.step_s(batch) / self.engine.tokens_per_step

    def ttft(self, batch: int) -> float:
        """The prompt's first-token bound: chunked, the steps its prompt takes; else its
        prefill (alone with continuous batching, the batch's prompts together without)."""
        e = self.engine
        if e.chunked_prefill is not None:
            steps = math.ceil((self.ctx["prompt"] - e.prefix_tokens) / e.chunked_prefill)
            return steps * self.step_s(batch)
        return self.prefill(1 if e.continuous_batching else batch, self.spec, self.gpus)

    def point(self, batch: int) -> FrontierPoint:
        t, by, _, _, plan = self.at(batch, self.ctx["decode"])
        tps = self.engine.tokens_per_step
        return FrontierPoint(
            batch, t, t / tps, batch * tps / t / self.gpus, self.ttft(batch), by,
            self.peak(batch), plan,
        )  # fmt: skip


def _batches(top: int) -> list[int]:
    """1, 2, 4, ... up to ``top``, and ``top``."""
    out = [1 << i for i in range(top.bit_length()) if (1 << i) <= top]
    return out if out[-1] == top else [*out, top]


def _first_compute_bound(cfg: _Config, top: int) -> int | None:
    """The first batch in [1, top] whose step is compute-bound (it stays so above, as the
    compute grows with the batch faster than the bytes)."""
    if cfg.at(top, cfg.ctx["decode"])[1] in MEMORY_TERMS:
        return None
    last_memory = _largest(lambda b: cfg.at(b, cfg.ctx["decode"])[1] in MEMORY_TERMS, 1, top)
    return 1 if last_memory is None else last_memory + 1


def _frontier(cfg: _Config, max_batch: int) -> Frontier:
    spec, n = cfg.spec, cfg.gpus
    try:
        top = _largest(cfg.fits, 1, max_batch)
    except ValueError as e:  # no plan splits the step n ways
        return Frontier(spec.name, spec.key, n, None, False, None, math.inf, (), _line(e))
    if top is None:
        why = f"batch 1 does not fit: {cfg.peak(1):,.0f} B per GPU > {spec.dram_capacity:,} B"
        return Frontier(spec.name, spec.key, n, None, True, None, math.inf, (), why)
    points = tuple(cfg.point(b) for b in _batches(top))
    return Frontier(
        spec.name, spec.key, n, top, top < max_batch, _first_compute_bound(cfg, top),
        points[0].ttft_s, points,
    )  # fmt: skip


def _line(e: BaseException) -> str:
    from solar.questions.executors import one_line

    return one_line(e)


def _best_under(cfg: _Config, top: int, tpot_s: float | None, ttft_s: float | None):
    """The largest batch <= ``top`` meeting the targets, and what binds it."""

    def ok(b: int) -> bool:
        return (tpot_s is None or cfg.tpot(b) <= tpot_s) and (
            ttft_s is None or cfg.ttft(b) <= ttft_s
        )

    b = _largest(ok, 1, top)
    if b is None:
        return None, "TPOT" if tpot_s is not None and cfg.tpot(1) > tpot_s else "TTFT"
    if b == top:
        return b, "memory (the largest batch that fits)"
    return b, "TPOT" if tpot_s is not None and cfg.tpot(b + 1) > tpot_s else "TTFT"


def _target(question: str, gpus: int, p: FrontierPoint, f: Frontier, binding: str, text: str):
    return Target(
        question, f.hw_key, gpus, p.batch, p.tpot_s, p.ttft_s, p.tokens_per_s_per_gpu, binding,
        text,
    )  # fmt: skip


def _targets(configs, frontiers, output, tpot_s, ttft_s, requests_per_s) -> tuple[Target, ...]:
    """Per GPU kind: the configuration and batch of the most tokens/s/GPU meeting the
    targets; the fewest GPUs (replicas of a configuration at that batch) for the request
    rate."""
    best: dict[str, tuple[FrontierPoint, Frontier, str]] = {}
    fewest: dict[str, tuple[int, int, FrontierPoint, Frontier, str]] = {}
    for cfg, f in zip(configs, frontiers, strict=True):
        if f.max_batch is None:
            continue
        b, binding = _best_under(cfg, f.max_batch, tpot_s, ttft_s)
        if b is None:
            continue
        p = cfg.point(b)
        old = best.get(f.hw_key)
        if old is None or p.tokens_per_s_per_gpu > old[0].tokens_per_s_per_gpu:
            best[f.hw_key] = (p, f, binding)
        if requests_per_s is not None:
            replica = p.tokens_per_s_per_gpu * f.gpus
            replicas = math.ceil(requests_per_s * output / replica - 1e-12)
            if f.hw_key not in fewest or replicas * f.gpus < fewest[f.hw_key][0]:
                fewest[f.hw_key] = (replicas * f.gpus, replicas, p, f, binding)
    out: list[Target] = []
    if tpot_s is not None or ttft_s is not None:
        for p, f, binding in best.values():
            text = (
                f"{f.hw_key}: at most {p.tokens_per_s_per_gpu:,.0f} tokens/s/GPU on {f.gpus} "
                f"GPU(s) ({p.plan}), batch {p.batch}: TPOT {fmt_time(p.tpot_s)}, TTFT "
                f"{fmt_time(p.ttft_s)}; bound by {binding}"
            )
            out.append(_target("best_under_targets", f.gpus, p, f, binding, text))
    for total, replicas, p, f, binding in fewest.values():
        text = (
            f"{f.hw_key}: at least {total} GPUs for {requests_per_s:g} requests/s ({replicas} x "
            f"{f.gpus} GPU(s), {p.plan}, batch {p.batch}, {p.tokens_per_s_per_gpu:,.0f} "
            f"tokens/s/GPU; the batch bound by {binding}; the prefills' time left out)"
        )
        out.append(_target("fewest_gpus", total, p, f, binding, text))
    return tuple(out)


def _built(model, dtype):
    """``(module, name, notes)`` of a model by name (``hf:ID``, a folder) or a causal LM."""
    if isinstance(model, str):
        from solar.hub.models import hub_model, strip_prefix

        built = hub_model(model, need="causal", dtype=dtype)
        return built.model, strip_prefix(model), built.notes
    if not hasattr(model, "config"):
        raise ServingError(
            f"{type(model).__name__}: solar.serving takes a Hugging Face causal LM or "
            "'hf:ID' (a model by name)"
        )
    return model, type(model).__name__, []


def _check_shape(model, prompt: int, output: int, engine: Engine) -> None:
    for what, n in (("prompt", prompt), ("output", output)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ServingError(f"{what} must be a whole number of tokens >= 1, got {n!r}")
    engine.check(prompt, output)
    text = model.config.get_text_config()
    most = getattr(text, "max_position_embeddings", None)
    slots = prompt + output + engine.new_tokens
    if isinstance(most, int) and slots > most:
        raise ServingError(
            f"prompt + output = {prompt + output} tokens (+ {engine.new_tokens} in flight) is "
            f"more than the model's {most} positions; use a shorter --prompt/--output"
        )


def _decode_context(step: StepTrace, prompt: int, output: int, engine: Engine, notes: list):
    """The mean context where the step's work and bytes are affine in the context (checked
    at the ends and the mean); else the prompt's length (every step's bound is at least that
    of the first, as the context only grows)."""
    mean = engine.decode_context(prompt, output)
    last = prompt + output - 1
    if mean in (prompt, last):
        return mean
    ends = [step.bound(2, c) for c in (prompt, mean, last)]
    for q in (lambda b: b.bytes_fused, lambda b: sum(b.flops.values())):
        a, m, z = (float(q(b)) for b in ends)
        if abs(a + (z - a) * (mean - prompt) / (last - prompt) - m) > 1e-9 * max(abs(m), 1.0):
            notes.append(
                f"the decode step is not affine in the context (a sliding window, ...): traced "
                f"at the prompt's {prompt} tokens, the first step's context, not at the mean"
            )
            return prompt
    notes.append(
        f"decode steps at the mean context of a generation, {mean} tokens (prompt {prompt} + "
        f"(output {output} - 1) / 2, rounded down): the step's work and bytes are affine in "
        "the context (checked), so a batch spread over contexts costs as one at its mean"
    )
    return mean


def serving(
    model,
    hw="H100",
    gpus=(1,),
    *,
    prompt: int,
    output: int,
    engine: Engine | None = None,
    max_batch: int = 4096,
    tpot_s: float | None = None,
    ttft_s: float | None = None,
    requests_per_s: float | None = None,
    dtype=None,
) -> Serving:
    """The serving frontier of ``model`` (``"hf:ID"``, a folder, or a Hugging Face causal LM
    on the meta device) on each of ``hw`` (one or several GPU kinds) x ``gpus`` (counts), for
    requests of ``prompt`` tokens generating ``output`` (see the module docstring). ``engine``:
    the serving engine's switches (:class:`~solar.questions.serving_engine.Engine`);
    ``tpot_s``/``ttft_s``/``requests_per_s``: targets answered exactly (``Serving.targets``)."""
    engine = engine or Engine()
    specs = [
        load_spec(h) for h in ([hw] if isinstance(hw, str) or not hasattr(hw, "__iter__") else hw)
    ]
    counts = [gpus] if isinstance(gpus, int) else list(gpus)
    for n in counts:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ServingError(f"gpus must be whole numbers >= 1, got {n!r}")
    module, name, notes = _built(model, dtype)
    _check_shape(module, prompt, output, engine)

    def make(batch: int, context: int):
        if engine.chunked_prefill is not None:
            return mixed_phase(module, batch, context, engine, prompt)
        return step_phase(module, batch, context, engine)

    ref = (2, engine.decode_context(prompt, output))
    step = StepTrace(make, name=f"{name} serving step", notes=notes, spec=specs[0],
                     new=engine.new_tokens, ref=ref,
                     contexts=window_range(module, ref[1], engine.new_tokens))  # fmt: skip
    notes = [*notes, *engine.assumptions()]
    if step.why_numeric:
        notes.append(
            f"the step is traced at each batch (PyTorch cannot trace it with symbolic sizes: "
            f"{step.why_numeric})"
        )
    pinned = step.symbolic.specializations if step.symbolic is not None else {}
    if pinned:
        where = ", ".join(f"{k} at {v}" for k, v in pinned.items())
        notes.append(f"the symbolic trace pins {where}: points elsewhere are traced there")
    ctx = {
        "prompt": prompt,
        "decode": _decode_context(step, prompt, output, engine, notes),
        "held": engine.held_context(prompt, output),
    }
    prefill_graphs: dict[int, object] = {}

    def prefill(batch: int, spec, n: int) -> float:
        if batch not in prefill_graphs:
            ph = prefill_phase(module, batch, prompt, engine)
            prefill_graphs[batch] = trace_and_lift(ph.program, ph.inputs, name=f"{name} prefill")[1]
        g = prefill_graphs[batch]
        return float(bound_graph(g, spec).fused if n == 1 else bound_parallel(g, spec, n).fused)

    configs = [_Config(step, prefill, s, n, ctx, engine) for s in specs for n in counts]
    frontiers = tuple(_frontier(c, max_batch) for c in configs)
    targets = _targets(configs, frontiers, output, tpot_s, ttft_s, requests_per_s)
    notes.append(
        "per configuration the best TP x PP x DP plan of its GPUs (solar.plan's search) at "
        "each batch; TPOT and TTFT are lower bounds, tokens/s/GPU an upper bound (fused level)"
    )
    notes.append(f"the step traced {step.traces} time(s) in all")
    return Serving(
        name, prompt, output, ctx["decode"], ctx["held"], engine, frontiers, targets,
        step.terms(), tuple(notes),
    )  # fmt: skip
