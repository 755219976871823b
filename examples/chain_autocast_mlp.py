"""Mixed precision with ``torch.autocast``: fp32 weights and inputs, a Linear -> GELU -> Linear
-> softmax MLP run under ``torch.autocast("cuda", dtype=torch.bfloat16)``; 8192 tokens, width
2048 -> 8192 -> 2048.

On a GPU autocast runs the GEMMs in bf16 (``_to_copy`` kernels cast the input and the weights).
solar traces on fake CPU tensors, where it applies the CPU autocast policy in place of CUDA's
and says so in the report's assumptions.
"""

import torch
import torch.nn.functional as F

TOKENS, WIDTH, HIDDEN = 8192, 2048, 8192


class Model(torch.nn.Module):
    def __init__(self, width: int = WIDTH, hidden: int = HIDDEN):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, hidden)
        self.fc2 = torch.nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return torch.softmax(self.fc2(F.gelu(self.fc1(x))), dim=-1)


def get_inputs():
    return [torch.randn(TOKENS, WIDTH)]


def get_init_inputs():
    return [WIDTH, HIDDEN]
