"""1-D convolutions over audio features: a wav2vec2-style strided conv (kernel 3, stride 2,
512 -> 512 channels) and a causal depthwise conv (kernel 4, left padding 3, as in Mamba),
batch 32, 16000 frames, fp32."""

import torch

BATCH, CHANNELS, LENGTH, CAUSAL_K = 32, 512, 16000, 4


class Model(torch.nn.Module):
    def __init__(self, channels: int = CHANNELS):
        super().__init__()
        self.strided = torch.nn.Conv1d(channels, channels, 3, stride=2, bias=False)
        self.causal = torch.nn.Conv1d(
            channels, channels, CAUSAL_K, groups=channels, padding=CAUSAL_K - 1
        )

    def forward(self, x: torch.Tensor):
        return self.strided(x), self.causal(x)[..., : x.shape[-1]]


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS]
