"""One ring, many writers: main thread, 4 threads and forked DataLoader
workers (num_workers=2), with and without LD_PRELOAD.  Every mark must be
in the ring with the pid/tid the writer saw from os.getpid() and
threading.get_native_id(), and each worker must have its FORK record."""
import json
import os

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import need_modules, TMP, check, dump, events, need_build, run_py  # noqa: E402

SCRIPT = r'''
import json, os, threading
import torch
from torch.utils.data import DataLoader, Dataset
import anchor

seen = []  # (name, value, pid, tid) as the writer saw them

def note(name, value):
    anchor.mark(name, value)
    seen.append((name, value, os.getpid(), threading.get_native_id()))

class DS(Dataset):
    def __len__(self):
        return 16
    def __getitem__(self, i):
        anchor.mark("worker.item", i)
        return torch.tensor([i, os.getpid(), threading.get_native_id()])

note("main.before", 0)
def work(k):
    for j in range(200):
        note("thread.%d" % k, j)
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
workers = []
for batch in DataLoader(DS(), batch_size=2, num_workers=2):
    for i, pid, tid in batch.tolist():
        workers.append((i, pid, tid))
note("main.after", 1)
print(json.dumps({"main": os.getpid(), "seen": seen, "workers": workers}))
'''


def run_case(preload):
    ring = os.path.join(TMP, "procs-%s.ring" % ("pre" if preload else "own"))
    p = run_py(SCRIPT, ring, preload, timeout=110)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    rows = dump(ring)
    marks = events(rows, "mark")
    got = sorted((r["name"], int(r["value"]), r["pid"], r["tid"]) for r in marks if r["name"] != "worker.item")
    want = sorted(tuple(s) for s in out["seen"])
    check(len(want) == 2 + 4 * 200, "script saw %d marks" % len(want))
    check(got == want, "thread marks differ: %d in ring vs %d made" % (len(got), len(want)))
    tids = {s[3] for s in out["seen"] if s[0].startswith("thread.")}
    check(len(tids) == 4 and out["main"] not in tids, "expected 4 distinct thread tids: %r" % tids)
    wk = sorted((int(r["value"]), r["pid"], r["tid"]) for r in marks if r["name"] == "worker.item")
    check(wk == sorted(tuple(w) for w in out["workers"]), "worker marks differ:\n%r\n%r" % (wk, out["workers"]))
    wpids = {w[1] for w in out["workers"]}
    check(len(wpids) == 2 and out["main"] not in wpids, "expected 2 worker pids: %r" % wpids)
    forks = {r["pid"]: int(r["value"]) for r in events(rows, "fork")}
    for w in wpids:
        check(forks.get(w) == out["main"], "no FORK record naming parent for worker %d" % w)
    print("ok preload=%s: %d thread marks, %d worker marks from pids %s" % (preload, len(got), len(wk), sorted(wpids)))


need_modules("torch")
need_build()
run_case(False)
run_case(True)
