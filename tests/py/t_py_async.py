"""`async with anchor.phase(...)` and `@anchor.phase` on coroutines: concurrent
asyncio tasks on one thread pair each END with their own BEGIN.

A real Python script runs under real perun (psutil sensors only: times, no
joules) with libanchor preloaded.  Tasks are forced, with asyncio.Events,
into an order that is not nested (A begins, B begins, A ends, B ends), so
pairing by name alone (innermost open BEGIN) would give A's END to B's
BEGIN and shift each duration by B's start delay (>= 100 ms).  Each task
measures its own range from inside it (monotonic ns right after entering,
right before leaving); `anchorpost phases` must report the same count and
durations (total, and the sorted durations rebuilt from p50/p95 for three
occurrences), each anchored duration at least the task's own (the records
bracket the task's clock reads) and at most 90 ms longer (room for
preemption on a loaded machine: 77 ms between a task's last clock read and
its END record was seen once at load 12 on 2 cores; wrong pairing moves a
duration by >= 100 ms).  Name-only pairing always yields one
duration shorter than every task's own (A's END on B's BEGIN: A - 100 ms),
so the lower bound catches it whatever the load; no timed assertion: the
tasks' own clocks are the reference.

Also checked (module's own writer, `anchorpost dump`): BEGIN/END of async
ranges carry the same value per task and different values across tasks;
`async with ... as p` gives the phase; an exception propagates through
`async with` and the END is still written; one phase object shared by
concurrent tasks; `async with anchor.measure` tags its range the same way;
a plain `with` writes no value.
"""
import importlib.util
import csv
import json
import os
import shutil
import subprocess

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import ANCHORPOST, LIB, PYTHON, TMP, check, dump, events, need_build, run_py, skip  # noqa: E402

need_build()
# find_spec, not import: only the child processes use perun.
if importlib.util.find_spec("perun") is None:
    skip("perun not installed (scripts/install-deps.sh)")

WORKLOAD = r'''
import asyncio, json, sys, time
import anchor

mine = {"request": [], "fetch": []}

async def request(name, started, wait_for, done, pre, body):
    """Range `request`; begins `pre` s after `wait_for` is set, ends after
    its body sleep and after `done` is set (by the other task)."""
    if wait_for is not None:
        await wait_for.wait()
    await asyncio.sleep(pre)
    async with anchor.phase("request") as p:
        assert p.name == "request"
        t0 = time.monotonic_ns()
        started.set()
        await asyncio.sleep(body)
        if done is not None:
            await done.wait()
            await asyncio.sleep(0.02)
        t1 = time.monotonic_ns()
    mine["request"].append((t1 - t0) / 1e9)

@anchor.phase("fetch")
async def fetch(d, started, hold):
    t0 = time.monotonic_ns()
    started.set()
    await asyncio.sleep(d)
    if hold is not None:
        await hold.wait()
    t1 = time.monotonic_ns()
    return t0, t1

async def timed_fetch(d, started, wait_for, pre, hold, finished):
    if wait_for is not None:
        await wait_for.wait()
    await asyncio.sleep(pre)
    t0, t1 = await fetch(d, started, hold)
    finished.set()
    mine["fetch"].append((t1 - t0) / 1e9)

async def main():
    a_on, b_on, c_on = asyncio.Event(), asyncio.Event(), asyncio.Event()
    a_end = asyncio.Event()
    async def a():
        await request("A", a_on, None, b_on, 0.0, 0.10)
        a_end.set()
    # Forced order, whatever the load: A begins; B begins >= 100 ms later;
    # A ends (after B began); B ends (after A ended).  C, short, begins
    # after B.  Never nested, so name-only pairing would be wrong by
    # B's delay.
    await asyncio.gather(
        a(),
        request("B", b_on, a_on, a_end, 0.10, 0.05),
        request("C", c_on, b_on, None, 0.01, 0.01),
    )
    # fetch 1 begins; fetch 2 begins >= 120 ms later; fetch 1 ends after
    # fetch 2 began; fetch 2 ends after fetch 1 ended.
    e1, e2, d1, d2 = asyncio.Event(), asyncio.Event(), asyncio.Event(), asyncio.Event()
    await asyncio.gather(timed_fetch(0.15, e1, None, 0.0, e2, d1), timed_fetch(0.30, e2, e1, 0.12, d1, d2))

asyncio.run(main())
json.dump(mine, open(sys.argv[1], "w"))
'''

d = os.path.join(TMP, "async")
shutil.rmtree(d, ignore_errors=True)  # perun appends runs to an existing file
os.makedirs(d)
script = os.path.join(d, "workload.py")
with open(script, "w") as f:
    f.write(WORKLOAD)
