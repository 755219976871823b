"""Mixed precision with ``torch.autocast``: fp32 weights and inputs, a Linear -> GELU -> Linear
-> softmax MLP run under ``torch.autocast("cpu", dtype=torch.bfloat16)``; 8192 tokens, width
2048 -> 8192 -> 2048.

What the trace records: autocast casts the operands of each linear to bf16 (``_to_copy``
kernels for the input and both weights/biases) and runs the GEMMs in bf16; GELU and softmax
then run on the bf16 result (CPU autocast keeps them in the input dtype).

Assumption this file makes: autocast only acts on tensors of its own device type. solar
traces on fake tensors of the inputs' device; a model built under ``torch.device("meta")``
with meta inputs would make ``autocast("cpu")`` a silent no-op (everything fp32). So the input
is created explicitly on the CPU (``torch.empty``: 64 MiB, never filled) and the trace runs on
CPU fake tensors, where CPU autocast applies. A GPU program would use
``autocast("cuda", ...)``, whose policy (bf16 GEMMs, fp32 softmax) this stands in for.
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
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.softmax(self.fc2(F.gelu(self.fc1(x))), dim=-1)


def get_inputs():
    return [torch.empty(TOKENS, WIDTH, device="cpu")]


def get_init_inputs():
    return [WIDTH, HIDDEN]
