"""ANCHOR_AUTO=torch on an unmodified training script (no `import anchor`).

Counts: forward/backward/optimizer.step == iterations, forward only for
the outermost module, dataloader.next == batches + 1 per epoch (the fetch
that ends the epoch), epoch marks 0..E-1.  Containment: a slow custom
autograd Function stamps CLOCK_MONOTONIC around its forward and backward
work; each stamp pair must lie inside a forward/backward range of the same
thread in the ring.  Runs with LD_PRELOAD (default pulses on) and without
(ANCHOR_SYNC_PULSE=0); the LD_PRELOAD run has no PYTHONPATH at all
(libanchor.so adds anchor's python dir).  A script that never imports torch must not get
torch imported and must print the same output as without auto mode.
"""
import json
import os
import re

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import need_modules, TMP, check, dump, events, need_build, ranges, run_py  # noqa: E402

TRAIN = r'''
import json, os, sys, threading, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

MONO = time.CLOCK_MONOTONIC
stamps = {"fwd": [], "bwd": []}

class Slow(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        t0 = time.clock_gettime_ns(MONO)
        time.sleep(0.003)
        stamps["fwd"].append((t0, time.clock_gettime_ns(MONO), threading.get_native_id()))
        return x * 2
    @staticmethod
    def backward(ctx, g):
        t0 = time.clock_gettime_ns(MONO)
        end = t0 + 5_000_000
        while time.clock_gettime_ns(MONO) < end:
            pass
        stamps["bwd"].append((t0, time.clock_gettime_ns(MONO), threading.get_native_id()))
        return g * 2

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.act = nn.ReLU()
    def forward(self, x):
        return self.act(self.lin(Slow.apply(x)))

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(8, 1)
    def forward(self, x):
        return self.head(self.blocks(x))

torch.manual_seed(0)
ds = TensorDataset(torch.randn(48, 8), torch.randn(48, 1))
dl = DataLoader(ds, batch_size=8, num_workers=2)
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
it = 0
for epoch in range(2):
    for x, y in dl:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
        it += 1
import inspect
code = inspect.unwrap(type(opt).step).__code__
lines = [ln for _, _, ln in code.co_lines() if ln is not None]
print(json.dumps({"iters": it, "epochs": 2, "batches": len(dl), "stamps": stamps,
                  "anchor_imported": "anchor" in sys.modules, "pid": os.getpid(),
                  "step_code": [code.co_filename, code.co_qualname, min(lines), max(lines)]}))
'''

NO_TORCH = r'''
import sys, json
print(json.dumps({"torch": "torch" in sys.modules, "x": sum(range(10))}))
'''


def inside(t0, t1, tid, rngs):
    return any(b["mono_ns"] <= t0 and t1 <= e["mono_ns"] and b["tid"] == tid for b, e in rngs)


