"""py-spy placement on the user's path (issue 12 point 3): record
tests/workflow_train.py under real `perun monitor` with py-spy as the parent
(`py-spy record OPTS -o prof.json -- python -m anchor_emul.perun monitor
train.py STEPS PULSE_EVERY`), then measure where anchorpost puts the samples
of fwd_only_work (a function that runs only inside the `fwd` phase) against
the ring's own fwd ranges, and whether the stated uncertainty covers the
misses.

  python3 bench/pyspy_placement.py record DIR STEPS PULSE_EVERY AUTO PYSPY_OPTS...
  python3 bench/pyspy_placement.py measure DIR
AUTO: '-' for none, else ANCHOR_AUTO (perun: perun's stamps + sync pulses at
start and exit).  Prints one table row."""
import bisect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from workflow_lib import anchorpost, dump, record, rows  # noqa: E402

TRAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "workflow_train.py")


def measure(d):
    import glob
    pid = int(open(os.path.join(d, "pid")).read())
    h5 = glob.glob(os.path.join(d, "perun", "*.hdf5"))[0]
    ring, prof = os.path.join(d, "run.ring"), os.path.join(d, "prof.json")
    p = anchorpost("functions", "--ring", ring, "--perun", h5, "--profile", prof, "-o", os.path.join(d, "fn.csv"),
                   "--samples-out", os.path.join(d, "s.csv"), rc=None)
    line = [x for x in open(os.path.join(d, "fn.csv.alignment.txt")).read().splitlines() if x.startswith("alignment: py-spy")]
    m = re.search(r"uncertainty \+-([^ ]+) ms", " ".join(line))
    unc = float(m.group(1)) if m else float("nan")
    anchorpost("samples", prof, "-o", os.path.join(d, "samples.csv"))
    ev = dump(ring)
    base = int(ev[0]["mono_ns"])
    iv, op = [], None
    for e in ev:
        if e["pid"] == str(pid) and e["name"] == "fwd":
            if e["kind"] == "begin":
                op = (int(e["mono_ns"]) - base) / 1e9
            elif e["kind"] == "end" and op is not None:
                iv.append((op, (int(e["mono_ns"]) - base) / 1e9))
                op = None
    starts = [a for a, _ in iv]
    miss = []
    fr = {r["frame_id"]: r["function"] for r in rows(os.path.join(d, "samples.frames.csv"))}
    hit = set(r["stack_id"] for r in rows(os.path.join(d, "samples.stacks.csv")) if fr[r["frame_id"]] == "fwd_only_work")
    for a, b in zip(rows(os.path.join(d, "samples.csv")), rows(os.path.join(d, "s.csv"))):
        if a["stack_id"] not in hit:
            continue
        t = float(b["t_s"])
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t < iv[i][1]:
            miss.append(0.0)
        else:
            miss.append(min(t - iv[i][1] if i >= 0 else 1e9, starts[i + 1] - t if i + 1 < len(iv) else 1e9))
    miss.sort()
    n = len(miss)
    if not n:
        print("%s: no sample of fwd_only_work" % d)
        return
    inside = 100.0 * miss.count(0.0) / n
    p90, p95 = miss[int(0.9 * n)] * 1e3, miss[int(0.95 * n)] * 1e3
    method = re.search(r"py-spy \w+: ([^,]+)", " ".join(line))
    print("| %s | %s | %.1f %% of %d | %.0f / %.0f ms | +-%.0f ms | %s |"
          % (open(os.path.join(d, "desc")).read().strip(), method.group(1) if method else "?", inside, n, p90, p95,
             unc, "yes" if p95 <= unc else "NO"))


def main():
    if sys.argv[1] == "record":
        d, steps, every, auto, opts = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
        rc, perun, pid = record(d, TRAIN, (steps, every), auto=None if auto == "-" else auto,
                                spy=[*opts, "-o", os.path.join(d, "prof.json")], timeout=1200)
        if rc:
            print("recording failed: %d" % rc)
            sys.exit(1)
        open(os.path.join(d, "pid"), "w").write(str(pid))
        open(os.path.join(d, "desc"), "w").write("`%s`, %s steps, pulse every %s, ANCHOR_AUTO=%s"
                                                 % (" ".join(opts), steps, every, auto))
        measure(d)
    else:
        for d in sys.argv[2:]:
            measure(d)


main()
