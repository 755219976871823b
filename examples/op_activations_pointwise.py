"""A zoo of pointwise activations on one (16384, 4096) fp32 tensor: ReLU6, ELU, SELU, CELU,
GELU (erf and tanh), SiLU, Mish, Softplus, Softsign, Hardswish, Hardsigmoid, LeakyReLU,
LogSigmoid, Tanhshrink, Hardshrink, Softshrink, Threshold. Each is returned, so each is a kernel
whose result leaves the program."""

import torch
import torch.nn.functional as F

ROWS, WIDTH = 16384, 4096


class Model(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return (
            F.relu6(x),
            F.elu(x, alpha=1.0),
            F.selu(x),
            F.celu(x, alpha=0.5),
            F.gelu(x),
            F.gelu(x, approximate="tanh"),
            F.silu(x),
            F.mish(x),
            F.softplus(x, beta=2.0, threshold=10.0),
            F.softsign(x),
            F.hardswish(x),
            F.hardsigmoid(x),
            F.leaky_relu(x, 0.01),
            F.logsigmoid(x),
            F.tanhshrink(x),
            F.hardshrink(x, 0.5),
            F.softshrink(x, 0.5),
            F.threshold(x, 0.1, 20.0),
        )


def get_inputs():
    return [torch.randn(ROWS, WIDTH)]


def get_init_inputs():
    return []
