#!/usr/bin/env python3
"""Sparse tensors and train-mode spectral norm validated and timed on the visible GPU against
their bounds (issue 37: sparse layouts traced as their stored elements); writes a table.

    PYTHONPATH=. python bench/gpu_sparse.py OUT_DIR [--small] [--only a,b] [--budget-s 1]

Each program is traced with ``observe=True`` on its CUDA inputs (the stored elements its data
makes), bounded on the GPU's spec, its IR executed against the program (validation), and the
program itself timed as eager PyTorch runs it (cuSPARSE, CUDA events, L2 flushed, median) and
profiled. No measurement may be below a bound. Sizes are Cora's (2,708 nodes, 10,556 edges),
features 64 wide, fp32 (cuSPARSE's CSR x CSR has no bf16):

- ``spmm_coo``, ``spmm_csr``: ``A @ X`` (``solar.sparse_mm`` / ``solar.sparse_csr_mm``);
- ``spgemm_csr``: ``(A @ A) @ X`` of a CSR adjacency (GraphUNet's pooling step squares it);
- ``coalesce``: a COO tensor with duplicates, coalesced;
- ``gcn_csr``, ``sage_coo``: PyG's ``GCNConv``/``SAGEConv`` on a ``torch.sparse`` adjacency;
- ``graph_unet``: PyG's ``GraphUNet(1433, 64, 7, depth=2)`` on Cora's sizes;
- ``spectral_norm``: ``spectral_norm(nn.Linear(1024, 1024))`` in train mode (one power
  iteration through ``F.normalize(..., out=)``), a batch of 64.

Each item fails soft (its error is its row). ``--small`` runs everything on the CPU at 64
nodes (a smoke test of this script). Writes OUT_DIR/<item>.json and OUT_DIR/sparse.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpu_batch import device_name, finish, fmt_t, report_row, run_cases  # noqa: E402

NODES, EDGES, FEATURES, WIDTH, CLASSES = 2708, 10556, 1433, 64, 7


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("outdir")
    p.add_argument("--small", action="store_true", help="64 nodes on the CPU")
    p.add_argument("--only", default="", help="comma-separated items")
    p.add_argument("--hw", default="auto")
    p.add_argument("--budget-s", type=float, default=1.0, help="timing budget per item")
    return p.parse_args(argv)


def _graph(nodes: int, edges: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Sorted, distinct edges (a coalesced adjacency) and their weights."""
    gen = torch.Generator().manual_seed(0)
    e = torch.randint(0, nodes, (2, edges), generator=gen)
    keys = torch.unique(e[0] * nodes + e[1])
    e = torch.stack([keys // nodes, keys % nodes])
    return e.to(device), torch.rand(e.shape[1], generator=gen).to(device)


def _crow(rows: torch.Tensor, nodes: int) -> torch.Tensor:
    return torch._convert_indices_from_coo_to_csr(rows, nodes)


def _items(nodes: int, edges: int, features: int, device: str) -> dict[str, Callable]:
    """Each item: a function returning (program, inputs)."""
    e, w = _graph(nodes, edges, device)
    x = torch.rand(nodes, WIDTH, device=device)

    def spmm_coo():
        return (lambda i, v, x: torch.sparse_coo_tensor(i, v, (nodes, nodes)) @ x), (e, w, x)

    def spmm_csr():
        def fn(crow, col, v, x):
            return torch.sparse_csr_tensor(crow, col, v, (nodes, nodes)) @ x

        return fn, (_crow(e[0], nodes), e[1], w, x)

    def spgemm_csr():
        def fn(crow, col, v, x):  # two hops: the product's element order within a row is
            a = torch.sparse_csr_tensor(crow, col, v, (nodes, nodes))  # the kernel's own
            return (a @ a) @ x

        return fn, (_crow(e[0], nodes), e[1], w, x)

    def coalesce():
        doubled = torch.cat([e, e.flip(1)], 1)  # every entry twice
        values = torch.cat([w, w])
        return (lambda i, v: torch.sparse_coo_tensor(i, v, (nodes, nodes)).coalesce().values()), (
            doubled,
            values,
        )

    def pyg(layer: str, convert: str):
        def build():
            import torch_geometric as pyg

            model = getattr(pyg.nn, layer)(WIDTH, WIDTH).to(device).eval()
            to_adj = getattr(pyg.utils, convert)
            return (lambda x, e: model(x, to_adj(e, size=nodes))), (x, e)

        return build

    def graph_unet():
        import torch_geometric.nn as gnn

        torch.manual_seed(0)
        model = gnn.GraphUNet(features, WIDTH, CLASSES, 2).to(device).eval()
        feats = torch.rand(nodes, features, device=device)
        raw = torch.randint(0, nodes, (2, edges), generator=torch.Generator().manual_seed(1))
        return model, (feats, raw.to(device))

    def spectral_norm():
        torch.manual_seed(0)
        side = 64 if device == "cpu" else 1024
        model = torch.nn.utils.spectral_norm(torch.nn.Linear(side, side)).to(device).train()
        return model, (torch.rand(64, side, device=device),)

    return {
        "spmm_coo": spmm_coo,
        "spmm_csr": spmm_csr,
        "spgemm_csr": spgemm_csr,
        "coalesce": coalesce,
        "gcn_csr": pyg("GCNConv", "to_torch_csr_tensor"),
        "sage_coo": pyg("SAGEConv", "to_torch_coo_tensor"),
        "graph_unet": graph_unet,
        "spectral_norm": spectral_norm,
    }


def run_one(name: str, build: Callable, args) -> dict:
    from solar.frontend.torch import trace_torch
    from solar.gpu.headroom import measure_subject
    from solar.gpu.subject import make_subject

    hw = "H100" if args.small else args.hw
    program, inputs = build()
    trace = trace_torch(program, inputs, observe=True, name=name)
    subject = make_subject(program, inputs, trace=trace, name=name)
    rep = measure_subject(
        subject, hw, validate=True, profile=not args.small, budget_s=args.budget_s
    )
    (Path(args.outdir) / f"{name}.json").write_text(rep.to_json())
    return report_row(name, rep) | {
        "kernels": len(rep.bound.kernels) if rep.bound is not None else None,
        "errors": dict(rep.errors),
    }


def table(rows: list[dict], device: str) -> str:
    head = (
        f"Sparse tensors and train-mode spectral norm on {device}\n\n"
        "| item | kernels | validation | measured | unfused bound | fused bound "
        "| cache-aware bound | measured / fused | violations |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | error: {r['error']} |" + " |" * 7)
            continue
        b = r["bounds"]
        ratio = f"{r['measured'] / b['fused']:.2f}x" if r["measured"] and b.get("fused") else "-"
        lines.append(
            f"| {r['name']} | {r['kernels']} | {r['validation']} | {fmt_t(r['measured'])} | "
            f"{fmt_t(b.get('unfused'))} | {fmt_t(b.get('fused'))} | "
            f"{fmt_t(b.get('cache_aware'))} | {ratio} | {r['violations']} |"
        )
    return head + "\n".join(lines) + "\n"


def main(argv=None) -> int:
    args = parse(argv if argv is not None else sys.argv[1:])
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.small else "cuda"
    sizes = (64, 200, 32) if args.small else (NODES, EDGES, FEATURES)
    items = _items(*sizes, device)
    names = [s for s in args.only.split(",") if s] or list(items)
    unknown = [n for n in names if n not in items]
    if unknown:
        print(f"unknown items {unknown}: choose from {list(items)}", file=sys.stderr)
        return 2
    rows = run_cases((n, lambda n=n: run_one(n, items[n], args)) for n in names)
    return finish(out, "sparse", rows, table(rows, device_name(args.small)))


if __name__ == "__main__":
    sys.exit(main())
