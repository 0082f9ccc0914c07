"""Slowdown of a training step of the example transformer with
anchor.torch.layers(model, depth=2) (issue 25 point 3; BENCHMARKS.md 18).

    ANCHOR_FILE=/tmp/x.ring PYTHONPATH=build/python python bench/torch_layers_overhead.py [--quick]

The model is examples/transformer.py's TransformerLM at its defaults
(d_model 96, 2+2 layers, 4 heads, batch 16, seq 24, vocab 256), torch on
one thread.  One process, one model: blocks of steps alternate between
the layer hooks off and on (LayerHandle.remove / layers again), so load
from other processes hits both alike; blocks are timed in thread CPU
time.  Reported: anchored modules, median of per-pair ratios (on/off)
with a bootstrap 95 % interval, and µs per step.
"""
import os
import random
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import anchor  # noqa: E402
from transformer import TransformerLM  # noqa: E402


def main():
    quick = "--quick" in sys.argv
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = TransformerLM(256, 96, 2, 4, 24, dropout=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    src = torch.randint(0, 256, (16, 24))
    tgt = torch.randint(0, 256, (16, 24))

    def step():
        loss = model(src, tgt)
        if isinstance(loss, tuple):
            loss = loss[0]
        if loss.dim():
            loss = loss.float().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    def block(n):
        t0 = time.thread_time_ns()
        for _ in range(n):
            step()
        return (time.thread_time_ns() - t0) / n

    for _ in range(5):
        step()
    pairs, n_steps = (6, 5) if quick else (20, 10)
    ratios, on_us, off_us = [], [], []
    handle = None
    npaths = 0
    for i in range(pairs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        res = {}
        for on in order:
            if on:
                handle = anchor.torch.layers(model, depth=2)
                npaths = len(handle.paths)
            res[on] = block(n_steps)
            if on:
                handle.remove()
        ratios.append(res[1] / res[0])
        on_us.append(res[1] / 1e3)
        off_us.append(res[0] / 1e3)
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    med = statistics.median(ratios)
    print("anchored modules (depth 2): %d: %s" % (npaths, ", ".join(handle.paths)))
    print("step: off %.0f us, on %.0f us (medians, thread CPU time)" % (statistics.median(off_us),
                                                                       statistics.median(on_us)))
    print("slowdown: %+.2f %% (95 %% CI %+.2f .. %+.2f %%), %d pairs of %d-step blocks"
          % (100 * (med - 1), 100 * (boots[50] - 1), 100 * (boots[1949] - 1), pairs, n_steps))


if __name__ == "__main__":
    main()