def run_case(preload, pulse):
    ring = os.path.join(TMP, "auto-%s.ring" % ("pre" if preload else "own"))
    extra = {"ANCHOR_AUTO": "torch"}
    if preload:
        # The command line: LD_PRELOAD + ANCHOR_AUTO and nothing
        # else; libanchor.so puts anchor's python dir on PYTHONPATH.
        extra["PYTHONPATH"] = ""
    if not pulse:
        extra["ANCHOR_SYNC_PULSE"] = "0"
    p = run_py(TRAIN, ring, preload, extra=extra, timeout=110)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    check(out["anchor_imported"], "auto mode did not load anchor")
    n = out["iters"]
    rows = [r for r in dump(ring) if r["pid"] == out["pid"]]
    fwd, bwd = ranges(rows, "forward"), ranges(rows, "backward")
    step, dln = ranges(rows, "optimizer.step"), ranges(rows, "dataloader.next")
    check(len(fwd) == n, "forward ranges %d != iterations %d" % (len(fwd), n))
    check(len(bwd) == n, "backward ranges %d != iterations %d" % (len(bwd), n))
    check(len(step) == n, "optimizer.step ranges %d != iterations %d" % (len(step), n))
    check(len(dln) == n + out["epochs"], "dataloader.next %d != %d" % (len(dln), n + out["epochs"]))
    ep = [int(r["value"]) for r in events(rows, "mark", "epoch")]
    check(ep == list(range(out["epochs"])), "epoch marks %r" % ep)
    # Two Slow calls per forward; the first block's input needs no grad,
    # so autograd runs one Slow.backward per iteration.
    check(len(out["stamps"]["bwd"]) == n and len(out["stamps"]["fwd"]) == 2 * n, "stamps missing")
    for t0, t1, tid in out["stamps"]["bwd"]:
        check(inside(t0, t1, tid, bwd), "autograd work [%d,%d] on tid %d outside every backward range" % (t0, t1, tid))
    for t0, t1, tid in out["stamps"]["fwd"]:
        check(inside(t0, t1, tid, fwd), "slow forward outside every forward range")
    # Phases do not overlap each other on the main thread.
    for b, e in bwd:
        check(not any(fb["mono_ns"] < e["mono_ns"] and b["mono_ns"] < fe["mono_ns"] for fb, fe in fwd),
              "backward overlaps a forward")
    # One SITE record for the optimizer class's own step: a profiler sample
    # in that code is inside optimizer.step by construction, and anchorpost
    # places it by structure (a short step's samples lag under load).
    sites = [dict(kv.split("=", 1) for kv in r["name"].split(";")) for r in rows if r["kind"] == "site"]
    step_sites = [st for st in sites if st.get("phase") == "optimizer.step"]
    f, q, lo, hi = out["step_code"]
    check(len(step_sites) == 1, "optimizer.step SITE records: %r" % step_sites)
    check(step_sites[0] == {"phase": "optimizer.step", "file": f, "func": q, "lines": "%d-%d" % (lo, hi)},
          "optimizer.step SITE %r, want %s %s lines %d-%d" % (step_sites[0], f, q, lo, hi))
    # One each for forward and backward: the functions their wrappers call
    # (torch's own Module.__call__ and torch.autograd.backward) run only
    # inside the ranges the wrappers open.
    for phase, mod, func in (("forward", "torch/nn/modules/module.py", "Module._wrapped_call_impl"),
                             ("backward", "torch/autograd/__init__.py", "backward")):
        got = [st for st in sites if st.get("phase") == phase]
        check(len(got) == 1 and got[0]["file"].endswith(mod) and got[0]["func"] == func and
              re.fullmatch(r"\d+-\d+", got[0].get("lines", "")),
              "%s SITE records %r, want one for %s %s with lines" % (phase, got, mod, func))
    pulses = ranges(rows, "anchor.sync_pulse")
    check(len(pulses) == (6 if pulse else 0), "sync pulses: %d" % len(pulses))
    mean_bwd = sum(e["mono_ns"] - b["mono_ns"] for b, e in bwd) / n / 1e6
    print("ok preload=%s: %d iterations, fwd/bwd/step/next/epoch all match, mean backward %.1f ms, %d pulse ranges, "
          "step site %s lines %d-%d" % (preload, n, mean_bwd, len(pulses), q, lo, hi))


EXPLICIT = r'''
import json, sys
import anchor
try:
    anchor.auto("jax")
except ValueError:
    bad = "ValueError"
anchor.auto("torch")            # torch not imported yet: the import hook installs later
before = "torch" in sys.modules
import torch, torch.nn as nn
m = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 1))
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad(); m(torch.randn(2, 4)).sum().backward(); opt.step()
anchor.auto("torch")            # idempotent
print(json.dumps({"bad": bad, "before": before, "loader": type(torch.__spec__.loader).__name__,
                  # the torch watcher is gone; the one for perun's sampler stays by design
                  "meta_path_clean": "torch" not in __import__("anchor._import_hook")._import_hook._pending}))
'''


def explicit_case():
    ring = os.path.join(TMP, "explicit.ring")
    p = run_py(EXPLICIT, ring, False)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    check(out == {"bad": "ValueError", "before": False, "loader": "SourceFileLoader", "meta_path_clean": True},
          "explicit auto: %r" % out)
    rows = dump(ring)
    for name in ("forward", "backward", "optimizer.step"):
        check(len(ranges(rows, name)) == 3, "explicit auto: %d %s ranges" % (len(ranges(rows, name)), name))
    print("ok: anchor.auto('torch') before import torch, idempotent, unknown target -> ValueError")


def lazy_case():
    ring = os.path.join(TMP, "lazy.ring")
    plain = run_py(NO_TORCH, ring + ".plain", True)
    auto = run_py(NO_TORCH, ring, True, extra={"ANCHOR_AUTO": "torch", "ANCHOR_SYNC_PULSE": "0"})
    check(plain.stdout == auto.stdout and json.loads(auto.stdout)["torch"] is False,
          "auto mode changed a torch-free script: %r vs %r" % (plain.stdout, auto.stdout))
    check(auto.stderr == "", "stderr: %r" % auto.stderr)
    print("ok: torch-free script unchanged, torch not imported")


need_modules("torch")
need_build()
run_case(True, True)
run_case(False, False)
explicit_case()
lazy_case()
