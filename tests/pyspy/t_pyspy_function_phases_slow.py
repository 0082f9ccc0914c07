"""issue 21: functions.phases.csv's intervals hold the truth where py-spy's
samples cannot be placed.  A real recording of the `generic` style (one
`with anchor.phase(name)` helper called from one line for every phase, so
speedscope's stacks say "in a phase", not which: CANNOT PLACE), as the user
runs it: `py-spy record --idle --format speedscope -- perun monitor
victim.py`, everything under libanchor, real perun over the emulated RAPL
sensor in its phase model: each phase-only function (data_work, fwd_work,
bwd_work, opt_work) publishes its phase while it runs and the sensor draws
a known, different power per phase (tests/victims/placement_victim.py), so
the sensor's ledger (truth.json) holds each function's exact joules.

Checks, per phase-only function F of phase q:
  * the row (F, q) of functions.phases.csv has lo_j <= truth <= hi_j;
  * every other phase's row of F has lo_j == 0 (F never ran there) or is
    absent;
  * functions.csv still sums (self_j) to the attributed energy.
The same victim in the helper_class style (placed: 100 % in §15) is the
control: the truth inside every interval there too, decided, and other
phases' lo_j under 5 % of F's truth (only samples at a phase's edge).
Before this file existed functions.csv gave each function one top_phase
and no interval (the file is missing: the test fails)."""
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from workflow_lib import ANCHORPOST, BUILD, EMUL, PYTHON, check, fail, need, pyspy, skip  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VICTIM = os.path.join(ROOT, "tests", "victims", "placement_victim.py")
FN = {"data": "data_work", "fwd": "fwd_work", "bwd": "bwd_work", "opt": "opt_work"}
# pkg W, dram W per phase (the victim's POWER_PHASES order): different
# enough that a sample counted at another phase's power would miss
POWER = {"data": (12.0, 1.0), "fwd": (40.0, 3.0), "bwd": (70.0, 5.0), "opt": (25.0, 2.0), "gap": (6.0, 0.5)}
SECONDS = "4"


def prerequisites():
    need()
    spy = pyspy()
    if not spy:
        skip("py-spy is not installed")
    return spy


def run(spy, style, cannot):
    out = tempfile.mkdtemp(prefix="anchor-fnph-%s-" % style, dir=os.environ.get("ANCHOR_TEST_TMP"))
    p = lambda *x: os.path.join(out, *x)  # noqa: E731
    spec = {"phases": [{"name": n, "pkg_w": POWER[n][0], "dram_w": POWER[n][1]}
                       for n in ("data", "fwd", "bwd", "opt", "gap")]}
    with open(p("spec.json"), "w") as f:
        json.dump(spec, f)
    emul = dict(os.environ, PYTHONPATH=EMUL)
    subprocess.run([PYTHON, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--init"], env=emul, check=True)
    sys.path.insert(0, EMUL)
    from anchor_emul import phasefile
    phasefile.create(p("phase.mmap"))
    up = subprocess.Popen([PYTHON, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--model", "phase",
                           "--spec", p("spec.json"), "--phase-file", p("phase.mmap"), "--truth", p("truth.json"),
                           "--ready-file", p("ready")], env=emul)
    t0 = time.monotonic()
    while not os.path.exists(p("ready")):
        check(up.poll() is None and time.monotonic() - t0 < 30, "emulated sensor's updater did not start")
        time.sleep(0.01)
    env = dict(os.environ, ANCHOR_FILE=p("run.ring"), LD_PRELOAD=os.path.join(BUILD, "libanchor.so"),
               PYTHONPATH=os.pathsep.join([os.path.join(BUILD, "python"), EMUL]),
               ANCHOR_PLACEMENT_PHASE_FILE=p("phase.mmap"))
    for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE"):
        env.pop(k, None)
    prof = p("profile.json")
    cmd = [spy, "record", "--idle", "--format", "speedscope", "-r", "100", "-o", prof, "--",
           PYTHON, "-m", "anchor_emul.perun", "--powercap", p("powercap"), "monitor", "--sampling_period", "0.1",
           "--data_out", p("perun"), VICTIM, style, SECONDS]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=out)
    up.send_signal(signal.SIGTERM)
    up.wait(timeout=30)
    if r.returncode and ("ermission" in r.stderr or "ptrace" in r.stderr.lower()):
        skip("py-spy cannot attach here")
    check(r.returncode == 0 and os.path.exists(prof), "py-spy record: %s" % r.stderr[-800:])
    truth = json.load(open(p("truth.json")))["phases"]

    fcsv = p("functions.csv")
    a = subprocess.run([ANCHORPOST, "functions", "--ring", p("run.ring"), "--perun", p("perun", "placement_victim.hdf5"),
                        "--profile", prof, "-o", fcsv], capture_output=True, text=True, timeout=300)
    check(a.returncode == 0, "anchorpost functions: " + a.stderr[-1500:])
    side = open(fcsv + ".alignment.txt").read()
    check(("CANNOT PLACE" in side) == cannot, "%s: %s, expected %s:\n%s" % (
        style, "CANNOT PLACE" if "CANNOT PLACE" in side else "placed", "CANNOT PLACE" if cannot else "placed", side))
    check(os.path.exists(p("functions.phases.csv")), "no functions.phases.csv beside functions.csv")
    check("by phase:" in side, "the alignment side file does not name the by-phase table:\n" + side)
    rows = list(csv.DictReader(open(p("functions.phases.csv"))))
    by = {(r["function"], r["phase"]): r for r in rows if r["file"].endswith("placement_victim.py")}
    for q, fn in FN.items():
        tj = sum(truth[q]["energy_j"].get(d, 0.0) for d in ("package", "dram"))
        r = by.get((fn, q))
        check(r, "no row for %s in %s: %s" % (fn, q, [k for k in by if k[0] == fn]))
        lo, hi = float(r["lo_j"]), float(r["hi_j"])
        print("%s: %s in %s: truth %.3f J, interval [%.3f, %.3f] J (placed %s J of %s samples, %s unplaced)" % (
            style, fn, q, tj, lo, hi, r["placed_j"], r["placed_samples"], r["unplaced_samples"]))
        check(lo <= tj <= hi, "%s in %s: truth %.3f J outside [%.3f, %.3f]" % (fn, q, tj, lo, hi))
        check(r["decided"] == ("0" if cannot else "1"), "%s: %s in %s: decided=%s" % (style, fn, q, r["decided"]))
        for (f2, q2), r2 in by.items():
            if f2 == fn and q2 != q and float(r2["lo_j"]) > (0 if cannot else 0.05 * tj):
                fail("%s: %s in %s: lo_j %s J, but it never ran there" % (style, fn, q2, r2["lo_j"]))
    fns = list(csv.DictReader(open(fcsv)))
    att = sum(float(l.split()[3]) for l in side.splitlines() if l.startswith("energy ") and "attributed" in l)
    self_sum = sum(float(x["self_j"]) for x in fns)
    check(abs(self_sum - att) <= 0.01 * att, "functions.csv self_j %.3f J vs attributed %.3f J" % (self_sum, att))
    print("ok: %s: every phase-only function's truth inside its phase's interval (%s)" % (
        style, "CANNOT PLACE" if cannot else "placed"))


def main():
    spy = prerequisites()
    for style, cannot in (("generic", True), ("helper_class", False)):
        run(spy, style, cannot)


main()
