"""Hugging Face ``transformers`` LLaMA causal LM: 4 decoder layers at LLaMA-2-7B width (4096,
32 query heads, FFN 11008, vocabulary 32000) with grouped-query attention (8 key/value heads),
built from a config with random weights on the meta device; batch 1 x 2048 tokens, bf16,
``attn_implementation="sdpa"``, ``use_cache=False``; returns the logits.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, TOKENS = 1, 2048
CONFIG = dict(
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=4,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    max_position_embeddings=4096,
    rms_norm_eps=1e-5,
)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.LlamaConfig(**CONFIG, use_cache=False, attn_implementation="sdpa")
        self.model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False, return_dict=False)[0]


def get_inputs():
    return [torch.randint(0, CONFIG["vocab_size"], (BATCH, TOKENS))]


def get_init_inputs():
    return []
