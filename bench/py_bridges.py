"""Cost per range of each bridge (anchor._bridges) and of anchor.phase's NVTX
emission: the same loop with and without, side by side in one process,
best of ROUNDS alternating rounds (a loaded 2-core machine: ratios and
differences, not absolute numbers, are what travel).

    PYTHONPATH=build/python ANCHOR_FILE=/tmp/bridges.ring python bench/py_bridges.py [N] [ROUNDS]

Rows: ns per range (enter + exit) without the bridge, with it, and the
difference (what the bridge adds: anchor's BEGIN/END plus the Python
wrapper).  torch.cuda.nvtx on a CPU-only torch raises on every call, so
its row measures push+pop inside try/except on both sides.
"""
import sys
import time

import anchor
import nvtx
import torch
from anchor import _bridges

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
rf = torch.profiler.record_function


def loop_rf(n):
    for _ in range(n):
        with rf("rf"):
            pass


def loop_torch_nvtx(n):
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    for _ in range(n):
        try:
            push("tn")
        except RuntimeError:
            pass
        try:
            pop()
        except RuntimeError:
            pass


def loop_nvtx_annotate(n):
    for _ in range(n):
        with nvtx.annotate("nv"):
            pass


def loop_nvtx_push(n):
    for _ in range(n):
        nvtx.push_range("nv")
        nvtx.pop_range()


def loop_phase(n):
    ph = anchor.phase
    for _ in range(n):
        with ph("ph"):
            pass


def timed(fn):
    t = time.perf_counter_ns()
    fn(N)
    return (time.perf_counter_ns() - t) / N


def bridged(on):
    if on:
        anchor.auto("record_function")
        anchor.auto("nvtx")
    else:
        _bridges.uninstall()


def nvtx_emit(on):
    anchor.nvtx(on)


CASES = [("torch.profiler.record_function", loop_rf, bridged),
         ("torch.cuda.nvtx push/pop (CPU torch: raises)", loop_torch_nvtx, bridged),
         ("nvtx.annotate (context manager)", loop_nvtx_annotate, bridged),
         ("nvtx.push_range/pop_range", loop_nvtx_push, bridged),
         ("anchor.phase + NVTX emission (nvtx pkg)", loop_phase, nvtx_emit)]

print("N=%d per round, best of %d; ring %s" % (N, ROUNDS, anchor.ring_path()))
print("| range | without ns | with ns | added ns |")
print("|---|---|---|---|")
for name, loop, switch in CASES:
    best = {False: float("inf"), True: float("inf")}
    for _ in range(ROUNDS):
        for on in (False, True):
            switch(on)
            best[on] = min(best[on], timed(loop))
    switch(False)
    print("| %s | %.0f | %.0f | %+.0f |" % (name, best[False], best[True], best[True] - best[False]))
