"""py-spy --subprocesses keeps its chrometrace diff state per thread id
alone: a forked child whose main thread has the parent's pthread id
continues the parent's stack, and the child's events (labelled with the
child's pid) close frames the parent opened.  Real py-spy 0.4 output of
examples/transformer.py under `anchorpost record` has this (perun's
cpuinfo helper forks).  The reader must accept it and give each interval
to the process the stack belonged to at the time."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import check, read_samples, run  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
T = 140502800451392  # same pthread id in parent and forked child


def ev(ph, name, pid, ts, line=1):
    return {"args": {"filename": "/x/m.py", "line": line}, "cat": "py-spy", "name": name, "ph": ph,
            "pid": pid, "tid": T, "ts": ts}


events = [
    ev("B", "main", 100, 0), ev("B", "poll", 100, 0),          # parent: main;poll for 10 us
    ev("E", "poll", 200, 10), ev("B", "child_work", 200, 10),  # child's sample: main;child_work
    ev("E", "child_work", 200, 30), ev("E", "main", 200, 30),  # child's stack ends
]
path = os.path.join(tmp, "forked.chrometrace.json")
with open(path, "w") as f:
    json.dump(events, f)
r = run(["samples", path, "-o", path + ".csv"])
check(r.returncode == 0, "forked child closing the parent's frames: %s" % r.stderr.strip())
rows = [(x["pid"], x["t_rel_s"], x["duration_s"], x["stack"]) for x in read_samples(path + ".csv")]
stacks = {(pid, st) for pid, _, _, st in rows}
check(("100", "main (/x/m.py:1);poll (/x/m.py:1)") in stacks, "the parent's stack: %r" % rows)
check(("200", "main (/x/m.py:1);child_work (/x/m.py:1)") in stacks, "the child's stack: %r" % rows)
check(not any(pid == "100" and "child_work" in st or pid == "200" and "poll" in st for pid, st in stacks),
      "a process got the other's frame: %r" % rows)

# A stray E on a tid nobody opened is still refused.
with open(path, "w") as f:
    json.dump([ev("E", "main", 300, 0)], f)
r = run(["samples", path, "-o", path + ".csv"])
check(r.returncode != 0 and "no open frame" in r.stderr, "stray E refused: %s" % r.stderr.strip())
print("ok forked child continuing the parent's py-spy stack: %r" % rows)
