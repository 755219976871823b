"""LSTM language model (PyTorch's word_language_model, "medium" config): embedding 650 over a
33278-word vocabulary (WikiText-2), 2-layer LSTM with 650 hidden units, dropout (eval:
identity), decoder Linear to the vocabulary; batch 64, BPTT length 35, fp32."""

import torch
from torch import nn

BATCH, BPTT, VOCAB, WIDTH, LAYERS = 64, 35, 33278, 650, 2


class Model(nn.Module):
    def __init__(self, vocab: int = VOCAB, width: int = WIDTH, layers: int = LAYERS):
        super().__init__()
        self.encoder = nn.Embedding(vocab, width)
        self.drop = nn.Dropout(0.5)
        self.rnn = nn.LSTM(width, width, layers, dropout=0.5)
        self.decoder = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor):
        emb = self.drop(self.encoder(tokens))
        output, (h, c) = self.rnn(emb, (h0, c0))
        logits = self.decoder(self.drop(output))
        return torch.log_softmax(logits, dim=-1), h, c


def get_inputs():
    return [
        torch.randint(0, VOCAB, (BPTT, BATCH)),
        torch.zeros(LAYERS, BATCH, WIDTH),
        torch.zeros(LAYERS, BATCH, WIDTH),
    ]


def get_init_inputs():
    return [VOCAB, WIDTH, LAYERS]
