"""Slowdown of a real small training step with ANCHOR_AUTO=torch anchors.

    LD_PRELOAD=build/libanchor.so ANCHOR_FILE=/tmp/x.ring \
        PYTHONPATH=build/python python bench/py_auto_overhead.py [--quick]

One process, one model: blocks of steps alternate between auto anchors off
and on (anchor._torch_hooks.install/uninstall), so load from other
processes hits both alike.  A step is a DataLoader fetch + forward of a
2-layer transformer encoder LM head + loss + backward + Adam step (torch on
one thread, no DataLoader workers, so all the work is on the timed thread).
Blocks are timed in thread CPU time (time.thread_time_ns), which other
processes' load inflates far less than wall time.  Reported: median of
per-pair ratios (on/off block time) with a bootstrap 95 % interval; then
the overhead in µs per step on a model of trivial modules, where the
hooks' absolute cost is the whole difference.
"""
import random
import statistics
import sys
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import anchor
from anchor import _torch_hooks


def build():
    torch.manual_seed(0)
    vocab, d, seq, batch = 512, 64, 32, 16
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 4, 128, dropout=0.1, batch_first=True), 2)
    model = nn.Sequential(nn.Embedding(vocab, d), enc, nn.Linear(d, vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randint(0, vocab, (4096, seq + 1))
    dl = DataLoader(TensorDataset(data), batch_size=batch, shuffle=True, drop_last=True)
    return model, opt, dl, vocab


def main():
    quick = "--quick" in sys.argv
    torch.set_num_threads(1)
    model, opt, dl, vocab = build()
    state = {"it": iter(dl)}

    def steps(n):
        for _ in range(n):
            try:
                (xy,) = next(state["it"])
            except StopIteration:
                state["it"] = iter(dl)
                (xy,) = next(state["it"])
            x, y = xy[:, :-1], xy[:, 1:]
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            opt.step()

    steps(20)  # warm-up
    block, pairs = (5, 20) if quick else (10, 60)
    ratios, off_t, on_t = [], [], []
    for i in range(pairs):
        order = (False, True) if i % 2 == 0 else (True, False)
        t = {}
        for on in order:
            if on:
                anchor.auto("torch")
            else:
                _torch_hooks.uninstall()
            t0 = time.thread_time_ns()
            steps(block)
            t[on] = (time.thread_time_ns() - t0) / block
        _torch_hooks.uninstall()
        off_t.append(t[False])
        on_t.append(t[True])
        ratios.append(t[True] / t[False])
    med = statistics.median(ratios)
    rng = random.Random(1)
    boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    lo, hi = boots[50], boots[1949]
    print("step time off: median %.2f ms, on: median %.2f ms (%d pairs x %d steps)"
          % (statistics.median(off_t) / 1e6, statistics.median(on_t) / 1e6, pairs, block))
    print("slowdown with auto anchors: %+.2f %% (95 %% bootstrap interval %+.2f .. %+.2f %%)"
          % ((med - 1) * 100, (lo - 1) * 100, (hi - 1) * 100))

    # Hook cost in absolute terms: the same number of module calls per
    # forward, but trivial modules, so on-minus-off is all hook overhead.
    calls = [0]

    def count(m, a):
        calls[0] += 1

    h = torch.nn.modules.module.register_module_forward_pre_hook(count)
    steps(1)
    h.remove()
    n_calls = calls[0]
    tiny = nn.Sequential(*[nn.Identity() for _ in range(n_calls - 2)], nn.Linear(4, 4))
    topt = torch.optim.SGD(tiny.parameters(), lr=1e-3)
    tdl = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=4)
    tstate = {"it": iter(tdl)}

    def tiny_steps(n):
        for _ in range(n):
            try:
                (x,) = next(tstate["it"])
            except StopIteration:
                tstate["it"] = iter(tdl)
                (x,) = next(tstate["it"])
            topt.zero_grad(set_to_none=True)
            tiny(x).sum().backward()
            topt.step()

    tiny_steps(50)
    diffs = []
    tb, tp = (100, 30) if quick else (200, 100)
    for i in range(tp):
        order = (False, True) if i % 2 == 0 else (True, False)
        t = {}
        for on in order:
            if on:
                anchor.auto("torch")
            else:
                _torch_hooks.uninstall()
            t0 = time.thread_time_ns()
            tiny_steps(tb)
            t[on] = (time.thread_time_ns() - t0) / tb
        _torch_hooks.uninstall()
        diffs.append(t[True] - t[False])
    d = statistics.median(diffs)
    boots = sorted(statistics.median(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
    off_ms = statistics.median(off_t) / 1e6
    print("hook overhead per step (%d module calls per forward, trivial modules): %.1f us "
          "(95 %% interval %.1f .. %.1f us; %d pairs x %d steps)"
          % (n_calls, d / 1e3, boots[50] / 1e3, boots[1949] / 1e3, tp, tb))
    print("=> overhead / real step (%.2f ms CPU): %.3f %% (interval %.3f .. %.3f %%)"
          % (off_ms, d / 1e6 / off_ms * 100, boots[50] / 1e6 / off_ms * 100, boots[1949] / 1e6 / off_ms * 100))
    print("anchors per step: forward, backward, optimizer.step, dataloader.next (4 BEGIN/END pairs); "
          "preloaded=%s" % anchor.preloaded())

if __name__ == "__main__":
    main()
