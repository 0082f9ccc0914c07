"""anchor.phase(name, device=True) and anchor.device_edges(): device-side
edge records from Python, on the CPU stand-in device (tests/lib/devstandin.py,
an emulated device, not a GPU), with the module's own writer and through
LD_PRELOAD=libanchor.so (its anchor_event accepts the DEV_* kinds).

Checks: without a backend (no torch.cuda) device_edges() is False and
writes nothing; phase(name, device=True) parses (a bad keyword raises
TypeError); with all_phases=False only device=True phases (with-block and
decorator) get DEV_BEGIN/DEV_END, plain phases only host records; a forked
child records host edges only; DEV_CLOCK calibrations are written; the
device-side range holds the 20 ms item it launched (>= 19.9 ms, a lower
bound by construction, not a timing race)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyanchor_util import TMP, check, dump, events, run_py  # noqa: E402

TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib")  # devstandin.py
CODE = """
import os, sys
sys.path.insert(0, %r)
import anchor, devstandin
check = lambda c, m: c or sys.exit("FAIL " + m)
check(anchor.device_edges() is False, "no backend: device_edges() is False")
try:
    anchor.phase("x", colour=1)
    sys.exit("FAIL phase(name, colour=1) accepted")
except TypeError:
    pass
check(anchor.phase("d", device=True).device == 1 and anchor.phase("d").device == 0, "device flag")
dev = devstandin.StandinDevice()
check(anchor.device_edges(True, backend=dev, all_phases=False) is True, "enabled on the stand-in")
with anchor.phase("hostonly"):
    dev.launch("k", 0.01)
with anchor.phase("dev1", device=True):
    dev.launch("k", 0.02)

@anchor.phase("deco", device=True)
def f():
    dev.launch("k", 0.01)

f()
pid = os.fork()
if pid == 0:
    with anchor.phase("child", device=True):
        pass
    os._exit(0)
os.waitpid(pid, 0)
dev.synchronize()
st = anchor.device_edges(False)
check(st["resolved"] == 4, "4 edges resolved: %%r" %% (st,))
""" % TESTS

for preload in (False, True):
    ring = os.path.join(TMP, "devedges_%d.ring" % preload)
    if os.path.exists(ring):
        os.unlink(ring)
    run_py(CODE, ring, preload)
    rows = dump(ring)
    tag = "preload" if preload else "own writer"
    for name in ("dev1", "deco"):
        check(len(events(rows, "dev_begin", name)) == 1 and len(events(rows, "dev_end", name)) == 1,
              "%s: one DEV_BEGIN/DEV_END for %s" % (tag, name))
    for name in ("hostonly", "child"):
        check(not [r for r in rows if r["name"] == name and r["kind"].startswith("dev_")],
              "%s: no device edges for %s" % (tag, name))
        check(len(events(rows, "begin", name)) == 1, "%s: host BEGIN for %s" % (tag, name))
    check(len(events(rows, "dev_clock")) >= 2, "%s: DEV_CLOCK calibrations written" % tag)
    b, e = events(rows, "dev_begin", "dev1")[0], events(rows, "dev_end", "dev1")[0]
    dur = (int(e["value"]) - int(b["value"])) / 1e6
    check(dur >= 19.9, "%s: device-side dev1 lasts %.2f ms, holds its 20 ms item" % (tag, dur))
    print("ok   %s: device edges (emulated device), dev1 device-side %.2f ms" % (tag, dur))
