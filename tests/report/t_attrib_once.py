"""The results stage attributes each (scope, phase, device group) once
(issue 27), the way a user reaches it: a real two-process script recorded
by `anchorpost record` (libanchor, real perun with its emulated sensor,
real py-spy), then `report RUNDIR`, `phases --by-process` and `functions`.

ANCHORPOST_DEBUG_ATTRIB=1 makes anchorpost print one line per attribution
pass of a sensor against a thread's timeline (model/attrib_count.h), with
how many times it ran.  Every line must say 1 time(s); each sensor of the
perun file must appear; report's timelines (scope "all", and the
processes py-spy sampled, for functions.phases.csv) must be among those of
`phases --by-process`, which shows both processes' threads, and its
phases.csv must hold the scopes "all", the parent's and the child's pids.  Before the results stage, report with a profile attributed the
parent's timeline twice (scope "all" for phases.csv, the parent's process
for functions.phases.csv: "2 time(s)").
"""
import csv
import glob
import os
import re
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ["ANCHOR_TEST_TMP"]
POST = os.path.join(BUILD, "anchorpost")
PY = os.environ.get("PYTHON", sys.executable)
LINE = re.compile(r"^anchorpost: debug: attributed (.+?) thread (\d+) sensor (\S+): (\d+) time\(s\)$")


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def passes(cmd, what):
    env = dict(os.environ, ANCHORPOST_DEBUG_ATTRIB="1")
    r = subprocess.run([POST] + cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        die("%s: exit %d: %s" % (what, r.returncode, r.stderr[-2000:]))
    got = [LINE.match(x) for x in r.stderr.splitlines() if x.startswith("anchorpost: debug: attributed")]
    if not got or not all(got):
        die("%s: no attribution lines, or lines of another form:\n%s" % (what, r.stderr[-2000:]))
    many = [m.group(0) for m in got if m.group(4) != "1"]
    if many:
        die("%s: attributed more than once:\n  %s" % (what, "\n  ".join(many)))
    return {(int(m.group(2)), m.group(3)) for m in got}


run = os.path.join(TMP, "run")
r = subprocess.run([POST, "record", "-o", run, "--rate", "200", "--sensor", "emulated", "--",
                    PY, os.path.join(ROOT, "tests", "victims", "two_procs_victim.py"), "10"],
                   capture_output=True, text=True, timeout=600)
if r.returncode:
    die("record: exit %d: %s" % (r.returncode, r.stderr[-2000:]))
ring = os.path.join(run, "run.ring")
perun = glob.glob(os.path.join(run, "perun", "*.hdf5"))[0]
profile = glob.glob(os.path.join(run, "profile.*.json"))[0]

# the perun file's power sensors (phases.csv's sensor names are groups;
# the hook names sensors: read them from the first report's lines)
rep = passes(["report", run, "-d", os.path.join(TMP, "rep")], "report RUNDIR")
sensors = {s for _, s in rep}
threads = {t for t, _ in rep}
if not sensors:
    die("report: no sensor attributed")
if not os.path.exists(os.path.join(TMP, "rep", "functions.phases.csv")):
    die("report wrote no functions.phases.csv (the profile's per-process phase powers)")

out = os.path.join(TMP, "byproc.csv")
bp = passes(["phases", "--ring", ring, "--perun", perun, "--by-process", "-o", out], "phases --by-process")
bp_threads = {t for t, _ in bp}
if len(bp_threads) < 2 or not threads <= bp_threads:
    die("phases --by-process: the parent's and the child's threads expected (report's %s among them), got %s"
        % (sorted(threads), sorted(bp_threads)))
if {s for _, s in bp} != sensors:
    die("phases --by-process: sensors %s, report's %s" % (sorted({s for _, s in bp}), sorted(sensors)))
with open(out) as f:
    scopes = {row["scope"] for row in csv.DictReader(f)}
if "all" not in scopes or len(scopes - {"all", "counters"}) != 2:
    die("phases --by-process: scopes all + two processes expected, got %s" % sorted(scopes))

fn = passes(["functions", "--ring", ring, "--perun", perun, "--profile", profile, "-o",
             os.path.join(TMP, "functions.csv")], "functions")
if not fn <= bp:
    die("functions: attributed timelines %s outside the processes' %s" % (sorted(fn), sorted(bp)))

print("ok: report, phases --by-process, functions each attributed every (timeline, sensor) once: "
      "%d sensor(s); report %d timeline(s), --by-process %d (scopes %s), functions %d"
      % (len(sensors), len(threads), len(bp_threads), ",".join(sorted(scopes)), len({t for t, _ in fn})))
