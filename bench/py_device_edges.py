"""Added cost per phase edge of device-side edges (anchor._device_edges).

    BUILD=build python bench/py_device_edges.py [--quick]

No GPU here.  Two emulated devices:
  null      events complete at record() (no thread): anchor's own part
            (event object, record call, deque append, the hook, the
            resolver thread's share of the GIL); a real device adds its
            record cost (torch.cuda.Event + cudaEventRecord: not measured).
  standin   tests/lib/devstandin.py, whose record() queues to a Python worker
            thread like a stream: dominated by waking that thread.  Timed in interleaved rounds (hook off /
on) in one process; reported: median ns per edge over rounds.
"""
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
os.environ.setdefault("ANCHOR_FILE", os.path.join(tempfile.mkdtemp(prefix="devedge-"), "b.ring"))
os.environ.setdefault("ANCHOR_RING_SIZE", "256M")

import anchor  # noqa: E402
from anchor import _anchor, _device_edges  # noqa: E402

import devstandin  # noqa: E402

class _NullEvent:
    __slots__ = ("t",)

    def __init__(self, enable_timing=False):
        self.t = 0

    def record(self, stream=None):
        self.t = time.monotonic_ns()

    def query(self):
        return True

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) / 1e6


class NullDevice:
    label = "null:0"
    Event = _NullEvent

    def Stream(self):
        return None

    def current_stream(self):
        return None


quick = "--quick" in sys.argv
rounds, n = (7, 2000) if quick else (21, 5000)
devs = {"null": NullDevice(), "standin": devstandin.StandinDevice()}
ph = anchor.phase("bench")


def run_phase():
    t = time.perf_counter_ns()
    for _ in range(n):
        with ph:
            pass
    return (time.perf_counter_ns() - t) / n


def run_hooks(b, e):
    t = time.perf_counter_ns()
    for _ in range(n):
        b("bench")
        e("bench")
    return (time.perf_counter_ns() - t) / n


print("| path | device (emulated) | ns per phase (2 edges), device edges off | on, resolver running | "
      "added ns per edge | on, resolver paused: hot path only | added ns per edge | resolver ns per edge |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for dname, dev in devs.items():
    for pname, off_fn, on_fn in (("`with anchor.phase(name): pass`", run_phase, run_phase),
                                 ("torch hooks' begin/end", lambda: run_hooks(_anchor.begin, _anchor.end),
                                  lambda: run_hooks(_device_edges.begin, _device_edges.end))):
        res = {k: [] for k in ("off", "on", "hot", "resolve")}
        for _ in range(rounds):
            res["off"].append(off_fn())
            anchor.device_edges(True, backend=dev)
            res["on"].append(on_fn())
            anchor.device_edges(False)  # resolves what is pending (off the timed loop)
            anchor.device_edges(True, backend=dev)
            e = _device_edges._edges
            e.stop.set()
            e.thread.join()  # resolver paused: the hot path alone
            res["hot"].append(on_fn())
            t = time.perf_counter_ns()
            k = e.resolve(wait=True)
            res["resolve"].append((time.perf_counter_ns() - t) / max(k, 1))
            st = anchor.device_edges(False)
        med = {k: statistics.median(v) for k, v in res.items()}
        print("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |"
              % (pname, dname, med["off"], med["on"], (med["on"] - med["off"]) / 2, med["hot"],
                 (med["hot"] - med["off"]) / 2, med["resolve"]))
print("(%d rounds x %d phases; last round: %d edges resolved, %d calibrations; load average %.1f)"
      % (rounds, n, st["resolved"], st["calibrations"], os.getloadavg()[0]))
