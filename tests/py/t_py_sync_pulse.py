"""anchor.sync_pulse(): three ~20 ms BEGIN/END bursts with ~20 ms gaps,
about 100 ms in all (upper bounds are loose: other engineers load the
2-core machine, and a preempted sleep only gets longer), and py-spy samples land in _anchor_sync_pulse_busy
during the bursts (the frame post-processing looks for)."""
import json
import os
import shutil
import subprocess

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYTHON, TMP, base_env, check, dump, need_build, ranges, run_py  # noqa: E402

SCRIPT = r'''
import json, os, sys, time
t0 = time.perf_counter()
import anchor
time.sleep(0.3)   # let py-spy attach
costs = [anchor.sync_pulse() for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3)]
print(json.dumps(costs))
if os.environ.get("PULSE_RUN_S_OUT"):  # how long py-spy had to sample this script
    with open(os.environ["PULSE_RUN_S_OUT"], "w") as f:
        f.write("%.6f" % (time.perf_counter() - t0))
'''


def main():
    need_build()
    ring = os.path.join(TMP, "pulse.ring")
    # Ten pulses: on a machine this loaded one can be stretched by
    # preemption; the check needs one that came out as designed.
    p = run_py(SCRIPT, ring, False, args=("10",))
    costs = json.loads(p.stdout)
    check(all(c >= 99.0 for c in costs), "pulse shorter than designed: %r ms" % costs)
    bursts = ranges(dump(ring), "anchor.sync_pulse")
    check(len(bursts) == 30, "%d bursts, want 30" % len(bursts))
    clean = 0
    for i in range(0, 30, 3):
        durs = [(e["mono_ns"] - b["mono_ns"]) / 1e6 for b, e in bursts[i:i + 3]]
        gaps = [(bursts[i + k + 1][0]["mono_ns"] - bursts[i + k][1]["mono_ns"]) / 1e6 for k in range(2)]
        # Never shorter than designed; longer only when the machine
        # preempted us (other engineers share its 2 cores), so at least one
        # of the three patterns must come out as designed.
        check(all(d >= 19.9 for d in durs) and all(g >= 19.9 for g in gaps),
              "pattern shorter than designed: bursts %r, gaps %r ms" % (durs, gaps))
        clean += all(d < 30 for d in durs) and all(g < 35 for g in gaps)
    check(clean >= 1, "none of 10 patterns came out as designed (20 ms bursts, 20 ms gaps)")
    print("ok: %d of 10 patterns within 10 ms of the design" % clean)
    check(min(costs) < 130.0, "no pulse near its nominal 100 ms: %r" % costs)
    print("ok: pulse costs %s ms" % ", ".join("%.1f" % c for c in costs))

    # ANCHOR_SYNC_PULSE=1: one start + one exit pattern per process tree,
    # not one per child process.
    tree = os.path.join(TMP, "tree.ring")
    code = ("import os, subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'import anchor; anchor.mark(\"child\")'], check=True)\n"
            "print(os.getpid())\n")
    q = run_py(code, tree, False, extra={"ANCHOR_SYNC_PULSE": "1"})
    rows = dump(tree)
    pids = {r["pid"] for r in rows if r["name"] == "anchor.sync_pulse"}
    child = [r["pid"] for r in rows if r["name"] == "child"]
    check(len(ranges(rows, "anchor.sync_pulse")) == 6 and pids == {int(q.stdout)} and child and child[0] not in pids,
          "pulse per tree: %d bursts from pids %r" % (len(ranges(rows, "anchor.sync_pulse")), pids))
    print("ok: ANCHOR_SYNC_PULSE=1 pulses once per process tree (start + exit)")

    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(PYTHON), "py-spy")
    if not os.path.exists(spy):
        print("py-spy not installed; skipped the sampling half")
        return
    script = os.path.join(TMP, "pulse_spy.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    raw = os.path.join(TMP, "pulse.raw")
    run_s_out = os.path.join(TMP, "pulse.run_s")
    env = dict(base_env(ring + ".spy", False), PULSE_RUN_S_OUT=run_s_out)
    # --idle: the count then covers the whole script (its sleep too), as kept below needs
    q = subprocess.run([spy, "record", "--rate", "500", "--idle", "--format", "raw", "-o", raw, "--", PYTHON,
                        script], env=env, capture_output=True, text=True, timeout=60)
    if q.returncode != 0 and "Permission" in q.stderr:
        print("py-spy cannot trace here (%s); skipped the sampling half" % q.stderr.strip()[-200:])
        return
    check(q.returncode == 0, "py-spy failed: %s" % q.stderr[-2000:])
    with open(run_s_out) as f:
        run_s = float(f.read())
    busy = 0
    total = 0
    with open(raw) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            total += int(count)
            if "_anchor_sync_pulse_busy" in stack:
                busy += int(count)
    # 9 bursts x 20 ms at 500 Hz ~ 90 samples; allow for py-spy's jitter.
    # py-spy falls behind on a loaded machine (its sampler is not
    # scheduled): the raw profile's count against the script's own run
    # time (py-spy sampled at least that long) says how much it kept, and
    # the expectation shrinks with it.  That is py-spy's rate, not anchor's
    # pulse; the pulse must still be seen.  (A stall py-spy made up for by
    # catching up later is not visible in a raw profile.)
    kept = min(1.0, total / (run_s * 500.0)) if run_s > 0 else 1.0
    need = max(3, int(30 * kept)) if kept < 0.9 else 30
    note = "" if need == 30 else "; py-spy kept %.0f %% of its 500 Hz over the script's %.2f s: want %d" % (
        100 * kept, run_s, need)
    check(busy >= need, "py-spy saw _anchor_sync_pulse_busy in %d of %d samples%s" % (busy, total, note))
    print("ok: py-spy sampled _anchor_sync_pulse_busy %d times (of %d)%s" % (busy, total, note))


main()
