"""Real `py-spy record` runs of tests/victims/pyspy_victim.py in speedscope (with
and without --idle), chrometrace and raw format, converted by anchorpost
samples and checked: the known functions are there, sample counts agree
with what json/text parsing of the same file says, time columns are
monotonic per thread, alpha/beta seconds agree with the victim's own
clock (within a tolerance widened by what py-spy lost when it fell
behind, read from the profile itself: pyspy_common.pyspy_lag; skipped
with a message when that loss swallows the quantity), and the --idle
guess tells the two speedscope runs apart."""
import collections
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyspy_common import pyspy_binary, pyspy_lag, check, read_csv, read_samples, run, speedscope_truth  # noqa: E402

tmp = os.environ.get("ANCHOR_TEST_TMP", "/tmp")
py = os.environ.get("PYTHON", sys.executable)
victim = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "victims", "pyspy_victim.py")
pyspy = pyspy_binary()
if not pyspy:
    print("py-spy is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)


RATE = 200


def record(fmt, idle, tag):
    out = os.path.join(tmp, "%s.%s" % (tag, "txt" if fmt == "raw" else "json"))
    times = os.path.join(tmp, tag + ".times.json")
    cmd = [pyspy, "record", "--format", fmt, "-r", str(RATE), "-o", out] + (["--idle"] if idle else []) + \
          ["--", py, victim, times]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not os.path.exists(out):
        msg = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        if "ermission" in r.stderr or "ptrace" in r.stderr.lower():
            print("py-spy cannot attach here (needs ptrace): %s" % msg[0])
            sys.exit(77)
        check(False, "py-spy record failed: %s" % r.stderr)
    with open(times) as f:
        return out, json.load(f)


def convert(path, extra=()):
    out = path + ".csv"
    r = run(["samples", "-v", path, "-o", out] + list(extra))
    check(r.returncode == 0, "anchorpost samples %s: %s" % (path, r.stderr))
    fr = path + ".byframe.csv"
    r2 = run(["samples", path, "--by-frame", "-o", fr])
    check(r2.returncode == 0, "anchorpost samples --by-frame %s: %s" % (path, r2.stderr))
    frames = {}
    for x in read_csv(fr):
        if x["file"].endswith("pyspy_victim.py"):
            frames[x["function"]] = frames.get(x["function"], 0.0) + (float(x["total_s"]) if x["total_s"] else 0.0)
    return read_samples(out), r.stderr, frames, read_csv(fr)


def monotonic(rows, intervals):
    last = {}
    for r in rows:
        t, d = float(r["t_rel_s"]), float(r["duration_s"])
        check(d >= 0, "negative duration_s")
        p = r["profile"]
        if p in last:
            check(t >= last[p] - 1e-9, "%s: t_rel_s goes backwards (%f < %f)" % (p, t, last[p]))
        last[p] = t + d if intervals else t


def close(got, want, what, rel, abs_s, lag=(0.0, "")):
    """got (from py-spy's profile) vs want (the victim's own clock).  The
    difference is py-spy's sampling, not anchor's reading of it (that is
    checked exactly against the json above): when py-spy fell behind
    (pyspy_lag, from the profile itself) the tolerance grows by the time it
    lost, and the comparison is skipped, said so, when that is more than
    the quantity itself."""
    lag_s, why = lag
    if lag_s >= want:
        print("   skipped %s: %.3f s vs %.3f s, but py-spy fell behind by %.3f s (%s)" % (what, got, want, lag_s, why))
        return
    tol = max(rel * want, abs_s) + lag_s
    check(abs(got - want) <= tol, "%s: %.3f s vs %.3f s (tolerance %.3f s%s)" %
          (what, got, want, tol, "; py-spy fell behind by %.3f s: %s" % (lag_s, why) if lag_s else ""))
    print("   %s: %.3f s (victim measured %.3f s%s)" % (what, got, want,
                                                       "; py-spy fell behind by %.3f s: %s" % (lag_s, why) if lag_s else ""))


# speedscope --idle
path, times = record("speedscope", True, "ss_idle")
doc, truth = speedscope_truth(path)
rows, summary, funcs, _ = convert(path)
counts = collections.Counter(r["profile"] for r in rows)
for prof, t in truth.items():
    check(counts.get(prof, 0) == t["n"], "speedscope %s: %d rows vs %d samples" % (prof, counts.get(prof, 0), t["n"]))
stacks = " ".join(r["stack"] for r in rows)
for fn in ("alpha", "beta", "spin", "gamma_worker"):
    check(fn + " (" in stacks, "speedscope --idle: %s not in any stack" % fn)
monotonic(rows, False)
check("idle=unlikely" not in summary, "speedscope --idle: idle guess says 'unlikely': %s" % summary)
print("ok speedscope --idle: %d samples in %d threads match json; alpha, beta, spin, gamma_worker present;"
      " t_rel_s monotonic; idle guess: %s" % (len(rows), len(truth), summary.split("idle=")[1].strip()))
lag = pyspy_lag(path, "speedscope", RATE, times["run_s"], "spin")
close(funcs.get("alpha", 0), times["alpha"], "alpha total_s (speedscope, nominal)", 0.5, 0.05, lag)
close(funcs.get("beta", 0), times["beta"], "beta total_s (speedscope, nominal)", 0.5, 0.05, lag)

# speedscope without --idle: the sleeping thread is mostly dropped
path, times = record("speedscope", False, "ss_noidle")
doc, truth = speedscope_truth(path)
rows, summary, funcs, _ = convert(path)
check(len(rows) == sum(t["n"] for t in truth.values()), "speedscope (no --idle): row count")
check("idle=likely" not in summary, "speedscope without --idle guessed as --idle: %s" % summary)
print("ok speedscope without --idle: %d samples; idle guess: %s" % (len(rows), summary.split("idle=")[1].strip()))

# chrometrace --idle
path, times = record("chrometrace", True, "ct_idle")
with open(path) as f:
    events = json.load(f)
threads = {(e["pid"], e["tid"]) for e in events}
rows, summary, funcs, _ = convert(path)
check({(int(r["pid"]), int(r["pthread_id"])) for r in rows} <= threads, "chrometrace: rows name unknown threads")
# chrometrace's tid is a pthread id: threads.csv keeps it, the OS tid stays empty without --ring
check(all(r["tid"] == "" for r in rows), "chrometrace: a pthread id written as the OS tid")
check(len({r["profile"] for r in rows}) == len(threads), "chrometrace: %d threads in rows, %d in events"
      % (len({r["profile"] for r in rows}), len(threads)))
stacks = " ".join(r["stack"] for r in rows)
for fn in ("alpha", "beta", "spin", "gamma_worker"):
    check(fn + " (" in stacks, "chrometrace: %s not in any stack" % fn)
monotonic(rows, True)
last_ts = max(e["ts"] for e in events) / 1e6
check(all(0 <= float(r["t_rel_s"]) and float(r["t_rel_s"]) + float(r["duration_s"]) <= last_ts + 1e-6 for r in rows),
      "chrometrace: intervals outside [0, last ts]")
print("ok chrometrace --idle: %d intervals over %d threads; functions present; intervals ordered and"
      " non-overlapping per thread; %s" % (len(rows), len(threads), summary.split("idle=")[1].strip()))
lag = pyspy_lag(path, "chrometrace", RATE, times["run_s"], "spin")
close(funcs.get("alpha", 0), times["alpha"], "alpha total_s (chrometrace, real time)", 0.25, 0.03, lag)
close(funcs.get("beta", 0), times["beta"], "beta total_s (chrometrace, real time)", 0.25, 0.03, lag)

# raw --idle
path, times = record("raw", True, "raw_idle")
want = collections.Counter()
total = 0
with open(path) as f:
    for line in f:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, n = line.rsplit(" ", 1)
        total += int(n)
        if stack:
            want[stack.split(";")[-1].rsplit(" (", 1)[0]] += int(n)
rows, summary, funcs, frames = convert(path)
check(len(rows) == total, "raw: %d rows vs %d samples" % (len(rows), total))
check(all(r["t_rel_s"] == "" and r["duration_s"] == "" for r in rows), "raw: time columns not empty")
got = collections.Counter(r["leaf_function"] for r in rows if r["depth"] != "0")
check(got == want, "raw: leaf counts differ")
self_by_fn = collections.Counter()
for x in frames:
    self_by_fn[x["function"]] += int(x["self_samples"])
check(+self_by_fn == +want, "raw --by-frame: self counts differ from the file")
check(want["spin"] > 0, "raw: spin never a leaf")
print("ok raw --idle: %d samples in %d stacks; leaf counts match; no time columns" % (total, len(rows) and len(set(r["stack"] for r in rows))))
