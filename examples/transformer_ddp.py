"""Data-parallel version of examples/transformer.py, one process per rank.

  mpirun -np 2 python examples/transformer_ddp.py [--comm mpi4py|gloo]
         [--steps 20] [--slow-rank 1 --slow-ms 30] [model options]

Each rank trains the same TransformerLM on its own shard of the synthetic
Markov language; after backward the gradients of all ranks are averaged
with one allreduce of a flat buffer, so every rank takes the same
optimizer step (plain synchronous data parallelism, what DDP does).

  --comm mpi4py   MPI_Bcast / MPI_Allreduce / MPI_Barrier through mpi4py:
                  libanchor.so (LD_PRELOAD) anchors them as "MPI_*" ranges.
  --comm gloo     torch.distributed with the gloo backend (rank and size
                  from the launcher's variables, MASTER_ADDR/MASTER_PORT
                  default 127.0.0.1:29533): with ANCHOR_AUTO=torch the
                  module anchors them as "dist.*" ranges.

Phases (anchor API): "train_step" around each whole step (the step the
straggler view compares across ranks), inside it "data", "forward",
"loss", "backward", "grad_sync" (flatten, allreduce, unflatten), "step";
mark "iteration" (value: step).  --slow-rank R spins R's forward for
--slow-ms more per step: a deliberate straggler the others wait for.
"""

import argparse
import os
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transformer import MarkovTokens, TransformerLM  # noqa: E402

RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK")
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE")


def _env_int(names, default):
	for n in names:
		v = os.environ.get(n)
		if v:
			return int(v)
	return default


class Mpi4pyComm:
	def __init__(self):
		from mpi4py import MPI
		self.MPI = MPI
		self.c = MPI.COMM_WORLD
		self.rank, self.size = self.c.Get_rank(), self.c.Get_size()

	def bcast_(self, t):
		self.c.Bcast(t.numpy(), root=0)

	def allreduce_mean_(self, t):
		self.c.Allreduce(self.MPI.IN_PLACE, t.numpy(), op=self.MPI.SUM)
		t /= self.size

	def barrier(self):
		self.c.Barrier()

	def close(self):
		pass


class GlooComm:
	def __init__(self):
		import torch.distributed as dist
		self.dist = dist
		self.rank, self.size = _env_int(RANK_VARS, 0), _env_int(SIZE_VARS, 1)
		os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
		os.environ.setdefault("MASTER_PORT", "29533")
		dist.init_process_group("gloo", rank=self.rank, world_size=self.size)

	def bcast_(self, t):
		self.dist.broadcast(t, src=0)

	def allreduce_mean_(self, t):
		self.dist.all_reduce(t)
		t /= self.size

	def barrier(self):
		self.dist.barrier()

	def close(self):
		self.dist.destroy_process_group()


def spin(ms):
	end = time.perf_counter() + ms / 1e3
	while time.perf_counter() < end:
		pass


def main(argv=None):
	ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
	ap.add_argument("--comm", choices=("mpi4py", "gloo"), default="mpi4py")
	ap.add_argument("--steps", type=int, default=20)
	ap.add_argument("--d-model", type=int, default=64)
	ap.add_argument("--layers", type=int, default=1)
	ap.add_argument("--heads", type=int, default=4)
	ap.add_argument("--batch-size", type=int, default=8)
	ap.add_argument("--seq-len", type=int, default=16)
	ap.add_argument("--vocab", type=int, default=128)
	ap.add_argument("--lr", type=float, default=1e-3)
	ap.add_argument("--slow-rank", type=int, default=-1)
	ap.add_argument("--slow-ms", type=float, default=30.0)
	ap.add_argument("--seed", type=int, default=0)
	a = ap.parse_args(sys.argv[1:] if argv is None else argv)
	import anchor

	torch.set_num_threads(1)  # ranks share the cores
	comm = Mpi4pyComm() if a.comm == "mpi4py" else GlooComm()
	torch.manual_seed(a.seed)  # same initial weights everywhere (then bcast)
	model = TransformerLM(a.vocab, a.d_model, a.layers, a.heads, a.seq_len)
	params = [p for p in model.parameters()]
	flat = torch.cat([p.detach().reshape(-1) for p in params])
	comm.bcast_(flat)
	torch.nn.utils.vector_to_parameters(flat, params)
	opt = torch.optim.AdamW(params, lr=a.lr)
	crit = nn.CrossEntropyLoss()
	data = MarkovTokens(a.steps * a.batch_size, a.vocab, a.seq_len, a.seed + 1 + comm.rank)
	loader = DataLoader(data, batch_size=a.batch_size, shuffle=False, num_workers=0, drop_last=True)
	it = iter(loader)
	t0 = time.perf_counter()
	for step in range(a.steps):
		with anchor.phase("train_step"):
			with anchor.phase("data"):
				src, tgt = next(it)
			with anchor.phase("forward"):
				logits = model(src, tgt)
				if comm.rank == a.slow_rank:
					spin(a.slow_ms)
			with anchor.phase("loss"):
				loss = crit(logits.reshape(-1, a.vocab), tgt.reshape(-1))
			with anchor.phase("backward"):
				loss.backward()
			with anchor.phase("grad_sync"):
				g = torch.cat([p.grad.reshape(-1) for p in params])
				comm.allreduce_mean_(g)
				off = 0
				for p in params:
					n = p.numel()
					p.grad.copy_(g[off:off + n].view_as(p.grad))
					off += n
			with anchor.phase("step"):
				opt.step()
				opt.zero_grad(set_to_none=False)
		anchor.mark("iteration", step)
	comm.barrier()
	# Same weights on every rank after synchronous steps: a checksum proves
	# the allreduce went through (the test compares ranks' lines).
	csum = float(torch.cat([p.detach().reshape(-1) for p in params]).double().sum())
	print(f"rank {comm.rank}/{comm.size} {a.comm}: {a.steps} steps in {time.perf_counter() - t0:.1f} s, "
	      f"loss {loss.item():.3f}, weights checksum {csum:.6f}", flush=True)
	comm.close()
	return 0


if __name__ == "__main__":
	sys.exit(main())
