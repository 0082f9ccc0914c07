"""A small real PyTorch DDP training loop (gloo, CPU) for the launcher tests.

  torchrun --nproc_per_node 2 tests/victims/ddp_train.py --steps 60

Each step is "train_step" with "data", "forward", "backward" and "step"
inside (anchor.phase); DistributedDataParallel averages the gradients
during backward (its own C++ hooks: no dist.* range is seen for them).
Rank and world size come from the launcher's variables (torchrun's
RANK/WORLD_SIZE/MASTER_ADDR), as any DDP script reads them.  Prints one
line per rank at the end: steps, seconds, a checksum of the weights (equal
on every rank when the gradients were really averaged).
"""

import argparse
import time

import anchor
import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--width", type=int, default=192)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, args.width), torch.nn.ReLU(), torch.nn.Linear(args.width, 64))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1 + rank)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        with anchor.phase("train_step"):
            with anchor.phase("data"):
                x = torch.randn(128, 64, generator=gen)
                y = torch.tanh(x)
            with anchor.phase("forward"):
                loss = torch.nn.functional.mse_loss(ddp(x), y)
            with anchor.phase("backward"):
                loss.backward()
            with anchor.phase("step"):
                opt.step()
                opt.zero_grad()
    dt = time.perf_counter() - t0
    checksum = sum(float(p.detach().abs().sum()) for p in model.parameters())
    print("rank %d/%d ddp: %d steps in %.1f s, weights checksum %.6f" % (rank, size, args.steps, dt, checksum),
          flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
