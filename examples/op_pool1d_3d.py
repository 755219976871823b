"""1-D max pooling over a text-CNN feature map (64, 256, 4096) with kernel 3 stride 2, and 3-D
average pooling of a video feature map (16, 64, 16, 56, 56) with kernel (2, 2, 2), fp32."""

import torch

TEXT_BATCH, TEXT_C, TEXT_LEN = 64, 256, 4096
VIDEO_BATCH, VIDEO_C, FRAMES, SIZE = 16, 64, 16, 56


class Model(torch.nn.Module):
    def forward(self, text: torch.Tensor, video: torch.Tensor):
        pooled_text = torch.nn.functional.max_pool1d(text, 3, stride=2)
        pooled_video = torch.nn.functional.avg_pool3d(video, 2)
        return pooled_text, pooled_video


def get_inputs():
    return [
        torch.randn(TEXT_BATCH, TEXT_C, TEXT_LEN),
        torch.randn(VIDEO_BATCH, VIDEO_C, FRAMES, SIZE, SIZE),
    ]


def get_init_inputs():
    return []
