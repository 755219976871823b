"""LLM inference, one decode step: the LLaMA-style causal LM of ``model_llm_prefill.py``
(LLaMA-2-7B width, 4 layers, bf16) takes one new token per sequence for a batch of ``BATCH``
sequences whose KV cache already holds ``CONTEXT`` tokens, writes the new keys and values into
the cache in place (a ``transformers.StaticCache`` of ``CONTEXT + 1`` slots, as serving engines
and ``generate(cache_implementation="static")`` keep it) and returns the logits.

Its fused bound is the classic decode bound: the weights (one embedding row per token) plus the
cache's keys and values, over the DRAM bandwidth, at small batch (a sweep of ``BATCH`` gives
the decode roofline). ``solar.llm.decode_step(model, batch, context)`` builds the same program
for any Hugging Face causal LM; here it is written out. Each call first sets the cache's
position counters back to ``CONTEXT`` (one tiny kernel per layer), so the step can be timed
again and again.

Needs the optional ``transformers`` package (imported lazily).
"""

import inspect

import torch

REQUIRES = ["transformers"]

BATCH, CONTEXT, LAYERS = 8, 4096, 4
CONFIG = dict(
    hidden_size=4096,
    intermediate_size=11008,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=32000,
    max_position_embeddings=8192,
)


def config():
    import transformers

    return transformers.LlamaConfig(**CONFIG, num_hidden_layers=LAYERS)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        self.model = transformers.LlamaForCausalLM(config()).to(torch.bfloat16)
        # recent transformers name the argument `cache`, earlier ones `past_key_values` (an
        # unknown keyword is swallowed by **kwargs: the step would run with a fresh cache)
        names = inspect.signature(self.model.forward).parameters
        self.keyword = "cache" if "cache" in names else "past_key_values"

    def forward(self, input_ids, position_ids, cache):
        for layer in cache.layers:  # the cache holds CONTEXT tokens: the new one goes next
            layer.cumulative_length.fill_(CONTEXT)
        kw = {self.keyword: cache}
        return self.model(input_ids=input_ids, position_ids=position_ids, **kw).logits


def get_inputs():
    import transformers

    heads = CONFIG["num_key_value_heads"]
    head_dim = CONFIG["hidden_size"] // CONFIG["num_attention_heads"]
    cache = transformers.StaticCache(config=config(), max_cache_len=CONTEXT + 1)
    for layer in cache.layers:
        new = torch.empty(BATCH, heads, 1, head_dim, dtype=torch.bfloat16)
        layer.lazy_initialization(new, new)
        layer.keys.normal_()  # the past tokens' keys and values (nothing on the meta device)
        layer.values.normal_()
        layer.cumulative_length = torch.tensor(CONTEXT)
    ids = torch.randint(0, CONFIG["vocab_size"], (BATCH, 1))
    return [ids, torch.full((BATCH, 1), CONTEXT), cache]


def get_init_inputs():
    return []
