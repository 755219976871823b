"""Hugging Face ``transformers`` BERT-base encoder (12 layers, width 768, 12 heads, FFN 3072,
vocabulary 30522) with its pooler, built from a config with random weights on the meta device;
batch 32 x 512 tokens with an attention (padding) mask, fp32,
``attn_implementation="sdpa"``; returns the last hidden state and the pooled output.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, TOKENS, VOCAB = 32, 512, 30522


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.BertConfig(vocab_size=VOCAB, attn_implementation="sdpa")
        self.model = transformers.BertModel(config, add_pooling_layer=True)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        hidden, pooled = self.model(
            input_ids=input_ids, attention_mask=attention_mask, return_dict=False
        )[:2]
        return hidden, pooled


def get_inputs():
    return [
        torch.randint(0, VOCAB, (BATCH, TOKENS)),
        torch.ones(BATCH, TOKENS, dtype=torch.long),
    ]


def get_init_inputs():
    return []
