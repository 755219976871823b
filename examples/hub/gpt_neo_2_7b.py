"""GPT-Neo-2.7B (32 layers alternating global attention and local attention of window 256, width
2560, 20 heads, vocabulary 50257) as a causal LM, fp32.

A model-level benchmark problem written as KernelBench level 4 writes them: ``Model.__init__``
calls ``AutoModelForCausalLM.from_pretrained(model_name, config=config)``, and the config is
read at import by ``AutoConfig.from_pretrained(model_name)``. Under solar neither downloads
weights: the model is built from the config.json of ``EleutherAI/gpt-neo-2.7B`` alone, on the
meta device, from the local Hugging Face cache (``hf download EleutherAI/gpt-neo-2.7B
config.json`` fetches just that file; ``HF_HUB_OFFLINE=1`` works). Batch 1 x 2048 tokens;
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


model_name = "EleutherAI/gpt-neo-2.7B"
config = AutoConfig.from_pretrained(model_name)
vocab_size = config.vocab_size
sequence_length = 2048
batch_size = 1


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, sequence_length))]


def get_init_inputs():
    return [model_name, config]
