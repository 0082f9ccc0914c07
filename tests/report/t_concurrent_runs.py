"""issue 21 point 3, the user's literal way: two concurrent runs of one
script sharing one ring (`perun monitor victim.py` and `py-spy record --
python victim.py`, both under libanchor, the same ANCHOR_FILE).  perun's
file belongs to one of them; the phase table must count that run's phases
only (before: both runs', 2x the steps) and say that the ring holds
another run, which a py-spy profile of it observed instead of perun's
process.  Real perun (emulated sensor), real py-spy, real Python.

The functions path, twice:
  * 40 steps (2 s): the run under py-spy ends before perun's first sample
    (perun's own start-up takes ~6 s here): `functions` stops with a line
    that says so and names both spans (before: "no sample overlaps
    perun's span ... files from different runs?"), and `report` writes
    every other output and says why functions.csv is left out (before: the
    whole report failed);
  * 240 steps (12 s): the runs overlap; `functions` and `report` place the
    samples on the profiled process's own phases (>= 90 % of the samples
    at the forward / step sites inside that phase of that pid) and say in
    words that the profile and the energy file observed different
    processes, what the joules are, and how much of perun's span the
    profile covers."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from workflow_lib import PYTHON, TMP, anchorpost, check, dump, env, need, pyspy, ranges_of, record, rows, skip  # noqa: E402

VICTIM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "victims", "workflow_victim.py")
STEPS = 40
LONG_STEPS = 240


def concurrent(spy, tag, steps):
    """Both runs at once on one ring; (ring, profile, perun's hdf5, pid
    of perun's run)."""
    ring = os.path.join(TMP, tag + ".ring")
    if os.path.exists(ring):
        os.remove(ring)
    prof = os.path.join(TMP, tag + ".speedscope.json")
    # the second run: the script under py-spy, its process not perun's
    sp = subprocess.Popen([spy, "record", "--idle", "--rate", "100", "--format", "speedscope", "-o", prof, "--",
                           PYTHON, VICTIM, str(steps)], env=env(ring), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    rc, perun_dir, pid = record(os.path.join(TMP, tag), VICTIM, (str(steps),), ring=ring)
    _, err = sp.communicate(timeout=300)
    check(rc == 0, "perun run: exit %d" % rc)
    if sp.returncode != 0 and ("ermission" in err or "ptrace" in err.lower()):
        skip("py-spy cannot attach here (needs ptrace)")
    check(sp.returncode == 0 and os.path.exists(prof), "py-spy run failed: " + err[-500:])
    return ring, prof, os.path.join(perun_dir, "workflow_victim.hdf5"), pid


def main():
    need()
    spy = pyspy()
    if not spy:
        skip("py-spy is not installed")
    ring, prof, h5, pid = concurrent(spy, "conc", STEPS)
    out = os.path.join(TMP, "conc.phases.csv")
    p = anchorpost("phases", "--ring", ring, "--perun", h5, "-o", out)
    tab = p.stdout + p.stderr
    fwd = [r for r in rows(out) if r["phase"] == "forward" and r["row"] == "phase"]
    check(fwd, "no forward row:\n" + tab)
    counts = sorted({int(r["count"]) for r in fwd})
    check(counts == [STEPS], "forward counted %s times for %d steps of perun's run (both runs' phases "
                             "counted?):\n%s" % (counts, STEPS, tab))
    check(all(r["scope"] == str(pid) for r in fwd), "scope is not perun's run (pid %d): %s" %
          (pid, sorted({r["scope"] for r in fwd})))
    check("other run(s) of phases that perun did not start" in tab and "observed a different process" in tab,
          "the table does not say that the ring holds another run:\n" + tab)
    print("ok: %d forward for %d steps, scope pid %d, the other run named in the table" % (counts[0], STEPS, pid))

    # functions/report when the profiled run ended before perun's span
    f = anchorpost("functions", "--ring", ring, "--perun", h5, "--profile", prof, "-o",
                   os.path.join(TMP, "conc.functions.csv"), rc=None)
    check(f.returncode == 1 and "ended before perun's first sample" in f.stderr and "perun measured" in f.stderr,
          "functions on a profile that ended before perun's span: exit %d: %s" % (f.returncode, f.stderr[-800:]))
    rep = os.path.join(TMP, "conc.report")
    r = anchorpost("report", "--ring", ring, "--perun", h5, "--profile", prof, "-o", rep)
    check(os.path.exists(os.path.join(rep, "phases.csv")) and not os.path.exists(os.path.join(rep, "functions.csv")),
          "report: phases.csv written, functions.csv left out: %s" % sorted(os.listdir(rep)))
    check("functions.csv and energy.speedscope.json left out" in r.stderr, "report does not say why:\n" + r.stderr[-800:])
    print("ok: profile ended before perun's span: functions says so, report leaves functions.csv out with the reason")

    # the runs overlap: functions and report place on the profiled run's phases
    ring, prof, h5, pid = concurrent(spy, "conc2", LONG_STEPS)
    fcsv, scsv = os.path.join(TMP, "conc2.functions.csv"), os.path.join(TMP, "conc2.fsamples.csv")
    f = anchorpost("functions", "--ring", ring, "--perun", h5, "--profile", prof, "-o", fcsv)
    side = open(fcsv + ".alignment.txt").read()
    for where, text in (("stderr", f.stderr), ("alignment.txt", side)):
        check("observed a different process" in text or "the profile observed pid" in text, where + ": no note:\n" + text)
        check("both processes together" in text and "of perun's" in text, where + ": the note does not say what "
              "the joules are and how much of perun's span the profile covers:\n" + text)
    fn = rows(fcsv)
    check(any(r["function"] == "busy" and float(r["self_j"]) > 0 for r in fn), "functions.csv: busy got no joules")
    check(os.path.exists(os.path.join(TMP, "conc2.functions.phases.csv")), "no functions.phases.csv")
    # placement on the profiled run's own phases: the forward / step sites' samples
    anchorpost("samples", prof, "--ring", ring, "--stack-text", "-o", scsv)
    smp = rows(scsv)
    spid = int(max(set(r["pid"] for r in smp), key=[r["pid"] for r in smp].count))  # the profiled process
    check(spid != pid, "the profile observed perun's process %d: not two runs" % pid)
    ev = dump(ring)
    occ = {ph: ranges_of(ev, spid, ph) for ph in ("forward", "step")}
    check(len(occ["forward"]) == LONG_STEPS, "pid %d: %d forward ranges for %d steps" % (spid, len(occ["forward"]), LONG_STEPS))
    n = right = 0
    for r in smp:
        line = "workflow_victim.py:21)" in r["stack_text"] and "forward" or \
            "workflow_victim.py:24)" in r["stack_text"] and "step" or None
        if not line or r["pid"] != str(spid):
            continue
        t = float(r["at_s"])
        n += 1
        right += any(a <= t <= b for a, b in occ[line])
    check(n >= 100 and right >= 0.9 * n, "%d of %d forward/step-site samples inside their phase of pid %d" % (right, n, spid))
    rep = os.path.join(TMP, "conc2.report")
    r = anchorpost("report", "--ring", ring, "--perun", h5, "--profile", prof, "-o", rep)
    check(os.path.exists(os.path.join(rep, "functions.csv")), "report: no functions.csv: %s" % sorted(os.listdir(rep)))
    check("both processes together" in open(os.path.join(rep, "functions.csv.alignment.txt")).read(),
          "report's functions.csv.alignment.txt has no note")
    print("ok: overlapping runs: %d of %d site samples in pid %d's own phases, the note in functions' stderr, "
          "alignment.txt and report" % (right, n, spid))


main()
