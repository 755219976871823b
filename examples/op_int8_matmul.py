"""int8 GEMM with int32 accumulation (``torch._int_mm``, the kernel behind W8A8 inference):
(8192 x 4096) int8 activations times a (4096 x 14336) int8 weight, then dequantized to bf16
with per-token and per-channel fp32 scales."""

import torch

TOKENS, IN, OUT = 8192, 4096, 14336


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(
            torch.zeros(IN, OUT, dtype=torch.int8), requires_grad=False
        )
        self.w_scale = torch.nn.Parameter(torch.ones(OUT))

    def forward(self, x_int8: torch.Tensor, x_scale: torch.Tensor) -> torch.Tensor:
        acc = torch._int_mm(x_int8, self.weight)
        return (acc.float() * x_scale * self.w_scale).to(torch.bfloat16)


def get_inputs():
    return [torch.randint(-128, 127, (TOKENS, IN), dtype=torch.int8), torch.rand(TOKENS, 1)]


def get_init_inputs():
    return []
