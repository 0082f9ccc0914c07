"""What anchor.torch.layers costs per anchored module call (issue 25 point
3; BENCHMARKS.md 18), on a model so small that the hooks are most of a
step: Sequential(Linear(8, 8), 4 x Sequential(Linear, Tanh)) at depth 2
(13 modules), batch 2, forward + backward, torch on one thread.  Load on
the machine moves a 0.35 ms step far less than it moves a 50 ms one, so
this isolates the hooks' own cost; multiply by the modules a real model
anchors to get its per-step cost.

    ANCHOR_FILE=/tmp/x.ring PYTHONPATH=build/python python bench/torch_hook_cost.py \
        [--against OLD/anchor/torch.py]
"""
import argparse
import importlib.util
import random
import statistics
import time

import anchor  # noqa: F401
import anchor.torch
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--against")
    ap.add_argument("--rounds", type=int, default=40)
    a = ap.parse_args()
    impls = {"this code": anchor.torch}
    if a.against:
        spec = importlib.util.spec_from_file_location("anchor._torch_against", a.against)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        impls["against"] = mod
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8),
                                *[torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()) for _ in range(4)])
    x = torch.randn(2, 8)

    def block(n):
        t0 = time.thread_time_ns()
        for _ in range(n):
            model(x).sum().backward()
        return (time.thread_time_ns() - t0) / n

    block(200)
    res = {k: [] for k in ["off"] + list(impls)}
    n = 0
    rng = random.Random(0)
    for _ in range(a.rounds):
        order = list(res)
        rng.shuffle(order)
        for k in order:
            h = impls[k].layers(model, depth=2) if k != "off" else None
            if h is not None:
                n = len(h.paths)
            res[k].append(block(300))
            if h is not None:
                h.remove()
    print("step off %.1f us (median, thread CPU time), %d modules anchored, %d rounds"
          % (statistics.median(res["off"]) / 1e3, n, a.rounds))
    for k in impls:
        d = statistics.median(x - y for x, y in zip(res[k], res["off"])) / 1e3
        print("%s: +%.1f us per step, %.1f us per anchored module call (forward + backward)" % (k, d, d / n))


if __name__ == "__main__":
    main()
