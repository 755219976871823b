"""The programs of a model by name and their bounds: ``solar.bound_hub`` and
``solar bound hf:ID``.

- ``forward`` (default): ``model(input_ids)`` with every other argument at its default (an
  encoder-decoder also gets ``decoder_input_ids`` of the same length), the model class the
  config's ``architectures`` names;
- ``prefill`` / ``decode``: :func:`solar.llm.prefill` (a prompt of ``seq`` tokens) and
  :func:`solar.llm.decode_step` (one token per sequence after ``context`` cached ones) of the
  config's causal LM;
- ``train``: one training step (:func:`solar.frontend.torch.training.make_train_step`, AdamW) of
  the LM head that computes its own loss from ``labels`` (the config's own class when it does,
  else the seq2seq, masked or causal LM of that config type), with dropout off (no dropout
  backward is lowered yet; dropout only adds work, so the bound stays a lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solar.api import bound_graph, bound_parallel, trace_and_lift
from solar.backend.parallel.parallel_bound import ParallelBound
from solar.backend.result import Bound
from solar.hub.models import PREFIX, HubError, hub_model, strip_prefix
from solar.hw import load_spec

PHASES = ("forward", "prefill", "decode", "train")
_NEED = {"forward": "forward", "prefill": "causal", "decode": "causal", "train": "train"}


@dataclass
class HubProgram:
    """A program of a model by name: ``solar.bound(program, inputs, kwargs=kwargs)``."""

    program: object
    inputs: tuple
    kwargs: dict | None
    name: str
    notes: list[str] = field(default_factory=list)


def hub_program(
    model_id: str,
    *,
    batch: int = 1,
    seq: int | None = None,
    phase: str = "forward",
    context: int | None = None,
    dtype=None,
    cache: str = "static",
) -> HubProgram:
    """The ``phase`` program (see the module docstring) of ``model_id`` built from its config."""
    import torch

    if phase not in PHASES:
        raise HubError(f"phase {phase!r}: one of {', '.join(PHASES)}")
    _whole("batch", batch)
    if phase == "decode":
        if context is None:
            raise HubError("a decode step needs the cached tokens: --context C (context=C)")
        _whole("context", context)
    elif seq is None:
        raise HubError(f"the {phase} of {strip_prefix(model_id)} needs a length: --seq S (seq=S)")
    else:
        _whole("seq", seq)
    built = hub_model(model_id, need=_NEED[phase], dtype=dtype)
    model, config = built.model, built.config
    if getattr(model, "main_input_name", "input_ids") != "input_ids":
        raise HubError(
            f"{built.source.model_id}: {type(model).__name__} takes {model.main_input_name}, "
            "not token ids; bound it from Python with solar.bound(model, inputs)"
        )
    _check_length(config, (context or 0) + 1 if phase == "decode" else seq, built.source.model_id)
    name = f"{built.source.model_id} {phase}"
    if phase in ("prefill", "decode"):
        from solar.frontend.torch.llm import decode_step, prefill

        if phase == "prefill":
            program, inputs = prefill(model, batch=batch, context=seq)
        else:
            program, inputs = decode_step(model, batch=batch, context=context, cache=cache)
        return HubProgram(program, tuple(inputs), None, name, built.notes)
    vocab = int(config.get_text_config().vocab_size)
    ids = torch.randint(0, vocab, (batch, seq), device="meta")
    if phase == "train":
        from solar.frontend.torch.training import make_train_step

        # eval mode: dropout off. solar lowers no dropout backward yet (native_dropout_backward);
        # a step without dropout does less work than one with it, so its bound stays below
        step, args = make_train_step(loss_of_labels(model.eval()), (ids, ids.clone()))
        what = f"one training step of {type(model).__name__}: its own loss of labels = the "
        what += "input ids, backward, AdamW; dropout off (eval mode: dropout's backward is not "
        what += "lowered yet), a lower bound of the step with dropout too"
        notes = [*built.notes, what]
        return HubProgram(step, args, None, name, notes)
    kwargs = None
    if getattr(config, "is_encoder_decoder", False):
        kwargs = {"decoder_input_ids": torch.randint(0, vocab, (batch, seq), device="meta")}
    return HubProgram(model, (ids,), kwargs, name, built.notes)


def _whole(what: str, n) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise HubError(f"{what} must be a whole number >= 1, got {n!r}")


def _check_length(config, length: int, model_id: str) -> None:
    text = config.get_text_config()
    most = getattr(text, "max_position_embeddings", None) or getattr(text, "n_positions", None)
    if isinstance(most, int) and length > most:
        raise HubError(
            f"{model_id}: {length} tokens is more than its {most} positions "
            "(max_position_embeddings); use a shorter --seq/--context"
        )


def loss_of_labels(model):
    """A module whose call ``(input_ids, labels)`` returns ``model``'s own loss of ``labels``
    (``model(input_ids=..., labels=...).loss``), for a training step."""
    import torch

    class LossOfLabels(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, labels):
            out = self.model(input_ids=input_ids, labels=labels)
            if getattr(out, "loss", None) is None:
                raise HubError(f"{type(self.model).__name__} computes no loss from labels")
            return out.loss

    return LossOfLabels(model)


def lift_hub(
    model_id: str,
    batch: int = 1,
    seq: int | None = None,
    *,
    phase: str = "forward",
    context: int | None = None,
    dtype=None,
    cache: str = "static",
    precision: str | None = None,
):
    """``(IR program, einsum graph)`` of a Hugging Face model's ``phase`` (see
    :func:`bound_hub`)."""
    p = hub_program(
        model_id, batch=batch, seq=seq, phase=phase, context=context, dtype=dtype, cache=cache
    )
    return trace_and_lift(
        p.program, p.inputs, kwargs=p.kwargs, precision=precision, name=p.name, notes=p.notes
    )


def bound_hub(
    model_id: str,
    batch: int = 1,
    seq: int | None = None,
    hw="H100",
    *,
    phase: str = "forward",
    context: int | None = None,
    dtype=None,
    cache: str = "static",
    precision: str | None = None,
) -> Bound:
    """Bounds on one GPU of a Hugging Face model named by its id (or a folder holding its
    ``config.json``), built from the config alone on the meta device: no weights are
    downloaded. ``phase``: ``"forward"`` (``model(input_ids)`` of ``batch`` x ``seq`` tokens),
    ``"prefill"``, ``"decode"`` (``context`` cached tokens) or ``"train"``; ``dtype``
    overrides the config's ``torch_dtype``. Several GPUs: :func:`plan_hub`."""
    spec = load_spec(hw)
    _, g = lift_hub(
        model_id, batch, seq, phase=phase, context=context, dtype=dtype, cache=cache,
        precision=precision,
    )  # fmt: skip
    return bound_graph(g, spec)


def plan_hub(
    model_id: str,
    batch: int = 1,
    seq: int | None = None,
    hw="H100",
    *,
    gpus: int,
    phase: str = "forward",
    context: int | None = None,
    dtype=None,
    cache: str = "static",
    precision: str | None = None,
    **plan,
) -> ParallelBound:
    """The best plan of ``gpus`` GPUs of ``hw`` for a Hugging Face model (the model as in
    :func:`bound_hub`; ``plan``: the keywords of :func:`solar.api.bound_parallel`)."""
    spec = load_spec(hw)
    _, g = lift_hub(
        model_id, batch, seq, phase=phase, context=context, dtype=dtype, cache=cache,
        precision=precision,
    )  # fmt: skip
    return bound_parallel(g, spec, gpus, **plan)


def is_hub_name(path: str) -> bool:
    """Whether ``path`` names a model by name (``hf:ID`` or ``hf:FOLDER``)."""
    return str(path).startswith(PREFIX)
