"""LLM inference, prefill: a LLaMA-style causal LM (Hugging Face ``transformers``, LLaMA-2-7B
width: 4096, 32 heads, 8 key/value heads, FFN 11008, vocabulary 32000; 4 layers) reads a
prompt of ``CONTEXT`` tokens and returns the logits and the new KV cache, every argument at its
default. bf16, batch 1 x 4096 tokens. ``solar.llm.prefill`` builds the same program for any
causal LM; see ``model_llm_decode.py`` for the step that follows.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, CONTEXT, LAYERS = 1, 4096, 4
CONFIG = dict(
    hidden_size=4096,
    intermediate_size=11008,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    max_position_embeddings=8192,
)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.LlamaConfig(**CONFIG, num_hidden_layers=LAYERS)
        self.model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)

    def forward(self, input_ids: torch.Tensor):
        return self.model(input_ids)


def get_inputs():
    return [torch.randint(0, CONFIG["vocab_size"], (BATCH, CONTEXT))]


def get_init_inputs():
    return []
