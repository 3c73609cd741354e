"""An ordinary PyTorch training script (a small transformer classifier with
Adam) whose backward passes run on actorgrad: its only actorgrad lines are
the import and install() below. Without them it is plain PyTorch; `python3 -m
actorgrad.profile train.py --html out.html` runs it unchanged on actorgrad
and writes the message-flow report.

    PYTHONPATH=build/python python3 tools/examples/python/train.py --steps 20
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--actorgrad", action="store_true", help="install actorgrad's engine")
args = parser.parse_args()

if args.actorgrad:
    import actorgrad.torch
    actorgrad.torch.install()

torch.manual_seed(0)
torch.set_num_threads(1)


class Classifier(nn.Module):
    def __init__(self, vocab=50, d_model=32, classes=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.encoder = nn.TransformerEncoderLayer(d_model, 4, dim_feedforward=64, dropout=0.1)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens))
        return self.head(self.norm(h.mean(0)))


model = Classifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
tokens = torch.randint(0, 50, (12, 16))  # sequence x batch
labels = tokens[0] % 4
for step in range(args.steps):
    opt.zero_grad()
    loss = F.cross_entropy(model(tokens), labels)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