ring = os.path.join(d, "run.ring")
mine_path = os.path.join(d, "mine.json")
# ANCHOR_MPI=0: perun imports mpi4py; its MPI_Init range is not the workload.
env = dict(os.environ, LD_PRELOAD=LIB, ANCHOR_FILE=ring, ANCHOR_SYNC_PULSE="0", ANCHOR_AUTO="perun", ANCHOR_MPI="0",
           PYTHONPATH=os.path.join(os.path.dirname(LIB), "python"))
p = subprocess.run([PYTHON, "-m", "perun", "monitor", "--data_out", os.path.join(d, "perun"), "--sampling_period",
                    "0.1", script, mine_path], env=env, capture_output=True, text=True, timeout=300, cwd=d)
check(p.returncode == 0, "perun monitor workload failed: %s" % (p.stdout[-2000:] + p.stderr[-2000:]))
mine = json.load(open(mine_path))
h5 = [f for f in os.listdir(os.path.join(d, "perun")) if f.endswith(".hdf5")]
check(len(h5) == 1, "one perun file: %s" % h5)
out = os.path.join(d, "phases.csv")
p = subprocess.run([ANCHORPOST, "phases", "--ring", ring, "--perun", os.path.join(d, "perun", h5[0]), "-o", out],
                   capture_output=True, text=True, timeout=120)
check(p.returncode == 0, "anchorpost phases failed: %s" % p.stderr)
rows = {r["phase"]: r for r in csv.DictReader(open(out))}


def sorted_from_table(r, n):
    """count/total/p50/p95 -> the n sorted durations (n <= 3), seconds."""
    total, p50, p95 = float(r["total_s"]), float(r["p50_ms"]) / 1e3, float(r["p95_ms"]) / 1e3
    if n == 2:  # p50 = d1 + 0.5 (d2 - d1) = total / 2; p95 = d1 + 0.95 (d2 - d1)
        spread = (p95 - p50) / 0.45
        return [total / 2 - spread / 2, total / 2 + spread / 2]
    d2 = p50
    d3 = d2 + (p95 - d2) / 0.9
    return [total - d2 - d3, d2, d3]


for name, n in (("request", 3), ("fetch", 2)):
    r = rows.get(name)
    check(r is not None, "phase %s in the table: %s" % (name, sorted(rows)))
    check(int(r["count"]) == n, "%s: count %s, want %d" % (name, r["count"], n))
    got = sorted_from_table(r, n)
    want = sorted(mine[name])
    print("%s: anchored %s, tasks' own %s" % (name, ["%.4f" % x for x in got], ["%.4f" % x for x in want]))
    for g, w in zip(got, want):
        check(w - 1e-4 <= g <= w + 0.09,
              "%s: anchored durations %s do not match the tasks' own %s (END paired with another task's BEGIN?)"
              % (name, got, want))
    check(abs(float(r["total_s"]) - sum(want)) <= 0.04 * n, "%s: total_s %s vs %s" % (name, r["total_s"], sum(want)))

# Record-level checks with the module's own writer.
ring2 = os.path.join(d, "own.ring")
p = run_py(r'''
import asyncio, anchor
shared = anchor.phase("shared")
async def t(d):
    async with shared:
        await asyncio.sleep(d)
async def boom():
    try:
        async with anchor.phase("boom"):
            await asyncio.sleep(0.01)
            raise KeyError("x")
    except KeyError:
        print("propagated")
async def measured(d):
    async with anchor.measure("measured", nvml=False) as m:
        await asyncio.sleep(d)
    assert m.seconds > 0
async def main():
    await asyncio.gather(t(0.3), t(0.01), boom(), measured(0.3), measured(0.01))
with anchor.phase("plain"):
    pass
asyncio.run(main())
''', ring2, preload=False)
check("propagated" in p.stdout, "exception propagates through async with")
rows2 = dump(ring2)
sh = events(rows2, name="shared")
check(len(sh) == 4, "shared: 2 BEGIN + 2 END, got %d" % len(sh))
vals = [r["value"] for r in sh]
check(all(v not in ("", None) for v in vals), "async BEGIN/END carry a value: %s" % vals)
bvals = [r["value"] for r in sh if r["kind"] == "begin"]
evals = [r["value"] for r in sh if r["kind"] == "end"]
check(len(set(bvals)) == 2 and sorted(bvals) == sorted(evals), "one id per task, same on BEGIN and END: %s" % sh)
# The 10 ms task ends first (the other sleeps 300 ms): its END carries the second BEGIN's id.
check(evals[0] == bvals[1], "first END belongs to the second BEGIN's task: %s" % sh)
check(len(events(rows2, kind="end", name="boom")) == 1, "END written when the block raises")
ms = events(rows2, name="measured")
mb = [r["value"] for r in ms if r["kind"] == "begin"]
me = [r["value"] for r in ms if r["kind"] == "end"]
check(len(set(mb)) == 2 and "" not in mb and me == [mb[1], mb[0]],
      "async with anchor.measure: per-task range ids, the shorter task's END first: %s" % ms)
check(all(r["value"] in ("", None) for r in events(rows2, name="plain")), "plain with: no value")
print("ok")
