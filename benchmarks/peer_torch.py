"""The PyTorch peer of the GPU tables: the same-size models trained the way a PyTorch user would.

* `transformer`: `torch.nn.Transformer` at the transformer card's sizes (6+6
  layers, d_model 512, 8 heads, FFN 2048, pre-norm, dropout 0.1, a 32,000
  embedding shared with the output projection), label-smoothed cross-entropy,
  fused Adam, AMP bfloat16 and `torch.compile`.
* `gnmt`: a GNMT-size cuDNN LSTM encoder-decoder (a bidirectional layer and 3
  residual-from-the-third layers of 1024 units; 4 decoder layers; additive
  attention of every decoder step over the encoder outputs, no input feeding,
  as the zoo's GNMT), AMP bfloat16 (cuDNN runs the LSTMs; no compile).

Same batch shape as `bench_gpu.py` (the card's batch size, `--length` tokens
each side); target tokens/s of training steps, timed after `--warmup` steps.
Appends JSON lines to `--json`. On a CPU it runs in float32 (a dry run).

    python benchmarks/peer_torch.py --model transformer --batch 128 --length 64 --json peer.jsonl
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from torch import nn

VOCAB = 32000


class TransformerPeer(nn.Module):
    def __init__(self, vocab=VOCAB, d_model=512, heads=8, layers=6, ffn=2048, dropout=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(1024, d_model)
        self.core = nn.Transformer(
            d_model, heads, layers, layers, ffn, dropout, batch_first=True, norm_first=True
        )
        self.scale = d_model**0.5

    def embed(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.embedding(ids) * self.scale + self.positions(positions)[None]

    def forward(self, source, target_in):
        mask = nn.Transformer.generate_square_subsequent_mask(
            target_in.shape[1], device=source.device
        )
        out = self.core(
            self.embed(source),
            self.embed(target_in),
            tgt_mask=mask,
            tgt_is_causal=True,
            src_key_padding_mask=source == 0,
            memory_key_padding_mask=source == 0,
        )
        return out @ self.embedding.weight.T


class GNMTPeer(nn.Module):
    def __init__(self, vocab=VOCAB, units=1024, layers=4, dropout=0.2):
        super().__init__()
        self.source_embedding = nn.Embedding(vocab, units)
        self.target_embedding = nn.Embedding(vocab, units)
        self.bidirectional = nn.LSTM(units, units, batch_first=True, bidirectional=True)
        self.encoder = nn.ModuleList(
            [
                nn.LSTM(2 * units if i == 0 else units, units, batch_first=True)
                for i in range(layers - 1)
            ]
        )
        self.decoder = nn.ModuleList(
            [nn.LSTM(units, units, batch_first=True) for _ in range(layers)]
        )
        self.query = nn.Linear(units, units, bias=False)
        self.keys = nn.Linear(units, units, bias=False)
        self.energy = nn.Linear(units, 1, bias=False)
        self.combine = nn.Linear(2 * units, units)
        self.projection = nn.Linear(units, vocab)
        self.dropout = nn.Dropout(dropout)

    def stack(self, layers, x, first_residual):
        for i, layer in enumerate(layers):
            out, _ = layer(x)
            x = self.dropout(out + x if i >= first_residual else out)
        return x

    def forward(self, source, target_in):
        x, _ = self.bidirectional(self.dropout(self.source_embedding(source)))
        memory = self.stack(self.encoder, self.dropout(x), 1)
        y = self.stack(self.decoder, self.dropout(self.target_embedding(target_in)), 2)
        # additive attention of every decoder step over the memory: [B, T, S]
        scores = self.energy(
            torch.tanh(self.query(y)[:, :, None, :] + self.keys(memory)[:, None, :, :])
        )[..., 0]
        scores = scores.masked_fill((source == 0)[:, None, :], -1e9)
        context = torch.softmax(scores.float(), dim=-1).to(memory.dtype) @ memory
        combined = torch.tanh(self.combine(torch.cat([y, context], dim=-1)))
        return self.projection(self.dropout(combined))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("transformer", "gnmt"), required=True)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=VOCAB)
    parser.add_argument("--small", action="store_true", help="tiny sizes (a CPU dry run)")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    if args.model == "transformer":
        sizes = dict(d_model=32, heads=2, layers=1, ffn=64) if args.small else {}
        model = TransformerPeer(args.vocab, **sizes)
    else:
        sizes = dict(units=32, layers=2) if args.small else {}
        model = GNMTPeer(args.vocab, **sizes)
    model = model.to(device)
    compiled = args.model == "transformer" and not args.no_compile and cuda
    step_model = torch.compile(model) if compiled else model
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, fused=cuda)
    loss_fn = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(4, args.vocab, (args.batch, args.length), generator=generator).to(device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=cuda):
            logits = step_model(ids, ids)
        loss = loss_fn(logits.float().reshape(-1, logits.shape[-1]), ids.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    start = time.perf_counter()
    for _ in range(args.warmup):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    warm = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    final_loss = loss.item()  # waits for the last step
    seconds = (time.perf_counter() - start) / args.steps
    row = {
        "peer": f"pytorch {args.model}",
        "precision": "amp_bfloat16" if cuda else "float32",
        "compiled": compiled,
        "batch": args.batch,
        "length": args.length,
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds_per_step": seconds,
        "tokens_per_second": args.batch * args.length / seconds,
        "warmup_seconds": warm,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "torch": torch.__version__,
        "loss": final_loss,
    }
    print(
        f"pytorch {args.model:12s} {row['precision']:13s} {seconds * 1e3:9.1f} ms/step "
        f"{row['tokens_per_second']:12,.0f} tokens/s  warm-up {warm:6.1f} s  compiled {compiled}",
        flush=True,
    )
    if args.json:
        with open(args.json, "a") as handle:
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
