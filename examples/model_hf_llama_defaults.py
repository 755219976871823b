"""Hugging Face ``transformers`` LLaMA causal LM called the way people call it: ``model(ids)``
with every default (``use_cache=True``, ``return_dict=True``): the result is a
``CausalLMOutputWithPast`` holding the logits and a ``DynamicCache`` whose keys and values are
outputs too. 1 decoder layer at LLaMA-2-7B width (4096, 32 heads, FFN 11008, vocabulary
32000), grouped-query attention (8 key/value heads), bf16, batch 1 x 512 tokens, random
weights on the meta device.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, TOKENS = 1, 512
CONFIG = dict(
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=1,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    max_position_embeddings=4096,
)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        self.model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
        self.model.to(torch.bfloat16)

    def forward(self, input_ids: torch.Tensor):
        return self.model(input_ids)


def get_inputs():
    return [torch.randint(0, CONFIG["vocab_size"], (BATCH, TOKENS))]


def get_init_inputs():
    return []
