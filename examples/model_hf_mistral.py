"""Hugging Face ``transformers`` Mistral causal LM: 2 decoder layers of Mistral-7B (width 4096,
32 query heads, 8 key/value heads, FFN 14336, sliding window 4096, vocabulary 32000), built from
a config with random weights on the meta device; batch 1 x 4096 tokens, bf16,
``attn_implementation="sdpa"``, ``use_cache=False``; returns the logits.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, TOKENS = 1, 4096
CONFIG = dict(
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=2,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    sliding_window=4096,
)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.MistralConfig(**CONFIG, use_cache=False, attn_implementation="sdpa")
        self.model = transformers.MistralForCausalLM(config).to(torch.bfloat16)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def get_inputs():
    return [torch.randint(0, CONFIG["vocab_size"], (BATCH, TOKENS))]


def get_init_inputs():
    return []
