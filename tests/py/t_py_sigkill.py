"""kill -9 mid-run: every mark made before os.kill(getpid(), SIGKILL) is in
the ring (shared file mapping; nothing buffered in the process), with and
without LD_PRELOAD, from the main thread and a second thread."""
import os
import signal

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import TMP, check, dump, events, need_build, run_py  # noqa: E402

SCRIPT = r'''
import os, signal, sys, threading
import anchor
N = 5000
def worker():
    for i in range(N):
        anchor.mark("t.kill", i)
t = threading.Thread(target=worker); t.start(); t.join()
anchor.begin("never.ended")
for i in range(N):
    anchor.mark("m.kill", i)
sys.stdout.write("%d\n" % os.getpid()); sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
anchor.mark("after.kill")  # never reached
'''


def run_case(preload):
    ring = os.path.join(TMP, "kill-%s.ring" % ("pre" if preload else "own"))
    p = run_py(SCRIPT, ring, preload, expect_rc=-signal.SIGKILL)
    pid = int(p.stdout.split()[0])
    rows = [r for r in dump(ring) if r["pid"] == pid]
    for name in ("m.kill", "t.kill"):
        vals = [int(r["value"]) for r in events(rows, "mark", name)]
        check(vals == list(range(5000)), "%s: %d of 5000 marks survived (preload=%s)" % (name, len(vals), preload))
    check(len(events(rows, "begin", "never.ended")) == 1, "open range lost")
    check(not events(rows, "mark", "after.kill") and not events(rows, "proc_exit"), "impossible records")
    print("ok preload=%s: 10000 marks + open BEGIN survive SIGKILL" % preload)


need_build()
run_case(False)
run_case(True)
