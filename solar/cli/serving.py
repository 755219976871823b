"""``solar serving hf:ID --hw H100,H200 --gpus 1,2,4,8 --prompt 1024 --output 256``: the
serving frontier of a model by name (:func:`solar.questions.serving.serving`; docs/serving.md):
per GPU kind and count, TPOT against tokens/s/GPU over the batches that fit, TTFT, where
decode turns compute-bound; ``--tpot-ms``/``--ttft-ms``/``--requests-per-s`` answer targets;
``--plot PNG`` writes the frontier."""

from __future__ import annotations

from solar.cli.options import add_hw_option, add_output_args, emit, hw_from_args


def _counts(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or any(n < 1 for n in out):
        raise ValueError(f"--gpus {text!r}: whole numbers >= 1, comma-separated (1,2,4,8)")
    return out


def _speculative(text: str | None):
    if text is None:
        return None
    k, _, a = text.partition(",")
    try:
        return int(k), float(a)
    except ValueError:
        raise ValueError(
            f"--speculative {text!r}: K,A (draft tokens, acceptance rate), e.g. 4,0.7"
        ) from None


def _kinds(hw) -> list:
    """``--hw`` (with ``--override`` applied) as a list of GPU names or what-if specs."""
    if isinstance(hw, str):
        return [h.strip() for h in hw.split(",") if h.strip()]
    return list(hw) if isinstance(hw, list) else [hw]


def add_parser(sub):
    sp = sub.add_parser(
        "serving", help="the serving frontier of a model by name: TPOT against tokens/s/GPU"
    )
    sp.add_argument("model", help="hf:ID or hf:FOLDER (a model by name, built from config.json)")
    add_hw_option(sp, help="GPU kinds, comma-separated (default H100)")
    sp.add_argument("--gpus", default="1", help="GPU counts, comma-separated (default 1)")
    sp.add_argument("--prompt", type=int, required=True, metavar="P", help="prompt tokens")
    sp.add_argument("--output", type=int, required=True, metavar="O", help="generated tokens")
    sp.add_argument("--dtype", default=None, help="the model's dtype (default: the config's)")
    sp.add_argument("--max-batch", type=int, default=4096, metavar="B",
                    help="the largest batch searched (default 4096)")  # fmt: skip
    sp.add_argument("--tpot-ms", type=float, default=None, help="target time per output token")
    sp.add_argument("--ttft-ms", type=float, default=None, help="target time to first token")
    sp.add_argument("--requests-per-s", type=float, default=None,
                    help="the fewest GPUs that serve this many requests per second")  # fmt: skip
    eng = sp.add_argument_group("serving engine (each a stated assumption)")
    eng.add_argument("--static-batching", action="store_true",
                     help="no continuous batching: prompts prefilled together")  # fmt: skip
    eng.add_argument("--page-size", type=int, default=16, metavar="T",
                     help="KV cache page in tokens (default 16; 0: no paging)")  # fmt: skip
    eng.add_argument("--prefix-tokens", type=int, default=0, metavar="S",
                     help="prompt tokens shared by every request, cached once")  # fmt: skip
    eng.add_argument("--speculative", default=None, metavar="K,A",
                     help="speculative decoding: K draft tokens, acceptance rate A")  # fmt: skip
    eng.add_argument("--kv-cache", default="model", choices=["model", "fp8"],
                     help="the KV cache's dtype (default: the model's)")  # fmt: skip
    eng.add_argument("--chunked-prefill", type=int, default=None, metavar="C",
                     help="prompt tokens each decode step also carries")  # fmt: skip
    sp.add_argument("--plot", metavar="PNG", default=None, help="write the frontier plot")
    add_output_args(sp)
    return sp


def run(args) -> int:
    from solar.questions.serving import serving
    from solar.questions.serving_engine import Engine

    engine = Engine(
        continuous_batching=not args.static_batching,
        page_size=args.page_size or None,
        prefix_tokens=args.prefix_tokens,
        speculative=_speculative(args.speculative),
        kv_cache=args.kv_cache,
        chunked_prefill=args.chunked_prefill,
    )
    ms = lambda v: None if v is None else v * 1e-3  # noqa: E731
    s = serving(
        args.model,
        hw=_kinds(hw_from_args(args)),
        gpus=_counts(args.gpus),
        prompt=args.prompt,
        output=args.output,
        engine=engine,
        max_batch=args.max_batch,
        tpot_s=ms(args.tpot_ms),
        ttft_s=ms(args.ttft_ms),
        requests_per_s=args.requests_per_s,
        dtype=args.dtype,
    )
    if args.plot:
        s.plot().savefig(args.plot, dpi=120)
    emit(s.to_json() if args.json else str(s), args.out)
    return 0
