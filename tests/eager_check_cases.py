"""The programs of tests/test_eager_checks.py and bench/gpu_eager_checks.py: per family of
``solar.frontend.torch.eager_checks.RULES``, programs eager PyTorch refuses (on the CPU and on
CUDA alike), and legal mixes that must still bound. Tiny CPU tensors; torch alone (no pytest),
so that the GPU script runs them too."""

from __future__ import annotations

import torch
import torch.nn.functional as F

f32, bf16, i8, i32, i64 = torch.float32, torch.bfloat16, torch.int8, torch.int32, torch.int64


def z(*shape, dtype=f32):
    return torch.zeros(*shape, dtype=dtype)


def _index_put(x, i, v):
    x = x.clone()
    x[i] = v  # line 2 of the function: the refused call
    return x


# (id, the family it breaks, program, inputs): every one raises in eager PyTorch
REFUSED = [
    ("mm", "matmul", lambda a, b: a @ b, (z(4, 8), z(8, 4, dtype=bf16))),
    ("bmm", "matmul", lambda a, b: a @ b, (z(2, 4, 8), z(2, 8, 4, dtype=bf16))),
    ("mv", "matmul", lambda a, b: torch.mv(a, b), (z(4, 8, dtype=bf16), z(8))),
    ("dot", "matmul", lambda a, b: torch.dot(a, b), (z(8), z(8, dtype=bf16))),
    (
        "einsum",
        "matmul",
        lambda a, b: torch.einsum("bij,bjk->bik", a, b),
        (z(2, 4, 8), z(2, 8, 4, dtype=bf16)),
    ),
    ("linear-no-bias", "matmul", lambda x, w: F.linear(x, w), (z(4, 8), z(16, 8, dtype=bf16))),
    (
        "linear-bias",
        "matmul",
        lambda x, w, b: F.linear(x, w, b),
        (z(4, 8), z(16, 8, dtype=bf16), z(16, dtype=bf16)),
    ),
    (
        "linear-bias-dtype",
        "matmul",
        lambda x, w, b: F.linear(x, w, b),
        (z(4, 8), z(16, 8), z(16, dtype=bf16)),
    ),
    (
        "addbmm",
        "matmul",
        lambda c, a, b: torch.addbmm(c, a, b),
        (z(4, 4), z(2, 4, 8, dtype=bf16), z(2, 8, 4)),
    ),
    (
        "baddbmm",
        "matmul",
        lambda c, a, b: torch.baddbmm(c, a, b),
        (z(2, 4, 4), z(2, 4, 8), z(2, 8, 4, dtype=bf16)),
    ),
    (
        "baddbmm-input",
        "matmul",
        lambda c, a, b: torch.baddbmm(c, a, b),
        (z(2, 4, 4, dtype=bf16), z(2, 4, 8), z(2, 8, 4)),
    ),
    ("addmv", "matmul", lambda c, a, b: torch.addmv(c, a, b), (z(4), z(4, 8), z(8, dtype=bf16))),
    ("conv2d", "conv", lambda x, w: F.conv2d(x, w), (z(1, 3, 8, 8), z(4, 3, 3, 3, dtype=bf16))),
    (
        "conv2d-bias",
        "conv",
        lambda x, w, b: F.conv2d(x, w, b),
        (z(1, 3, 8, 8), z(4, 3, 3, 3), z(4, dtype=bf16)),
    ),
    (
        "conv1d-groups",
        "conv",
        lambda x, w: F.conv1d(x, w, groups=2, padding=1),
        (z(1, 4, 8), z(4, 2, 3, dtype=bf16)),
    ),
    (
        "conv-transpose",
        "conv",
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
        (z(1, 3, 8, 8), z(3, 4, 3, 3, dtype=bf16)),
    ),
    (
        "conv-bf16-input",
        "conv",
        lambda x, w: F.conv2d(x, w),
        (z(1, 3, 8, 8, dtype=bf16), z(4, 3, 3, 3)),
    ),
    ("index_select", "index", lambda x, i: torch.index_select(x, 0, i), (z(8, 4), z(2))),
    (
        "index_add-source",
        "index",
        lambda x, i, s: x.index_add(0, i, s),
        (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16)),
    ),
    ("index_add-index", "index", lambda x, i, s: x.index_add(0, i, s), (z(8, 4), z(2), z(2, 4))),
    (
        "index_copy-int32",
        "index",
        lambda x, i, s: x.index_copy(0, i, s),
        (z(8, 4), z(2, dtype=i32), z(2, 4)),
    ),
    (
        "index_copy-source",
        "index",
        lambda x, i, s: x.index_copy(0, i, s),
        (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16)),
    ),
    (
        "index_fill-int32",
        "index",
        lambda x, i: x.index_fill(0, i, 1.0),
        (z(8, 4), z(2, dtype=i32)),
    ),
    ("index_put-values", "index", _index_put, (z(8, 4), z(2, dtype=i64), z(2, 4, dtype=bf16))),
    ("index-float", "index", lambda x, i: x[i], (z(8, 4), z(2))),
    ("gather", "index", lambda x, i: torch.gather(x, 1, i), (z(8, 4), z(8, 2))),
    (
        "scatter-src",
        "index",
        lambda x, i, s: x.scatter(1, i, s),
        (z(8, 4), z(8, 2, dtype=i64), z(8, 2, dtype=bf16)),
    ),
    (
        "scatter_add-index",
        "index",
        lambda x, i, s: x.scatter_add(1, i, s),
        (z(8, 4), z(8, 2), z(8, 2)),
    ),
    ("embedding", "index", lambda i, w: F.embedding(i, w), (z(3), z(10, 4))),
    ("take", "index", lambda x, i: torch.take(x, i), (z(8, 4), z(3, dtype=i32))),
    (
        "cross_entropy-int32",
        "target",
        lambda x, t: F.cross_entropy(x, t),
        (z(4, 10), z(4, dtype=i32)),
    ),
    (
        "nll_loss2d-int32",
        "target",
        lambda x, t: F.nll_loss(x, t),
        (z(2, 3, 4, 4), z(2, 4, 4, dtype=i32)),
    ),
    (
        "masked_fill-uint8",
        "mask",
        lambda x, m: x.masked_fill(m, 0.0),
        (z(8), z(8, dtype=torch.uint8)),
    ),
    (
        "add-out-int64",
        "out",
        lambda a, b, o: torch.add(a, b, out=o),
        (z(4), z(4), z(4, dtype=i64)),
    ),
    (
        "cat-out-int64",
        "out",
        lambda a, b, o: torch.cat([a, b], out=o),
        (z(4), z(4), z(8, dtype=i64)),
    ),
    ("where-float", "mask", lambda c, a, b: torch.where(c, a, b), (z(8), z(8), z(8))),
]


