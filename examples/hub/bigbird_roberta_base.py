"""BigBird-RoBERTa-base (12 layers, width 768, 12 heads, block-sparse attention in blocks of 64
with 3 random blocks, vocabulary 50358) as a causal LM (``BigBirdForCausalLM``), fp32.

A model-level benchmark problem written as KernelBench level 4 writes them: ``Model.__init__``
calls ``AutoModelForCausalLM.from_pretrained(model_name, config=config)``, and the config is
read at import by ``AutoConfig.from_pretrained(model_name)``. Under solar neither downloads
weights: the model is built from the config.json of ``google/bigbird-roberta-base`` alone, on
the meta device, from the local Hugging Face cache (``hf download google/bigbird-roberta-base
config.json`` fetches just that file; ``HF_HUB_OFFLINE=1`` works). Batch 1 x 4096 tokens;
returns the logits.
"""

import torch
from transformers import AutoConfig, AutoModelForCausalLM

REQUIRES = ["transformers"]


class Model(torch.nn.Module):
    def __init__(self, model_name, config):
        super().__init__()
        self.model_name = model_name
        self.config = config
        self.model = AutoModelForCausalLM.from_pretrained(self.model_name, config=self.config)

    def forward(self, x):
        return self.model(x).logits


model_name = "google/bigbird-roberta-base"
config = AutoConfig.from_pretrained(model_name)
vocab_size = config.vocab_size
sequence_length = 4096
batch_size = 1


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, sequence_length))]


def get_init_inputs():
    return [model_name, config]
