"""Phases without energy (issue 22 point 3): a real Python run with
`import anchor` and no perun at all leaves a ring and nothing else.

  * `anchorpost` alone in that directory prints the time table (count,
    total, mean, p50, p95 per phase, per process), writes phases.csv and
    says on stderr that no energy file was found and why one may be
    missing (no perun process in the ring; perun 1.0 writes nothing after
    sys.exit or Ctrl-C: `anchorpost record`); exit 0;
  * the numbers are the ring's: recomputed here from `anchorpost dump`
    (begin/end pairs, no anchorpost code), count exact, times to 1 us;
  * `phases --ring R` gives the same rows, `phases --ring R --occurrences
    -o F` one row per occurrence on the run's time base (t_s from the
    ring's first record, as samples.csv and perun.csv) and no energy
    columns, energy_note "no perun file";
  * `report DIR` writes phases.csv, occurrences.csv, phases.svg and
    trace.json and lists what needs perun as not written;
  * two rings (one per rank) without perun: the ranks' times, and the note.
The old `anchorpost` said "no run here" (exit 2) and `phases` required
--perun.
"""
import csv
import os
import statistics
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
PYTHON = os.environ.get("PYTHON") or sys.executable
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
AP = os.path.join(BUILD, "anchorpost")
fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


SCRIPT = r'''
import os, threading, time, anchor
def helper():
    for i in range(3):
        with anchor.phase("load"):
            time.sleep(0.02)
t = threading.Thread(target=helper)
t.start()
for i in range(6):
    with anchor.phase("step"):
        with anchor.phase("forward"):
            time.sleep(0.004 * (i + 1))
        time.sleep(0.003)
t.join()
pid = os.fork()
if pid == 0:
    with anchor.phase("eval"):
        time.sleep(0.03)
    os._exit(0)
os.waitpid(pid, 0)
'''


