"""Hugging Face ``transformers`` T5-small encoder-decoder (6 + 6 layers, width 512, 8 heads,
FFN 2048, relative position buckets, vocabulary 32128) for conditional generation, built from
a config with random weights on the meta device; batch 32, 512 source and 128 target tokens,
fp32, ``attn_implementation="eager"`` (T5's attention adds a position bias), ``use_cache=False``;
returns the LM logits.

Needs the optional ``transformers`` package (imported lazily in ``Model.__init__``).
"""

import torch

REQUIRES = ["transformers"]

BATCH, SOURCE, TARGET, VOCAB = 32, 512, 128, 32128


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import transformers

        config = transformers.T5Config(
            vocab_size=VOCAB,
            d_model=512,
            d_ff=2048,
            num_layers=6,
            num_heads=8,
            use_cache=False,
            attn_implementation="eager",
        )
        self.model = transformers.T5ForConditionalGeneration(config)

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(
            input_ids=input_ids,
            decoder_input_ids=decoder_input_ids,
            use_cache=False,
            return_dict=False,
        )[0]


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SOURCE)), torch.randint(0, VOCAB, (BATCH, TARGET))]


def get_init_inputs():
    return []
