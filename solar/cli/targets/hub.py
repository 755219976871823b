"""``hf:ID`` on the command line: the options of a model by name (one argument group, shared by
``solar bound``, ``compare`` and ``provision``) and the program they ask for
(:mod:`solar.hub.programs` holds the library calls)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from solar.cli.options import lifted
from solar.hub.models import HubError, find_config
from solar.hub.programs import bound_hub, is_hub_name, lift_hub, plan_hub

#: words of an error that asks for another dtype than the model's (a library kernel's own check,
#: as ``torch._grouped_mm``'s "Expected inputs of BF16" under transformers' MoE experts)
_DTYPE_WORDS = ("BF16", "bfloat16", "BFloat16", "FP16", "float16", "Half")

#: ``--dtype`` short names, as people write them, and the torch dtype each stands for
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}


def add_hub_args(sp, *, batch: bool = True) -> None:
    """The options of a model by name. ``batch``: add ``--batch B`` (a command whose parser
    has a ``--batch`` of its own, ``solar bound``'s data-parallel axis, reads it as the batch
    size for ``hf:`` models)."""
    g = sp.add_argument_group("models by name (hf:ID or hf:FOLDER; --batch B is the batch size)")
    if batch:
        g.add_argument("--batch", default=None, metavar="B", help="sequences per batch")
    g.add_argument("--seq", type=int, default=None, metavar="S", help="tokens per sequence")
    g.add_argument("--prefill", action="store_true", help="the prefill of a prompt of S tokens")
    g.add_argument("--decode", action="store_true", help="one decode step after --context C")
    g.add_argument("--context", type=int, default=None, metavar="C", help="cached tokens")
    g.add_argument("--train", action="store_true", help="one training step (AdamW)")
    g.add_argument(
        "--dtype",
        default=None,
        help="override the config's torch_dtype: bf16, fp16, fp32 (or bfloat16, float16, ...)",
    )


def hub_keywords(args) -> dict:
    """The keywords of :func:`~solar.hub.programs.lift_hub` the options ask for."""
    chosen = [p for p in ("prefill", "decode", "train") if getattr(args, p)]
    if len(chosen) > 1:
        raise HubError(f"--{' and --'.join(chosen)}: choose one phase")
    try:
        batch = 1 if args.batch is None else int(args.batch)
    except ValueError:
        raise HubError(f"--batch {args.batch}: for hf: models, the batch size") from None
    dtype = DTYPE_ALIASES.get(args.dtype, args.dtype)
    return dict(
        batch=batch,
        seq=args.seq,
        phase=chosen[0] if chosen else "forward",
        context=args.context,
        dtype=dtype,
        precision=args.precision,
    )


def offline_where_local(model_id: str) -> None:
    """Set ``HF_HUB_OFFLINE=1`` for the rest of this command when the model's config is in a
    folder or the local cache: nothing the model's build asks of the Hub then reaches for the
    network (the command's process is its own; the library never changes the environment)."""
    if "Hugging Face Hub" not in find_config(model_id).where:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")


@contextmanager
def dtype_hint(args) -> Iterator[None]:
    """A model built in its config's dtype whose library kernels ask for another (MoE experts
    through ``torch._grouped_mm``, bf16 only) fails in one line that says to pass
    ``--dtype``."""
    try:
        yield
    except Exception as e:
        if args.dtype is not None or not any(w in str(e) for w in _DTYPE_WORDS):
            raise
        text = str(e).strip()
        first = getattr(e, "summary", None) or (text.splitlines()[0] if text else type(e).__name__)
        first = first.rstrip(".")
        raise HubError(
            f"{first}; the model was built in its config's dtype, and its library's kernels "
            "ask for another: pass --dtype bf16 (or fp16)"
        ) from e


def lifted_target(path: str, args):
    """``(IR program, einsum graph)`` of a problem file or of a model by name (``hf:ID``)."""
    if not is_hub_name(path):
        return lifted(path, args.precision)
    offline_where_local(path)
    with dtype_hint(args):
        return lift_hub(path, **hub_keywords(args))


def bound_hub_from_args(args, plan: dict):
    """``solar bound hf:ID ...``: the bound of the asked phase (one model; ``plan`` the pinned
    parallel plan keywords, ``batch`` excluded)."""
    if len(args.paths) != 1:
        raise HubError("hf: bounds one model at a time")
    what = hub_keywords(args)
    offline_where_local(args.paths[0])
    with dtype_hint(args):
        if args.gpus != 1 or plan:
            return plan_hub(args.paths[0], gpus=args.gpus, hw=args.hw, **what, **plan)
        return bound_hub(args.paths[0], hw=args.hw, **what)