class Bf16Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 32, dtype=bf16)

    def forward(self, x):
        with torch.autocast(x.device.type, dtype=torch.bfloat16):  # the device's own autocast
            return self.proj(x)


def _autocast_mv(a, b):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return torch.mv(a, b)


# (id, program, inputs): legal in eager PyTorch, so bounded
LEGAL = [
    ("autocast-bf16-linear", Bf16Linear(), (torch.randn(8, 64),)),
    ("int8-int_mm", torch._int_mm, (z(32, 32, dtype=i8), z(32, 32, dtype=i8))),
    ("pointwise-promotion", lambda a, b: a * b + 1, (z(8, dtype=bf16), z(8))),
    ("outer-promotion", torch.outer, (z(8, dtype=bf16), z(4))),
    (
        "masked_fill-0dim-value",
        lambda x, m: x.masked_fill(m, torch.tensor(1.0)),
        (z(8, dtype=bf16), z(8, dtype=torch.bool)),
    ),
    ("index_select-int32", lambda x, i: torch.index_select(x, 0, i), (z(8, 4), z(2, dtype=i32))),
    ("embedding-int32", F.embedding, (z(3, dtype=i32), z(10, 4))),
    ("gather-int32", lambda x, i: torch.gather(x, 1, i), (z(8, 4), z(8, 2, dtype=i32))),
    ("linear-bf16", F.linear, (z(4, 8, dtype=bf16), z(16, 8, dtype=bf16), z(16, dtype=bf16))),
]

