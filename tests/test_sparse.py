"""Sparse tensors (COO and CSR) traced as their stored elements, train-mode spectral norm and
the ``out=`` forms it writes through: counts by hand, the executed IR against PyTorch."""

from __future__ import annotations

import pytest
import torch
from eager_oracle import check
from torch import nn

import solar
from solar.frontend.torch import UnsupportedOperatorError, trace_torch
from solar.ir.cost import Footprint, kernel_io

# a 4 x 5 (or 5 x 5) matrix of 5 stored elements; (1, 0) is stored twice
I = torch.tensor([[0, 1, 1, 3, 1], [2, 0, 4, 4, 0]])
V = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
X = torch.arange(15.0).reshape(5, 3)
D = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 3.0]])  # 3 nonzeros


def coo(i, v, size=(4, 5)):
    return torch.sparse_coo_tensor(i, v, size)


MINIMUM = "its smallest possible value; observe=True with real inputs uses the real size"


def sizes(trace) -> list[str]:
    return [a for a in trace.assumptions if a.startswith("data-dependent")]


def test_sparse_times_dense_is_one_kernel_of_2_nnz_n_flops():
    """By hand: 5 stored elements x 3 columns, one multiply-add each: 30 flops; it reads the 5
    values (20 B), both index rows (10 int64, 80 B) and at least one gathered row of ``x``
    (3 floats: every element could sit in one column), and writes the 4 x 3 output (48 B)."""

    def fn(i, v, x):
        return coo(i, v) @ x

    trace = trace_torch(fn, (I, V, X))
    (kernel,) = trace.program.kernels
    assert kernel.op == "solar.sparse_mm.default"
    io = kernel_io(trace.program, kernel)
    assert io.reads == {
        "v": Footprint(5, exact=True),
        "i": Footprint(10, exact=True),
        "x": Footprint(3, exact=False),
    }
    assert io.writes == {"sparse_mm": Footprint(12, exact=True)}
    b = solar.bound(fn, (I, V, X), "H100")
    assert b.flops == {"cuda_fp32": 2 * 5 * 3}
    assert b.bytes_fused == 5 * 4 + 10 * 8 + 3 * 4 + 12 * 4
    assert not sizes(trace)  # nnz is the input's: nothing assumed
    assert any(
        a.startswith("sparse tensors traced as their stored elements") for a in trace.assumptions
    )


def test_a_csr_product_reads_its_row_pointer():
    """A CSR tensor of 3 rows (row 1 empty) and 3 elements times a 3 x 4 matrix: 2·3·4 = 24
    flops; it reads the row pointer's ends crow[1..3] (3 int64: each row's end marks the element
    after it, on chip), the columns (3 int64) and values (3 floats), at least one row of ``x``
    (4 floats), and writes 3 x 4 floats: 24 + 24 + 12 + 16 + 48 = 124 bytes, no row index per
    element and no other kernel."""
    crow, col, val = torch.tensor([0, 1, 1, 3]), torch.tensor([2, 0, 2]), torch.tensor([1.0, 2, 3])

    def fn(crow, col, val, x):
        return torch.sparse_csr_tensor(crow, col, val, (3, 3)) @ x

    trace = check(fn, crow, col, val, torch.rand(3, 4), lifted=True)
    (kernel,) = trace.program.kernels
    assert kernel_io(trace.program, kernel).reads == {
        "crow": Footprint(3, exact=True),
        "col": Footprint(3, exact=True),
        "val": Footprint(3, exact=True),
        "x": Footprint(4, exact=False),
    }
    b = solar.bound(fn, (crow, col, val, torch.rand(3, 4)), "H100")
    assert b.flops["cuda_fp32"] == 2 * 3 * 4
    assert b.bytes_fused == 3 * 8 + 3 * 8 + 3 * 4 + 4 * 4 + 3 * 4 * 4


