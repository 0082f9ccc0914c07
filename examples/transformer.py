"""A small but real PyTorch transformer language model, anchored.

  python examples/transformer.py [--epochs 3] [--steps 60] [--d-model 128]
         [--layers 2] [--batch-size 32] [--workers 2] [--device cpu|cuda]
         [--no-anchor-calls]

Trains an encoder-decoder transformer (torch.nn.Transformer) to continue
token sequences from a synthetic language: a fixed random Markov chain
where every token has a few likely successors, so the loss really falls.
The data is generated in the DataLoader's worker processes (no downloads).
About a minute on two CPU cores with the defaults.

Every phase of the loop is anchored with the anchor module's documented API:
  anchor.mark(name, value=None)      an instant
  with anchor.phase(name): ...       a range
phases: "epoch", "data" (fetching the next batch), "forward", "loss",
"backward", "step" (optimizer step + zero_grad); marks: "iteration" (value:
global step), "train_loss" (value: loss).  --no-anchor-calls runs the
same loop without any anchor call (to show automatic anchors on unmodified
code, or to run where the module is not installed).  On CUDA each phase
ends with torch.cuda.synchronize() so ranges cover the GPU work
(--no-cuda-sync to skip).
"""

import argparse
import contextlib
import math
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class _NoAnchor:
	"""Used only with --no-anchor-calls: the loop then makes no anchor calls."""

	@staticmethod
	def mark(name, value=None):
		pass

	@staticmethod
	def phase(name):
		return contextlib.nullcontext()


class MarkovTokens(Dataset):
	"""Sequences from a fixed sparse Markov chain; item i is reproducible."""

	def __init__(self, n_items, vocab, seq_len, seed, branching=4):
		self.n, self.vocab, self.seq_len, self.seed = n_items, vocab, seq_len, seed
		g = torch.Generator().manual_seed(seed)
		# Each token has `branching` successors with skewed probabilities.
		self.succ = torch.randint(2, vocab, (vocab, branching), generator=g)
		p = torch.rand(vocab, branching, generator=g) ** 2
		self.prob = p / p.sum(1, keepdim=True)

	def __len__(self):
		return self.n

	def __getitem__(self, i):
		g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
		x = torch.empty(2 * self.seq_len, dtype=torch.long)
		x[0] = torch.randint(2, self.vocab, (1,), generator=g)
		for t in range(1, 2 * self.seq_len):
			k = torch.multinomial(self.prob[x[t - 1]], 1, generator=g)
			x[t] = self.succ[x[t - 1], k]
		return x[: self.seq_len], x[self.seq_len:]


class TransformerLM(nn.Module):
	BOS = 1

	def __init__(self, vocab, d_model, layers, heads, seq_len, dropout=0.1):
		super().__init__()
		self.emb = nn.Embedding(vocab, d_model)
		self.pos = nn.Parameter(torch.randn(2 * seq_len, d_model) * 0.02)
		self.tf = nn.Transformer(d_model, heads, layers, layers, 4 * d_model, dropout, batch_first=True)
		self.out = nn.Linear(d_model, vocab)
		self.scale = math.sqrt(d_model)

	def forward(self, src, tgt_out):
		# Teacher forcing: the decoder sees BOS + the target shifted right.
		tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], self.BOS), tgt_out[:, :-1]], 1)
		L = src.shape[1]
		s = self.emb(src) * self.scale + self.pos[:L]
		t = self.emb(tgt_in) * self.scale + self.pos[L:L + tgt_in.shape[1]]
		mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
		return self.out(self.tf(s, t, tgt_mask=mask, tgt_is_causal=True))


def parse_args(argv):
	ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
	ap.add_argument("--epochs", type=int, default=3)
	ap.add_argument("--steps", type=int, default=50, help="optimizer steps per epoch")
	ap.add_argument("--d-model", type=int, default=96)
	ap.add_argument("--layers", type=int, default=2, help="encoder layers (and as many decoder layers)")
	ap.add_argument("--heads", type=int, default=4)
	ap.add_argument("--batch-size", type=int, default=16)
	ap.add_argument("--seq-len", type=int, default=24, help="source and target length")
	ap.add_argument("--vocab", type=int, default=256)
	ap.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
	ap.add_argument("--lr", type=float, default=1e-3)
	ap.add_argument("--seed", type=int, default=0)
	ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
	ap.add_argument("--no-cuda-sync", action="store_true", help="do not synchronize at phase ends on CUDA")
	ap.add_argument("--no-anchor-calls", action="store_true", help="make no anchor calls at all")
	return ap.parse_args(argv)


def main(argv=None):
	a = parse_args(sys.argv[1:] if argv is None else argv)
	if a.no_anchor_calls:
		anchor = _NoAnchor
	else:
		try:
			import anchor
		except ImportError as e:
			print(f"transformer.py: cannot import the anchor module ({e}); build it (make) and put "
			      "build/python on PYTHONPATH, or pass --no-anchor-calls", file=sys.stderr)
			return 2
	if a.device == "cuda" and not torch.cuda.is_available():
		print("transformer.py: --device cuda but torch sees no CUDA device", file=sys.stderr)
		return 2
	torch.manual_seed(a.seed)
	dev = torch.device(a.device)
	sync = torch.cuda.synchronize if a.device == "cuda" and not a.no_cuda_sync else (lambda: None)

	data = MarkovTokens(a.steps * a.batch_size, a.vocab, a.seq_len, a.seed + 1)
	loader = DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
			    drop_last=True, persistent_workers=a.workers > 0,
			    generator=torch.Generator().manual_seed(a.seed))
	model = TransformerLM(a.vocab, a.d_model, a.layers, a.heads, a.seq_len).to(dev)
	opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
	crit = nn.CrossEntropyLoss()
	n_params = sum(p.numel() for p in model.parameters())
	print(f"transformer: {n_params / 1e6:.2f} M parameters, {a.epochs} epochs x {a.steps} steps, "
	      f"batch {a.batch_size}, {a.workers} workers, {a.device}", flush=True)

	step = 0
	t_start = time.perf_counter()
	for epoch in range(a.epochs):
		anchor.mark("epoch", epoch)
		t_epoch = time.perf_counter()
		total = 0.0
		with anchor.phase("epoch"):
			it = iter(loader)
			for _ in range(a.steps):
				with anchor.phase("data"):
					src, tgt = next(it)
					src, tgt = src.to(dev, non_blocking=True), tgt.to(dev, non_blocking=True)
					sync()
				with anchor.phase("forward"):
					logits = model(src, tgt)
					sync()
				with anchor.phase("loss"):
					loss = crit(logits.reshape(-1, a.vocab), tgt.reshape(-1))
					sync()
				with anchor.phase("backward"):
					loss.backward()
					sync()
				with anchor.phase("step"):
					opt.step()
					opt.zero_grad(set_to_none=True)
					sync()
				lv = loss.item()
				total += lv
				anchor.mark("iteration", step)
				anchor.mark("train_loss", lv)
				step += 1
		print(f"epoch {epoch}: mean loss {total / a.steps:.3f}, {time.perf_counter() - t_epoch:.1f} s", flush=True)
	print(f"transformer: {step} steps in {time.perf_counter() - t_start:.1f} s", flush=True)
	return 0


if __name__ == "__main__":
	sys.exit(main())