# (id, program, inputs): legal on CUDA, which eager on a CPU-only machine cannot show (CUDA
# autocast casts mv's operands; the CPU's, which the trace applies, does not)
CUDA_ONLY = [("cuda-autocast-mv", _autocast_mv, (z(4, 8, dtype=bf16), z(8)))]

# (id, family, program, inputs, eager CUDA's error): dtypes the CUDA kernel does not implement
# (its AT_DISPATCH list; the CPU kernel runs them, so eager on a CPU-only machine cannot show it)
CUDA_REFUSED = [
    (
        "int8-mm",
        "cuda-dtype",
        lambda a, b: torch.mm(a, b),
        (z(4, 8, dtype=i8), z(8, 4, dtype=i8)),
        "NotImplementedError: \"addmm_cuda\" not implemented for 'Char'",
    ),
    (
        "int8-linear",
        "cuda-dtype",
        lambda x, w, b: F.linear(x, w, b),
        (z(4, 8, dtype=i8), z(16, 8, dtype=i8), z(16, dtype=i8)),
        "NotImplementedError: \"addmm_cuda\" not implemented for 'Char'",
    ),
    (
        "int32-bmm",
        "cuda-dtype",
        lambda a, b: a @ b,
        (z(2, 4, 8, dtype=i32), z(2, 8, 4, dtype=i32)),
        "NotImplementedError: \"baddbmm_cuda\" not implemented for 'Int'",
    ),
    (
        "int32-addbmm",
        "cuda-dtype",
        lambda c, a, b: torch.addbmm(c, a, b),
        (z(4, 4, dtype=i32), z(2, 4, 8, dtype=i32), z(2, 8, 4, dtype=i32)),
        "NotImplementedError: \"addmm_cuda\" not implemented for 'Int'",
    ),
    (
        "int64-mv",
        "cuda-dtype",
        lambda a, b: torch.mv(a, b),
        (z(4, 8, dtype=i64), z(8, dtype=i64)),
        "NotImplementedError: \"addmv_impl_cuda\" not implemented for 'Long'",
    ),
    (
        "uint8-dot",
        "cuda-dtype",
        lambda a, b: torch.dot(a, b),
        (z(8, dtype=torch.uint8), z(8, dtype=torch.uint8)),
        "NotImplementedError: \"dot\" not implemented for 'Byte'",
    ),
]


class Proj(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.proj(x)  # line 2 of forward: the refused call


class MovedProj(Proj):
    def forward(self, x):
        return self.proj(x.to(self.proj.weight.device))


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(8))

    def forward(self, s):
        return self.w * s  # line 2 of forward: the refused call


def device_cases(on_cuda) -> list[tuple[str, str, object, tuple]]:
    """(id, family, program, inputs): models whose weights ``on_cuda`` puts on CUDA (real ones
    on a GPU, fake ones in the tests) fed CPU tensors; family "devices" where eager refuses
    the mix, "legal" where eager runs it (a CPU 0-dim tensor, an input moved to the weights'
    device)."""
    return [
        ("cuda-linear-cpu-input", "devices", on_cuda(Proj()), (z(8, 64),)),
        ("cuda-mul-cpu-vector", "devices", on_cuda(Scaled()), (z(8),)),
        ("cpu-scalar-with-cuda", "legal", on_cuda(Scaled()), (torch.tensor(2.0),)),
        ("cuda-linear-moved-input", "legal", on_cuda(MovedProj()), (z(8, 64),)),
    ]
