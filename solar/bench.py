"""How long solar takes, and how much memory, on a whole model: ``python -m solar.bench llama7b``.

Each workload is built on the ``meta`` device (no weights are allocated) and run through three
stages, each in a fresh Python process so that its peak resident memory is its own:

- ``make_fx``: the bare trace: ``make_fx`` on fake tensors, as solar's frontend calls it, and
  nothing else (the floor any PyTorch frontend pays);
- ``trace``: ``solar.trace``: the trace plus the lowering to the Affine Loop IR;
- ``bound``: ``solar.bound``: trace, lowering, lifting to the einsum graph and the three bounds.

Wall and CPU time (``time.process_time``, robust to a busy machine) cover the stage only;
imports and building the model are reported apart ("build"). Peak RSS is
``resource.getrusage(RUSAGE_SELF).ru_maxrss`` of the stage's process, and "RSS before" the same
figure after imports and building the model, so the difference is what the stage added.
With ``--tracemalloc`` each stage is run again under :mod:`tracemalloc` for the peak of Python
allocations (slower, so it is timed apart from the wall-time run).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

STAGES = ("make_fx", "trace", "bound")


# ----------------------------------------------------------------------------------------------
# workloads: name -> builder(impl) returning (model, inputs) on the meta device


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, width: int, heads: int, hidden: int):
        super().__init__()
        self.heads, self.head_dim = heads, width // heads
        self.attn_norm = RMSNorm(width)
        self.wq = nn.Linear(width, width, bias=False)
        self.wk = nn.Linear(width, width, bias=False)
        self.wv = nn.Linear(width, width, bias=False)
        self.wo = nn.Linear(width, width, bias=False)
        self.ffn_norm = RMSNorm(width)
        self.w1 = nn.Linear(width, hidden, bias=False)
        self.w3 = nn.Linear(width, hidden, bias=False)
        self.w2 = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        h = self.attn_norm(x)
        q, k, v = (
            w(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
            for w in (self.wq, self.wk, self.wv)
        )
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(y.transpose(1, 2).reshape(b, t, c))
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    """A LLaMA decoder-only LM in plain torch (multi-head attention, RoPE, SwiGLU)."""

    def __init__(self, layers: int, width: int, heads: int, hidden: int, vocab: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList([LlamaBlock(width, heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        head_dim = width // heads
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids):
        x = self.embed(ids)
        pos = torch.arange(ids.shape[1], device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq.float())
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


class HFLogits(nn.Module):
    """A ``transformers`` causal LM returning only its logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False, return_dict=False)[0]


LLAMA7B = dict(layers=32, width=4096, heads=32, hidden=11008, vocab=32000, batch=1, tokens=2048)


def llama7b(impl: str = "torch"):
    """LLaMA-7B: 32 layers, width 4096, 32 heads, SwiGLU 11008, vocabulary 32000, bf16, one
    sequence of 2048 tokens; plain torch (default) or ``transformers`` (``--impl``)."""
    c = LLAMA7B
    with torch.device("meta"):
        if impl == "transformers":
            import transformers

            config = transformers.LlamaConfig(
                hidden_size=c["width"],
                intermediate_size=c["hidden"],
                num_hidden_layers=c["layers"],
                num_attention_heads=c["heads"],
                num_key_value_heads=c["heads"],
                vocab_size=c["vocab"],
                max_position_embeddings=c["tokens"],
                use_cache=False,
                attn_implementation="sdpa",
            )
            model = HFLogits(transformers.LlamaForCausalLM(config))
        else:
            model = Llama(c["layers"], c["width"], c["heads"], c["hidden"], c["vocab"])
        model = model.to(torch.bfloat16).eval()
        ids = torch.randint(0, c["vocab"], (c["batch"], c["tokens"]))
    return model, (ids,)


WORKLOADS: dict[str, Callable] = {"llama7b": llama7b}


# ----------------------------------------------------------------------------------------------
# stages


