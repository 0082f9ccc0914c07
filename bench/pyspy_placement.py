"""py-spy placement on the user's path (issue 12 point 3): record
tests/victims/workflow_train.py under real `perun monitor` with py-spy as the parent
(`py-spy record OPTS -o prof.json -- python -m anchor_emul.perun monitor
train.py STEPS PULSE_EVERY`), then measure where anchorpost puts the samples
of fwd_only_work (a function that runs only inside the `fwd` phase) against
the ring's own fwd ranges, and whether the stated uncertainty covers the
misses.

  python3 bench/pyspy_placement.py record DIR STEPS PULSE_EVERY AUTO PYSPY_OPTS...
  python3 bench/pyspy_placement.py record-pid DIR STEPS PULSE_EVERY AUTO PYSPY_OPTS...
  python3 bench/pyspy_placement.py record-plain DIR STEPS PULSE_EVERY AUTO PYSPY_OPTS...
  python3 bench/pyspy_placement.py measure DIR
AUTO: '-' for none, else ANCHOR_AUTO (perun: perun's stamps + sync pulses at
start and exit).  record-pid: perun monitor runs alone and `py-spy record
--pid` attaches to it 1 s later.  record-plain: `py-spy record -- python
train.py`, no perun: placement from `anchorpost samples --ring` (slices:
chrometrace at the slice's start, as functions' t_s; speedscope at the
slice's middle, not the sample's instant: the last column, the share of
labelled samples inside their phase at their instants, is exact).
Prints one table row; the last column is the alignment line's share of
SITE-labelled samples (any function) inside their phase."""
import bisect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "lib"))
from workflow_lib import EMUL, PYTHON, anchorpost, dump, env, first_child, pyspy, ranges_of, record, rows  # noqa: E402

TRAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "victims", "workflow_train.py")


def aligned(d, ring, prof):
    """(alignment lines, per-sample times) of prof against ring."""
    import glob
    h5 = glob.glob(os.path.join(d, "perun", "*.hdf5"))
    if h5:
        anchorpost("functions", "--ring", ring, "--perun", h5[0], "--profile", prof, "-o", os.path.join(d, "fn.csv"),
                   "--samples-out", os.path.join(d, "s.csv"), rc=None)
        line = [x for x in open(os.path.join(d, "fn.csv.alignment.txt")).read().splitlines()
                if x.startswith("alignment: py-spy")]
        return line, [float(b["t_s"]) for b in rows(os.path.join(d, "s.csv"))]
    anchorpost("samples", prof, "--ring", ring, "-o", os.path.join(d, "s.csv"), rc=None)
    line = [x for x in open(os.path.join(d, "s.csv.alignment.txt")).read().splitlines() if "py-spy " in x]
    r = rows(os.path.join(d, "s.csv"))
    if any("py-spy chrometrace" in x for x in line):  # slices are [stamp, stamp + d)
        return line, [float(a["t_s"]) for a in r]
    t = []
    for i, a in enumerate(r):  # speedscope: the slice's middle, t0 to the next row's t0 (same thread)
        nxt = r[i + 1] if i + 1 < len(r) and r[i + 1]["thread"] == a["thread"] else None
        t1 = float(nxt["t_s"]) if nxt else float(a["t_s"]) + float(a["duration_s"] or 0)
        t.append((float(a["t_s"]) + t1) / 2)
    return line, t


def measure(d):
    pid = int(open(os.path.join(d, "pid")).read())
    ring, prof = os.path.join(d, "run.ring"), os.path.join(d, "prof.json")
    line, times = aligned(d, ring, prof)
    m = re.search(r"uncertainty \+-([^ ]+) ms", " ".join(line))
    unc = float(m.group(1)) if m else float("nan")
    anchorpost("samples", prof, "-o", os.path.join(d, "samples.csv"))
    iv = ranges_of(dump(ring), pid, "fwd")
    starts = [a for a, _ in iv]
    miss = []
    fr = {r["frame_id"]: r["function"] for r in rows(os.path.join(d, "samples.frames.csv"))}
    hit = set(r["stack_id"] for r in rows(os.path.join(d, "samples.stacks.csv")) if fr[r["frame_id"]] == "fwd_only_work")
    for a, t in zip(rows(os.path.join(d, "samples.csv")), times):
        if a["stack_id"] not in hit or (a["pid"] and int(a["pid"]) != pid):
            continue
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
    lab = re.search(r"structure: (\d+) phase site\(s\), (\d+) sample\(s\) at one, ([0-9.]+)%", " ".join(line))
    print("| %s | %s | %.1f %% of %d | %.0f / %.0f ms | +-%.0f ms | %s | %s |"
          % (open(os.path.join(d, "desc")).read().strip(), method.group(1) if method else "?", inside, n, p90, p95,
             unc, "yes" if p95 <= unc else "NO",
             "%s %% of %s (%s sites)" % (lab.group(3), lab.group(2), lab.group(1)) if lab else "no SITE records"))


def record_other(d, how, steps, every, auto, opts):
    """record-pid / record-plain (see the module's doc).  (rc, pid)."""
    import shutil
    import subprocess
    import time
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    ring, prof = os.path.join(d, "run.ring"), os.path.join(d, "prof.json")
    e = env(ring, None if auto == "-" else auto)
    log = open(os.path.join(d, "run.log"), "w")
    if how == "record-plain":
        p = subprocess.Popen([pyspy(), "record", *opts, "-o", prof, "--", PYTHON, TRAIN, steps, every], env=e,
                             stdout=log, stderr=subprocess.STDOUT, cwd=d)
        pid = first_child(p.pid)
        return p.wait(timeout=1200), pid
    pc = os.path.join(d, "powercap")
    ee = dict(os.environ, PYTHONPATH=EMUL)
    subprocess.run([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], env=ee, check=True)
    p = subprocess.Popen([PYTHON, "-m", "anchor_emul.perun", "--powercap", pc, "monitor", "--sampling_period", "0.1",
                          "--data_out", os.path.join(d, "perun"), TRAIN, steps, every], env=e, stdout=log,
                         stderr=subprocess.STDOUT, cwd=d)
    up = subprocess.Popen([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu",
                           "--watch-pid", str(p.pid)], env=ee)
    time.sleep(1.0)
    spy = subprocess.run([pyspy(), "record", *opts, "--pid", str(p.pid), "-o", prof], stdout=log,
                         stderr=subprocess.STDOUT, timeout=1200)
    rc = p.wait(timeout=1200)
    up.wait(timeout=60)
    return rc or spy.returncode, p.pid


def main():
    if sys.argv[1].startswith("record"):
        d, steps, every, auto, opts = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
        if sys.argv[1] == "record":
            rc, perun, pid = record(d, TRAIN, (steps, every), auto=None if auto == "-" else auto,
                                    spy=[*opts, "-o", os.path.join(d, "prof.json")], timeout=1200)
        else:
            rc, pid = record_other(d, sys.argv[1], steps, every, auto, opts)
            opts = ["(%s)" % sys.argv[1], *opts]
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
