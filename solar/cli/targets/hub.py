"""``solar bound hf:ID``: the options of a model by name and the bound they ask for
(:mod:`solar.hub.programs` holds the library calls)."""

from __future__ import annotations

from solar.hub.models import HubError
from solar.hub.programs import bound_hub, plan_hub


def add_hub_args(sp) -> None:
    """The options of ``solar bound hf:ID`` (``--batch`` is the batch size there)."""
    g = sp.add_argument_group("models by name (hf:ID or hf:FOLDER; --batch B is the batch size)")
    g.add_argument("--seq", type=int, default=None, metavar="S", help="tokens per sequence")
    g.add_argument("--prefill", action="store_true", help="the prefill of a prompt of S tokens")
    g.add_argument("--decode", action="store_true", help="one decode step after --context C")
    g.add_argument("--context", type=int, default=None, metavar="C", help="cached tokens")
    g.add_argument("--train", action="store_true", help="one training step (AdamW)")
    g.add_argument("--dtype", default=None, help="override the config's torch_dtype")


def bound_hub_from_args(args, plan: dict):
    """``solar bound hf:ID ...``: the bound of the asked phase (one model; ``plan`` the pinned
    parallel plan keywords, ``batch`` excluded)."""
    if len(args.paths) != 1:
        raise HubError("hf: bounds one model at a time")
    chosen = [p for p in ("prefill", "decode", "train") if getattr(args, p)]
    if len(chosen) > 1:
        raise HubError(f"--{' and --'.join(chosen)}: choose one phase")
    try:
        batch = 1 if args.batch is None else int(args.batch)
    except ValueError:
        raise HubError(f"--batch {args.batch}: for hf: models, the batch size") from None
    what = dict(
        batch=batch,
        seq=args.seq,
        hw=args.hw,
        phase=chosen[0] if chosen else "forward",
        context=args.context,
        dtype=args.dtype,
        precision=args.precision,
    )
    if args.gpus != 1 or plan:
        return plan_hub(args.paths[0], gpus=args.gpus, **what, **plan)
    return bound_hub(args.paths[0], **what)