CASES = {
    "sparse.mm": (lambda i, v, x: torch.sparse.mm(coo(i, v), x), (I, V, X)),
    "mm": (lambda i, v, x: torch.mm(coo(i, v), x), (I, V, X)),
    "matmul-vector": (lambda i, v, x: torch.matmul(coo(i, v), x[:, 0]), (I, V, X)),
    "dense@sparse": (lambda i, v, x: x.t() @ coo(i, v, (5, 5)), (I, V, X)),
    "coalesce": (lambda i, v: (lambda s: (s.indices(), s.values()))(coo(i, v).coalesce()), (I, V)),
    "to_dense": (lambda i, v: coo(i, v).to_dense(), (I, V)),
    "sum": (lambda i, v: torch.sparse.sum(coo(i, v)), (I, V)),
    "spspmm": (lambda i, v: (coo(i, v, (5, 5)) @ coo(i, v, (5, 5))).to_dense(), (I, V)),
    "csr@csr": (
        lambda i, v: (lambda a: (a @ a).to_sparse_coo().values())(
            coo(i, v, (5, 5)).to_sparse_csr()
        ),
        (I, V),
    ),
    "index_select-rows": (
        lambda i, v: coo(i, v).index_select(0, torch.tensor([1, 3, 1])).to_dense(),
        (I, V),
    ),
    "index_select-cols": (
        lambda i, v: coo(i, v).index_select(1, torch.tensor([4, 0])).to_dense(),
        (I, V),
    ),
    "to_sparse": (lambda d: (lambda s: (s.indices(), s.values()))(d.to_sparse()), (D,)),
    "csr-parts": (
        lambda d: (lambda s: (s.crow_indices(), s.col_indices(), s.values()))(d.to_sparse_csr()),
        (D,),
    ),
    "csr@dense": (lambda d: d.to_sparse_csr() @ d, (D,)),
    "t": (lambda i, v, x: coo(i, v).t() @ x[:4], (I, V, X)),
}


@pytest.mark.parametrize("name", CASES)
def test_sparse_programs_execute_as_pytorch(name):
    fn, inputs = CASES[name]
    check(fn, *inputs, observe=True, lifted=True)


@pytest.mark.parametrize(
    "fn, inputs, taken",
    [
        # coalesce: at least one distinct (row, column) of a non-empty tensor; 4 in I
        (lambda i, v: coo(i, v).coalesce().values(), (I, V), [("aten._unique2", 1, 4)]),
        # A @ A: products = pairs (A[r, k], A[k, c]): only (1, 0) (twice) meets row 0's (0, 2):
        # 2 products, 1 distinct position (1, 2); at least none
        (
            lambda i, v: (coo(i, v, (5, 5)) @ coo(i, v, (5, 5))).values(),
            (I, V),
            [("aten.repeat_interleave.Tensor", 0, 2), ("aten._unique2", 0, 1)],
        ),
        (lambda d: d.to_sparse().values(), (D,), [("aten.nonzero", 0, 3)]),
    ],
    ids=["coalesce", "spspmm", "to_sparse"],
)
def test_stored_elements_are_the_smallest_possible_or_observed(fn, inputs, taken):
    least, seen = sizes(trace_torch(fn, inputs)), sizes(trace_torch(fn, inputs, observe=True))
    assert len(least) == len(seen) == len(taken), (least, seen)
    for a, o, (op, lo, observed) in zip(least, seen, taken, strict=True):
        assert f"size of {op} at test_sparse.py" in a, a
        assert a.endswith(f": {lo} ({MINIMUM})"), a
        assert o.endswith(f": {observed} (observed on the given inputs)"), o


def test_graph_unet_is_bounded_and_executes_as_pytorch():
    """PyG's GraphUNet squares its CSR adjacency at each pooling (``to_torch_csr_tensor``,
    ``adj @ adj``, ``to_sparse_coo``): bounded with observe=True, its IR executes as PyG."""
    gnn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    model = gnn.GraphUNet(8, 8, 3, depth=2).eval()
    x, edges = torch.rand(20, 8), torch.randint(0, 20, (2, 50))
    trace = check(model, x, edges, observe=True, lifted=True)
    assert any("aten._unique2 at graph_unet.py" in a for a in trace.assumptions)
    assert solar.bound(model, (x, edges), "H100", observe=True).fused > 0


