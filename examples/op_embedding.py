"""Token embedding lookup: ``nn.Embedding`` with a 128256 x 4096 bf16 table (LLaMA-3-8B) for
(8, 4096) int64 token ids, and a padded (padding_idx=0) 30522 x 768 table (BERT) for
(64, 512) ids."""

import torch

BATCH, TOKENS, VOCAB, WIDTH = 8, 4096, 128256, 4096
BERT_BATCH, BERT_TOKENS, BERT_VOCAB, BERT_WIDTH = 64, 512, 30522, 768


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, WIDTH, dtype=torch.bfloat16)
        self.bert = torch.nn.Embedding(BERT_VOCAB, BERT_WIDTH, padding_idx=0)

    def forward(self, ids: torch.Tensor, bert_ids: torch.Tensor):
        return self.tok(ids), self.bert(bert_ids)


def get_inputs():
    return [
        torch.randint(0, VOCAB, (BATCH, TOKENS)),
        torch.randint(0, BERT_VOCAB, (BERT_BATCH, BERT_TOKENS)),
    ]


def get_init_inputs():
    return []