def bare_make_fx(model, inputs):
    """``make_fx`` on fake tensors with parameters and buffers as graph inputs: what solar's
    frontend does before lowering, and nothing more."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    tensors = [*params.values(), *buffers.values(), *inputs]
    with FakeTensorMode(allow_non_fake_inputs=True):
        fakes = [torch.empty(tuple(t.shape), dtype=t.dtype, device="meta") for t in tensors]
    n_p, n_b = len(params), len(buffers)

    def run(*flat):
        p = dict(zip(params, flat[:n_p]))
        b = dict(zip(buffers, flat[n_p : n_p + n_b]))
        return torch.func.functional_call(model, (p, b), tuple(flat[n_p + n_b :]))

    with torch.no_grad():
        return make_fx(run, tracing_mode="fake")(*fakes)


def _peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def run_stage(workload: str, stage: str, impl: str = "torch", trace_memory: bool = False) -> dict:
    """Run one stage in this process and return its measurements."""
    import solar

    t0 = time.perf_counter()
    model, inputs = WORKLOADS[workload](impl)
    build_s = time.perf_counter() - t0
    rss_before = _peak_rss_mb()
    if trace_memory:
        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    facts: dict[str, object] = {}
    if stage == "make_fx":
        gm = bare_make_fx(model, inputs)
        facts["fx_nodes"] = len(gm.graph.nodes)
    elif stage == "trace":
        traced = solar.trace(model, inputs, name=workload)
        facts["fx_nodes"] = len(traced.graph.graph.nodes)
        facts["kernels"] = len(traced.program.kernels)
    elif stage == "bound":
        b = solar.bound(model, inputs, hw="H100", name=workload)
        facts["kernels"] = len(b.kernels)
        facts.update(fused_s=b.fused, cache_aware_s=b.cache_aware, unfused_s=b.unfused)
    else:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    out = {"workload": workload, "impl": impl, "stage": stage, "build_s": build_s}
    out.update(
        wall_s=wall_s, cpu_s=cpu_s, rss_before_mb=rss_before, peak_rss_mb=_peak_rss_mb(), **facts
    )
    if trace_memory:
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


def _child(workload: str, stage: str, impl: str, trace_memory: bool) -> dict:
    cmd = [sys.executable, "-m", "solar.bench", workload, "--impl", impl, "--stage", stage]
    if trace_memory:
        cmd.append("--tracemalloc")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"workload": workload, "impl": impl, "stage": stage, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    head = ["stage", "wall s", "CPU s", "build s", "RSS before MB", "peak RSS MB", "tracemalloc MB"]
    head += ["fx nodes", "kernels"]
    lines = [" | ".join(head), " | ".join("-" * len(h) for h in head)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['stage']} | error: {r['error']}")
            continue
        tm = r.get("tracemalloc_peak_mb")
        cells = [
            r["stage"],
            f"{r['wall_s']:.2f}",
            f"{r['cpu_s']:.2f}",
            f"{r['build_s']:.2f}",
            f"{r['rss_before_mb']:.0f}",
            f"{r['peak_rss_mb']:.0f}",
            "-" if tm is None else f"{tm:.0f}",
            str(r.get("fx_nodes", "-")),
            str(r.get("kernels", "-")),
        ]
        lines.append(" | ".join(cells))
    bound = next((r for r in rows if r.get("stage") == "bound" and "error" not in r), None)
    if bound:
        lines.append(
            f"bounds on H100: fused {bound['fused_s'] * 1e3:.3f} ms, cache-aware "
            f"{bound['cache_aware_s'] * 1e3:.3f} ms, unfused {bound['unfused_s'] * 1e3:.3f} ms"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m solar.bench", description=__doc__.split("\n")[0])
    p.add_argument("workload", choices=sorted(WORKLOADS))
    p.add_argument("--impl", choices=["torch", "transformers"], default="torch")
    p.add_argument("--stage", choices=STAGES, help="run one stage here and print its JSON")
    p.add_argument("--tracemalloc", action="store_true", help="also measure Python-heap peaks")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    if args.stage:
        print(json.dumps(run_stage(args.workload, args.stage, args.impl, args.tracemalloc)))
        return 0
    rows = [_child(args.workload, s, args.impl, False) for s in STAGES]
    if args.tracemalloc:
        for row in rows:
            if "error" not in row:
                extra = _child(args.workload, row["stage"], args.impl, True)
                row["tracemalloc_peak_mb"] = extra.get("tracemalloc_peak_mb")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{args.workload} ({args.impl}): {WORKLOADS[args.workload].__doc__.split(':')[0]}")
        print(table(rows))
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
