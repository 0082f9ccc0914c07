"""issue 21 point 3, the user's literal way: two concurrent runs of one
script sharing one ring (`perun monitor victim.py` and `py-spy record --
python victim.py`, both under libanchor, the same ANCHOR_FILE).  perun's
file belongs to one of them; the phase table must count that run's phases
only (before: both runs', 2x the steps) and say that the ring holds
another run, which a py-spy profile of it observed instead of perun's
process.  Real perun (emulated sensor), real py-spy, real Python."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from workflow_lib import PYTHON, TMP, anchorpost, check, env, need, pyspy, record, rows, skip  # noqa: E402

VICTIM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "victims", "workflow_victim.py")
STEPS = 40


def main():
    need()
    spy = pyspy()
    if not spy:
        skip("py-spy is not installed")
    ring = os.path.join(TMP, "conc.ring")
    if os.path.exists(ring):
        os.remove(ring)
    prof = os.path.join(TMP, "conc.speedscope.json")
    # the second run: the script under py-spy, its process not perun's
    sp = subprocess.Popen([spy, "record", "--idle", "--rate", "100", "--format", "speedscope", "-o", prof, "--",
                           PYTHON, VICTIM, str(STEPS)], env=env(ring), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    rc, perun_dir, pid = record(os.path.join(TMP, "conc"), VICTIM, (str(STEPS),), ring=ring)
    _, err = sp.communicate(timeout=300)
    check(rc == 0, "perun run: exit %d" % rc)
    if sp.returncode != 0 and ("ermission" in err or "ptrace" in err.lower()):
        skip("py-spy cannot attach here (needs ptrace)")
    check(sp.returncode == 0 and os.path.exists(prof), "py-spy run failed: " + err[-500:])
    h5 = os.path.join(perun_dir, "workflow_victim.hdf5")
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


main()