def ap(*args, cwd=None):
    return subprocess.run([AP, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def quantile(v, q):
    """Linear interpolation between order statistics (numpy's default)."""
    v = sorted(v)
    x = q * (len(v) - 1)
    i = int(x)
    return v[i] if i + 1 >= len(v) else v[i] + (v[i + 1] - v[i]) * (x - i)


def main():
    if subprocess.run([PYTHON, "-c", "import anchor"], capture_output=True,
                      env=dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))).returncode:
        print("skip: the anchor module is not built (make)")
        return 77
    run = os.path.join(TMP, "run")
    os.makedirs(run, exist_ok=True)
    for f in os.listdir(run):
        os.unlink(os.path.join(run, f)) if os.path.isfile(os.path.join(run, f)) else None
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"), ANCHOR_FILE=os.path.join(run, "run.ring"))
    for k in ("ANCHOR_AUTO", "LD_PRELOAD"):
        env.pop(k, None)
    subprocess.run([PYTHON, "-c", SCRIPT], env=env, check=True, cwd=run, timeout=60)

    # The truth from the ring's own dump: begin/end pairs per (pid, tid, name).
    dump = rows_of(ap("dump", os.path.join(run, "run.ring")).stdout)
    base = int(dump[0]["mono_ns"])
    open_, occ = {}, []
    for e in dump:
        key = (e["pid"], e["tid"], e["name"])
        if e["kind"] == "begin":
            open_.setdefault(key, []).append(int(e["mono_ns"]))
        elif e["kind"] == "end" and open_.get(key):
            t0 = open_[key].pop()
            occ.append((e["pid"], e["tid"], e["name"], (t0 - base) / 1e9, (int(e["mono_ns"]) - base) / 1e9))
    pids = sorted({o[0] for o in occ})
    check(len(pids) == 2 and {o[2] for o in occ} == {"load", "step", "forward", "eval"},
          f"the run left 4 phases in 2 processes: {sorted({(o[0], o[2]) for o in occ})}")

    # 1. anchorpost alone in the run directory.
    p = ap(cwd=run)
    check(p.returncode == 0, f"anchorpost alone: exit {p.returncode} (the old one said 'no run here', 2): {p.stderr[-300:]}")
    check("p50_ms" in p.stdout and "p95_ms" in p.stdout and all(f"\n{n} " in p.stdout for n in ("step", "forward", "load", "eval")),
          "the time table with p50/p95 and every phase on stdout")
    check(f"scope {pids[0]}" in p.stdout and f"scope {pids[1]}" in p.stdout, "one block per process")
    err = p.stderr
    check("no energy" in err and "no perun file" in err, "stderr says no energy file was found")
    check("no `perun monitor` process" in err and "sys.exit" in err and "anchorpost record" in err,
          "and why: no perun process in the ring; perun 1.0 writes nothing after sys.exit/Ctrl-C; use record")
    ph = rows(os.path.join(run, "phases.csv"))
    for scope in ["all"] + pids:
        for name in ("load", "step", "forward", "eval"):
            mine = [o[4] - o[3] for o in occ if o[2] == name and scope in ("all", o[0])]
            got = [r for r in ph if r["scope"] == scope and r["phase"] == name]
            if not mine:
                check(not got, f"scope {scope}: no row for {name}, which it never ran")
                continue
            check(len(got) == 1, f"scope {scope}: one row for {name}")
            if not got:
                continue
            r = got[0]
            want = (len(mine), sum(mine), 1e3 * statistics.mean(mine), 1e3 * quantile(mine, 0.5),
                    1e3 * quantile(mine, 0.95))
            have = (int(r["count"]), float(r["total_s"]), float(r["mean_ms"]), float(r["p50_ms"]), float(r["p95_ms"]))
            check(have[0] == want[0] and abs(have[1] - want[1]) < 1e-6 and all(abs(a - b) < 1e-3 for a, b in zip(have[2:], want[2:])),
                  f"scope {scope} {name}: count/total/mean/p50/p95 {have} = the ring's {tuple(round(x, 6) for x in want)}")
            check(r["energy_j"] == "" and r["method"] == "no-energy-file", f"scope {scope} {name}: no joules, method no-energy-file")

    # 2. phases --ring alone, and --occurrences.
    p = ap("phases", "--ring", os.path.join(run, "run.ring"), "-o", os.path.join(TMP, "ph.csv"))
    check(p.returncode == 0 and rows(os.path.join(TMP, "ph.csv")) == ph,
          f"phases --ring without --perun: the same phases.csv (exit {p.returncode}: {p.stderr[-200:]})")
    occ_csv = os.path.join(TMP, "occ.csv")
    p = ap("phases", "--ring", os.path.join(run, "run.ring"), "--occurrences", "-o", occ_csv)
    check(p.returncode == 0, f"phases --occurrences: exit {p.returncode}: {p.stderr[-200:]}")
    oc = rows(occ_csv) if os.path.exists(occ_csv) else []
    check(len(oc) == len(occ), f"occurrences.csv: one row per occurrence ({len(oc)} vs {len(occ)})")
    check(oc and not any(k.endswith("_energy_j") for k in oc[0]) and all(r["energy_note"] == "no perun file" for r in oc),
          "no energy columns, energy_note 'no perun file'")
    found = 0
    for o in occ:
        m = [r for r in oc if r["pid"] == o[0] and r["tid"] == o[1] and r["phase"] == o[2]
             and abs(float(r["start_t_s"]) - o[3]) < 1e-6 and abs(float(r["end_t_s"]) - o[4]) < 1e-6]
        found += len(m) == 1
    check(found == len(occ), f"every occurrence's start and end on the ring's time base ({found} of {len(occ)})")
    starts = [float(r["start_t_s"]) for r in oc]
    check(starts == sorted(starts), "rows sorted by start")
    check(all(r["start_unix_s"] and float(r["end_unix_s"]) - float(r["start_unix_s"]) - float(r["duration_s"]) < 1e-6 for r in oc),
          "unix_s given, end - start = duration")

    # 3. report DIR.
    p = ap("report", run)
    rep = os.path.join(run, "report")
    have = sorted(os.listdir(rep)) if os.path.isdir(rep) else []
    check(p.returncode == 0 and {"phases.csv", "occurrences.csv", "phases.svg", "phases.png", "trace.json"} <= set(have),
          f"report DIR: exit {p.returncode}, files {have}: {p.stderr[-300:]}")
    check("not written without a perun file: perun.csv" in p.stdout, "report lists what needs perun as not written")
    check(os.path.exists(os.path.join(rep, "occurrences.csv")) and rows(os.path.join(rep, "occurrences.csv")) == oc,
          "report's occurrences.csv is phases --occurrences'")

    # 4. A distributed run without perun: one ring per rank.
    dist = os.path.join(TMP, "dist")
    os.makedirs(dist, exist_ok=True)
    for r in (0, 1):
        e = dict(env, ANCHOR_FILE=os.path.join(dist, f"run-{r}.ring"), RANK=str(r))
        subprocess.run([PYTHON, "-c", "import time, anchor\nfor i in range(3):\n    with anchor.phase('step'):\n"
                        "        time.sleep(0.02)\n"], env=e, check=True, cwd=dist, timeout=60)
    p = ap(cwd=dist)
    check(p.returncode == 0 and "rank" in p.stdout and "\nstep " in p.stdout and "no energy" in p.stderr
          and "no perun file" in p.stderr, f"two rings, no perun: the ranks' times and the note (exit {p.returncode})")
    print(f"{len(fails)} check(s) failed" if fails else "PASS")
    return 1 if fails else 0


def rows_of(text):
    return list(csv.DictReader(text.splitlines()))


if __name__ == "__main__":
    sys.exit(main())
