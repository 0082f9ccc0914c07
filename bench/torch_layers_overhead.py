"""Slowdown of a training step of the example transformer with
anchor.torch.layers(model, depth=2) (issue 25 point 3; BENCHMARKS.md 18).

    ANCHOR_FILE=/tmp/x.ring PYTHONPATH=build/python python bench/torch_layers_overhead.py \
        [--quick] [--pairs N] [--steps S] [--against OLD/anchor/torch.py] [--callgrind]

The model is examples/transformer.py's TransformerLM at its defaults
(d_model 96, 2+2 layers, 4 heads, batch 16, seq 24, vocab 256), torch on
one thread.  One process, one model: rounds of short blocks, hooks off and
on (LayerHandle.remove / layers again) in a shuffled order per round, so
load from other processes hits every variant alike; blocks are timed in
thread CPU time.  --against also times another implementation of
anchor/torch.py (e.g. `git show REV:python_hooks/anchor/torch.py`) in the
same rounds.  Reported per variant: median of per-round ratios to "off"
with a bootstrap 95 % interval, and the median µs per step it adds.

--callgrind counts instructions instead of timing (valgrind's callgrind,
bench/callgrind_ctl.c through ctypes): the same model under valgrind,
instrumented only in blocks of --steps steps, off and on alternating
(--pairs of them, after warm-up blocks), each block dumped by name.  The
count does not depend on what else the machine runs, so it says whether
the hooks' own work is under the goal where the timed rounds on a shared
machine cannot (their interval is wider than the goal).
"""
import argparse
import ctypes
import glob
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import anchor  # noqa: E402
import anchor.torch  # noqa: E402
from transformer import TransformerLM  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pairs", type=int, default=150)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--against")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--inner-callgrind", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.callgrind:
        return callgrind(a)
    if a.quick:
        a.pairs, a.steps = 20, 2
    impls = {"on": anchor.torch}
    if a.against:
        spec = importlib.util.spec_from_file_location("anchor._torch_against", a.against)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)  # its `from . import _anchor` resolves in package anchor
        impls["against"] = mod
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
    if a.inner_callgrind:
        cg = ctypes.CDLL(a.inner_callgrind)
        handle = None
        for i in range(2 + 2 * a.pairs):  # two warm-up blocks: off, on
            on = i % 2 == 1
            handle = anchor.torch.layers(model, depth=2) if on else None
            if i == 2:
                cg.cg_start()
            cg.cg_zero()
            for _ in range(a.steps):
                step()
            if i >= 2:
                cg.cg_dump(b"on" if on else b"off")
            if handle is not None:
                handle.remove()
        return
    res = {k: [] for k in ["off"] + list(impls)}
    paths = []
    rng = random.Random(0)
    for _ in range(a.pairs):
        order = list(res)
        rng.shuffle(order)
        for k in order:
            handle = impls[k].layers(model, depth=2) if k != "off" else None
            if handle is not None:
                paths = handle.paths
            res[k].append(block(a.steps))
            if handle is not None:
                handle.remove()
    print("anchored modules (depth 2): %d: %s" % (len(paths), ", ".join(paths)))
    print("step: off %.0f us (median, thread CPU time), %d rounds of %d-step blocks"
          % (statistics.median(res["off"]) / 1e3, a.pairs, a.steps))
    boot = random.Random(1)
    for k in impls:
        ratios = [x / y for x, y in zip(res[k], res["off"])]
        boots = sorted(statistics.median(boot.choices(ratios, k=len(ratios))) for _ in range(2000))
        lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
        print("%s: slowdown %+.2f %% (95 %% CI %+.2f .. %+.2f %%), %+.0f us per step"
              % ("this code" if k == "on" else "against", 100 * (statistics.median(ratios) - 1), 100 * (lo - 1),
                 100 * (hi - 1), statistics.median(x - y for x, y in zip(res[k], res["off"])) / 1e3))


def callgrind(a):
    """Run this script under callgrind (see --callgrind) and report."""
    d = tempfile.mkdtemp(prefix="anchor-cg-")
    so = os.path.join(d, "callgrind_ctl.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so,
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "callgrind_ctl.c")], check=True)
    pairs, steps = (a.pairs if a.pairs != 150 else 3), a.steps
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-systime=no",
           "--callgrind-out-file=" + os.path.join(d, "cg.out"), sys.executable, os.path.abspath(__file__),
           "--inner-callgrind", so, "--pairs", str(pairs), "--steps", str(steps)]
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {"off": [], "on": []}
    for f in sorted(glob.glob(os.path.join(d, "cg.out.*")), key=lambda p: int(p.rsplit(".", 1)[1])):
        name = total = None
        for line in open(f, errors="replace"):
            if line.startswith("desc: Trigger: Client Request: "):
                name = line.split(": ")[-1].strip()
            elif line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
        if name in got and total:
            got[name].append(total / steps)
    if not got["off"] or len(got["off"]) != len(got["on"]):
        sys.exit("callgrind: no block dumps in %s" % d)
    ratios = [y / x for x, y in zip(got["off"], got["on"])]
    print("callgrind, %d pairs of %d-step blocks (%.0f s under valgrind): instructions per step off %.4g, on %.4g"
          % (len(ratios), steps, time.time() - t0, statistics.median(got["off"]), statistics.median(got["on"])))
    print("hooks at depth 2: %+.3f %% instructions per step (pairs: %s), %+.4g instructions per step"
          % (100 * (statistics.median(ratios) - 1), ", ".join("%+.3f %%" % (100 * (r - 1)) for r in ratios),
             statistics.median(y - x for x, y in zip(got["off"], got["on"]))))


if __name__ == "__main__":
    main()
