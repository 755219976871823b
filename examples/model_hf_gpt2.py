"""Hugging Face ``transformers`` GPT-2 small (124M: 12 layers, width 768, 12 heads, vocabulary
50257) as a causal LM, built from a config with random weights on the meta device (nothing is
downloaded or allocated); batch 8 x 1024 tokens, bf16, ``attn_implementation="sdpa"``,
``use_cache=False``; returns the logits.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, TOKENS = 8, 1024
CONFIG = dict(n_layer=12, n_embd=768, n_head=12, n_positions=1024, vocab_size=50257)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.GPT2Config(**CONFIG, use_cache=False, attn_implementation="sdpa")
        self.model = transformers.GPT2LMHeadModel(config).to(torch.bfloat16)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def get_inputs():
    return [torch.randint(0, CONFIG["vocab_size"], (BATCH, TOKENS))]


def get_init_inputs():
    return []