def test_a_training_step_through_a_sparse_product():
    """Backward of ``A @ h`` (5 elements, 4 columns): ``A^T @ grad`` is one more sparse
    product and the values' gradient one sampled dot product per element
    (``solar.sparse_sddmm``): both its operands are gathers, so its work is their provable
    minimum, all 5 elements at one position: one dot product, 4 multiplies + 4 adds = 8 flops.
    Both gradients equal PyTorch's sparse autograd."""

    class Propagate(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.weights = nn.Parameter(torch.rand(5))

        def forward(self, i, x):
            return coo(i, self.weights, (5, 5)) @ self.lin(x)

    x = torch.rand(5, 4)
    step = solar.bound_training(Propagate(), (I, x), "H100", loss=lambda o: o.pow(2).mean())
    ops = [k.op for k in step.kernels]
    assert ops.count("solar.sparse_mm.default") == 2 and "solar.sparse_sddmm.default" in ops
    sddmm = next(k for k in step.kernels if k.op == "solar.sparse_sddmm.default")
    assert sddmm.flops == {"cuda_fp32": 2 * 4} and sddmm.phase == "backward"

    values, dense = V.clone().requires_grad_(), x.clone().requires_grad_()
    torch.ops.solar.sparse_mm(I[0], I[1], values, dense, 5).pow(2).sum().backward()
    ref_values, ref_dense = V.clone().requires_grad_(), x.clone().requires_grad_()
    (coo(I, ref_values, (5, 5)) @ ref_dense).pow(2).sum().backward()
    torch.testing.assert_close(values.grad, ref_values.grad)
    torch.testing.assert_close(dense.grad, ref_dense.grad)


PYG_ADJACENCIES = {
    "GCNConv-coo": ("GCNConv", "to_torch_coo_tensor"),
    "GCNConv-csr": ("GCNConv", "to_torch_csr_tensor"),
    "SAGEConv-coo (mean)": ("SAGEConv", "to_torch_coo_tensor"),
    "GINConv-csr": ("GINConv", "to_torch_csr_tensor"),
}


@pytest.mark.parametrize("name", PYG_ADJACENCIES)
def test_pyg_layers_on_a_torch_sparse_adjacency_execute_as_pytorch(name):
    """PyG's torch_sparse-free paths: a layer called with a ``torch.sparse`` adjacency goes
    through ``torch_geometric.utils.spmm`` (``torch.sparse.mm``, with ``"mean"`` for SAGE:
    traced as CUDA computes it, the sum divided by each row's stored elements)."""
    pyg = pytest.importorskip("torch_geometric")
    layer, convert = PYG_ADJACENCIES[name]
    torch.manual_seed(0)
    conv = getattr(pyg.nn, layer)
    model = (conv(torch.nn.Linear(5, 4)) if layer == "GINConv" else conv(5, 4)).eval()
    to_adj = getattr(pyg.utils, convert)
    x, edges = torch.rand(12, 5), torch.randint(0, 12, (2, 30))
    check(lambda x, e: model(x, to_adj(e, size=12)), x, edges, observe=True, lifted=True)


@pytest.mark.parametrize(
    "wrap",
    [nn.utils.spectral_norm, nn.utils.parametrizations.spectral_norm],
    ids=["hook", "parametrization"],
)
def test_train_mode_spectral_norm_executes_as_pytorch(wrap):
    """One power iteration writes u and v through ``F.normalize(..., out=)`` (``aten.div.out``),
    lowered as ``aten.div.Tensor`` writing into ``out``."""
    torch.manual_seed(0)
    model = wrap(nn.Linear(6, 4)).train()
    trace = check(model, torch.rand(3, 6), lifted=True)
    assert [k.op for k in trace.program.kernels].count("aten.div.out") == 2


def test_out_forms_write_into_out():
    """``torch.cumsum(x, 0, out=y)``: the functional lowering writing into ``y`` (a view)."""

    def fn(x, a, b):
        y = x.new_zeros(6)
        torch.cumsum(x, 0, out=y.narrow(0, 1, 5))
        return y, torch.div(a, b, out=torch.empty_like(a))

    trace = check(fn, torch.rand(5), torch.rand(2, 3), torch.rand(2, 3) + 1, lifted=True)
    assert {"aten.cumsum.out", "aten.div.out"} <= {k.op for k in trace.program.kernels}


@pytest.mark.parametrize(
    "fn, message",
    [
        (
            lambda i, v: coo(i, v) * 2,
            "mul of a sparse tensor at test_sparse.py:\\d+ is not traced on sparse tensors",
        ),
        (lambda i, v: coo(i, v), "a sparse tensor returned by the program .*return .to_dense()"),
        (
            lambda i, v: torch.sparse_coo_tensor(i[:1], v, (4,)),
            "torch.sparse_coo_tensor of 1 sparse dims",
        ),
        (lambda i, v: torch.sparse_coo_tensor(i, v), "without a size .*pass size="),
    ],
    ids=["mul", "output", "1-D", "no size"],
)
def test_what_is_not_traced_is_one_line(fn, message):
    with pytest.raises(UnsupportedOperatorError, match=message) as e:
        trace_torch(fn, (I, V))
    assert "\n" not in str(e.value)
