"""Weight-only int8 quantized linear (as in GPTQ/AWQ-style W8A16 inference), bf16
activations: the (14336 x 4096) int8 weight is converted to bf16 and scaled per output
channel, then ``F.linear`` on 4096 tokens. Also the activation quantizer: per-token absmax
scale, divide, round, clamp and cast to int8."""

import torch

TOKENS, IN, OUT = 4096, 4096, 14336


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(
            torch.zeros(OUT, IN, dtype=torch.int8), requires_grad=False
        )
        self.scale = torch.nn.Parameter(torch.ones(OUT, 1, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor):
        w = self.weight.to(torch.bfloat16) * self.scale
        y = torch.nn.functional.linear(x, w)
        s = x.abs().amax(dim=-1, keepdim=True).float() / 127.0
        q = torch.clamp(torch.round(x.float() / s), -128, 127).to(torch.int8)
        return y, q, s


def get_inputs():
    return [torch.randn(TOKENS, IN, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
