#!/usr/bin/env python3
"""XLA's kernels of a JAX transformer block under ``jax.jit``, mapped to solar's IR kernels
and timed one by one with the JAX profiler (issue 33, the JAX half).

    PYTHONPATH=. python bench/gpu_compiled_jax.py OUTDIR [--only gpt2_block] [--reps 5]
    PYTHONPATH=. python bench/gpu_compiled_jax.py OUTDIR --dry-run     # tiny sizes, any device

Programs (bf16, plain JAX, weights random normal x 0.02, seed 0):

- ``gpt2_block``: one GPT-2 block (pre-LayerNorm attention with ``jax.nn.dot_product_attention``
  causal, its XLA implementation; GELU MLP) on x of 8 x 1024 x 768, 12 heads;
- ``gpt2_1layer``: ``solar.bench.models.gpt_jax`` with one layer (token and position
  embeddings, the block, the final LayerNorm and the tied LM head over 50304 tokens).

For each: :func:`solar.frontend.jax.compiled.compile_jax` (XLA on the default backend, each
generated kernel with the IR kernels it computes, its source lines, or why it maps to none),
then :func:`solar.gpu.compiled_headroom.measure_compiled`: a bound per group of kernels, the
program timed, ``--reps`` runs profiled with the JAX profiler and each launch matched to its
kernel (by its ``hlo_op``), the three-term decomposition. XLA's command buffers
(CUDA graphs) are switched off unless ``--command-buffers`` (``XLA_FLAGS``), so each kernel
is profiled as the instruction that launched it. Writes OUTDIR/<program>.txt (the report as
``solar`` prints it), OUTDIR/<program>.json (it and the mapping) and OUTDIR/summary.json;
one program's failure is recorded and the next runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROGRAMS = ("gpt2_block", "gpt2_1layer")


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="folder for the JSON results")
    p.add_argument("--only", default="", help="comma-separated programs: " + ", ".join(PROGRAMS))
    p.add_argument("--reps", type=int, default=5, help="profiled runs per program")
    p.add_argument("--dry-run", action="store_true", help="tiny sizes, any device (a smoke test)")
    p.add_argument(
        "--command-buffers", action="store_true", help="keep XLA's CUDA-graph command buffers"
    )
    return p.parse_args(argv)


def gpt2_block(dry: bool):
    """One GPT-2 block in plain JAX and its (params, x)."""
    import jax
    import jax.numpy as jnp

    b, t, c, heads = (2, 8, 32, 2) if dry else (8, 1024, 768, 12)

    def layer_norm(x, w, bias):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(var + 1e-5) * w + bias

    def block(p, x):
        qkv = layer_norm(x, *p["ln_1"]) @ p["attn"][0] + p["attn"][1]
        q, k, v = (z.reshape(b, t, heads, c // heads) for z in jnp.split(qkv, 3, axis=-1))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True, implementation="xla")
        y = y.reshape(b, t, c)
        x = x + y @ p["attn_proj"][0] + p["attn_proj"][1]
        h = jax.nn.gelu(layer_norm(x, *p["ln_2"]) @ p["fc"][0] + p["fc"][1], approximate=True)
        return x + h @ p["fc_proj"][0] + p["fc_proj"][1]

    shapes = {
        "ln_1": ((c,), (c,)),
        "attn": ((c, 3 * c), (3 * c,)),
        "attn_proj": ((c, c), (c,)),
        "ln_2": ((c,), (c,)),
        "fc": ((c, 4 * c), (4 * c,)),
        "fc_proj": ((4 * c, c), (c,)),
    }
    structs = {
        k: tuple(jax.ShapeDtypeStruct(s, jnp.bfloat16) for s in v) for k, v in shapes.items()
    }
    x = jax.ShapeDtypeStruct((b, t, c), jnp.bfloat16)
    return block, materialize((structs, x))


def gpt2_1layer(dry: bool):
    from solar.bench.models import gpt_jax

    if dry:
        fn, args = gpt_jax(1, 32, 2, vocab=64, context=16, batch=2, tokens=8)
    else:
        fn, args = gpt_jax(1, 768, 12, batch=8, tokens=1024)
    params, idx = args
    import jax.numpy as jnp

    vocab = params["wte"].shape[0]
    ids = (jnp.arange(idx.size, dtype=jnp.int32) * 7919 % vocab).reshape(idx.shape)
    return fn, (materialize(params), ids)


def materialize(tree):
    """Random normal arrays (x 0.02, seed 0) for the ShapeDtypeStructs of ``tree``."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    key = jax.random.key(0)
    arrays = [
        (jax.random.normal(jax.random.fold_in(key, i), s.shape) * 0.02).astype(s.dtype)
        for i, s in enumerate(leaves)
    ]
    return jax.tree_util.tree_unflatten(treedef, arrays)


def run_one(name: str, args) -> dict:
    """Compile, bound each group of XLA kernels, time and profile: the report's dict."""
    import jax

    from solar.frontend.jax.compiled import compile_jax, equations_of
    from solar.gpu.compiled_headroom import measure_compiled

    fn, inputs = globals()[name](args.dry_run)
    t0 = time.perf_counter()
    ct = compile_jax(fn, inputs, name=name)
    compile_s = time.perf_counter() - t0
    gpu = jax.default_backend() == "gpu"
    r = measure_compiled(
        [ct],
        "auto" if gpu else "H100",
        device="cuda" if gpu else "cpu",
        profile_reps=args.reps,
        budget_s=0.5,
        name=name,
    )
    (args.out / f"{name}.txt").write_text(str(r) + "\n")
    return {
        "program": name,
        "device": str(jax.devices()[0]),
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "compile_and_trace_s": compile_s,
        "generated": len(ct.kernels),
        "mapped": sum(1 for g in ct.kernels if g.ir_kernels),
        "ir_kernels": [k.name for k in ct.trace.program.kernels],
        "equations": {g.name: list(equations_of(g)) for g in ct.kernels},
        "report": r.to_dict(),
    }


def main(argv=None) -> int:
    args = parse(argv if argv is not None else sys.argv[1:])
    if not args.command_buffers:  # before JAX starts its backend
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_gpu_enable_command_buffer" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_gpu_enable_command_buffer=").strip()
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [p for p in args.only.split(",") if p] or list(PROGRAMS)
    summary = {}
    for name in chosen:
        if name not in PROGRAMS:
            print(f"{name}: not a program of this script (one of {', '.join(PROGRAMS)})")
            summary[name] = {"error": "unknown program"}
            continue
        try:
            result = run_one(name, args)
        except Exception as e:  # fail soft: record and go on
            traceback.print_exc()
            summary[name] = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
            continue
        (args.out / f"{name}.json").write_text(json.dumps(result, indent=1))
        rep = result["report"]
        summary[name] = {
            **{k: result[k] for k in ("device", "generated", "mapped")},
            "groups": len(rep["groups"]),
            "unmatched_launches": len(rep["unmatched"]),
            "violations": rep["violations"],
            "terms": rep["terms"],
        }
        print(
            f"{name}: {result['generated']} XLA kernels, {result['mapped']} mapped to IR "
            f"kernels, {len(result['ir_kernels'])} IR kernels, {len(rep['groups'])} groups; "
            f"violations {len(rep['violations'])}"
        )
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0 if all("error" not in v for v in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
