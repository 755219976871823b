"""One training step of a transformers ``LlamaForCausalLM`` as its users write it: the model
built from a ``LlamaConfig`` (defaults but the sizes: 12 layers, width 768, 12 heads, SwiGLU
2048, vocabulary 32000, SDPA attention, rotary embeddings), called as ``model(input_ids=ids,
labels=ids)`` in train mode under bf16 autocast, ``loss.backward()``, AdamW. Batch 4 x 512
tokens, fp32 weights (about 110M parameters).

The backward of its rotary embedding (``rotate_half``: two slices and a cat) launches
``slice_backward``; a training problem file (docs/training.md): ``Model.forward`` returns the
loss, ``get_optimizer(model)`` makes the optimizer, ``train_step`` is the step solar analyses.
"""

import torch
from torch import nn

REQUIRES = ["transformers"]

BATCH, TOKENS, VOCAB, WIDTH, HEADS, LAYERS, FFN = 4, 512, 32000, 768, 12, 12, 2048


class Model(nn.Module):
    def __init__(self, layers=LAYERS, width=WIDTH, heads=HEADS, vocab=VOCAB, ffn=FFN):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=vocab,
            hidden_size=width,
            intermediate_size=ffn,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=heads,
            max_position_embeddings=TOKENS,
        )
        self.llama = LlamaForCausalLM(config)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.llama(input_ids=ids, labels=ids).loss


def get_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=3e-4)


def train_step(model, optimizer, ids):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(ids)
    loss.backward()
    optimizer.step()
    return loss


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, TOKENS))]


def get_init_inputs():
    return [LAYERS, WIDTH, HEADS, VOCAB, FFN]
