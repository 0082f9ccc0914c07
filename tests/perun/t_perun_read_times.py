"""perun's sensor reads at their own times, not their round's stamp: real
perun 1.0 under `anchorpost record --sensor emulated` (emulated RAPL,
package and dram), the perun hook timing each energy read.

  * the ring holds, per energy sensor and none other, the hook's summary
    of its reads (python_hooks/anchor/_perun_hook.py): as many reads as
    stamps, the median delay no larger than the largest, and each read
    more than 0.5 ms off the median listed with its index and delay, no
    later than the next stamp;
  * `phases` says how long after its stamps perun read each sensor
    (median and max, within 0..50 ms here, and how many reads were off
    the median) and that the windows end at the reads; the lag line then
    speaks of the reads;
  * the joules stay perun's: phases.csv's (total) row equals the sum of
    perun.csv's windows (a window mean is re-divided by the read window's
    length, not taken over it);
  * --no-hook (stamps not used) prints neither line.
Emulated sensor, not a measurement.
"""
import csv
import io
import os
import re
import shutil
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
    return cond


def main():
    if subprocess.run([PYTHON, "-c", "import perun"], capture_output=True).returncode:
        print("skip: perun is not installed")
        return 77
    run = os.path.join(TMP, "reads")
    shutil.rmtree(run, ignore_errors=True)
    r = subprocess.run([AP, "record", "-o", run, "--sensor", "emulated", "--", PYTHON,
                        os.path.join(ROOT, "tests", "victims", "occurrences_victim.py"), "2"],
                       capture_output=True, text=True, timeout=600)
    if not check(r.returncode == 0, f"record: exit {r.returncode}: {r.stderr[-400:]}"):
        return 1
    ring = os.path.join(run, "run.ring")
    perun = [os.path.join(run, "perun", f) for f in os.listdir(os.path.join(run, "perun")) if f.endswith(".hdf5")][0]
    ev = list(csv.DictReader(io.StringIO(subprocess.run([AP, "dump", ring], capture_output=True, text=True).stdout)))
    stamps = [int(e["value"]) for e in ev if e["name"] == "perun.sample"]
    marks = {}
    for e in ev:
        if e["name"].startswith("perun.read"):
            kind, sid = e["name"].split(" ", 1)
            marks.setdefault(sid, {}).setdefault(kind, []).append(int(e["value"]))
    check(sorted(marks) == ["cpu_0_package-0", "ram_0_dram"],
          f"timed reads of the two energy sensors and of nothing else: {sorted(marks)}")
    for sid, m in sorted(marks.items()):
        n, p50, mx = (m.get(k, [None])[0] for k in ("perun.read.n", "perun.read.p50", "perun.read.max"))
        check(len(stamps) >= 20 and n == len(stamps) and p50 is not None and mx is not None and p50 <= mx,
              f"{sid}: {n} reads for {len(stamps)} stamps, median {p50} ns <= max {mx} ns")
        listed = [(v >> 40, v & ((1 << 40) - 1)) for v in m.get("perun.read", [])]
        ok = all(i < len(stamps) and abs(dl - p50) > 500000 and dl <= mx and
                 (i + 1 == len(stamps) or stamps[i] + dl < stamps[i + 1]) for i, dl in listed)
        check(ok, f"{sid}: {len(listed)} read(s) off the median listed, each in range and before the next stamp")

    phc = os.path.join(TMP, "phases.csv")
    p = subprocess.run([AP, "phases", "--ring", ring, "--perun", perun, "-o", phc], capture_output=True, text=True)
    check(p.returncode == 0, f"phases: exit {p.returncode}: {p.stderr[-300:]}")
    line = [x for x in p.stdout.splitlines() if x.startswith("perun read its sensors this long after its stamps")]
    check(line and "each window now ends at its read" in line[0], f"the reads line: {line}")
    for sid in ("cpu_0_package-0", "ram_0_dram"):
        m = re.search(re.escape(sid) + r" ([0-9.]+) ms \(max ([0-9.]+); ([0-9]+) off it by > 0.5 ms\)",
                      line[0] if line else "")
        check(m and 0 <= float(m.group(1)) <= float(m.group(2)) <= 50 and
              int(m.group(3)) == len(marks.get(sid, {}).get("perun.read", [])),
              f"{sid}: median <= max within 0..50 ms, the listed reads counted: {m.group(0) if m else None}")
    lag = [x for x in p.stdout.splitlines() if x.startswith("perun's readings lag")]
    check(lag and lag[0].startswith("perun's readings lag its reads by"), f"the lag line speaks of the reads: {lag[:1]}")

    pc = os.path.join(TMP, "perun.csv")
    q = subprocess.run([AP, "perun", perun, "-o", pc], capture_output=True, text=True)
    check(q.returncode == 0, f"perun -o: exit {q.returncode}: {q.stderr[-200:]}")
    with open(phc) as f:
        ph = list(csv.DictReader(f))
    with open(pc) as f:
        pe = list(csv.DictReader(f))
    for g in ("cpu", "ram"):
        tot = [float(x["energy_j"]) for x in ph if x["scope"] == "all" and x["row"] == "total" and x["device_group"] == g]
        cnt = {}
        for x in pe:
            if x["device_group"] == g and x["metric"] == "energy_counter":
                cnt.setdefault(x["sensor"], []).append(float(x["value"]))
        win = sum(v[-1] - v[0] for v in cnt.values())
        check(tot and abs(tot[0] - win) <= 1e-6 * win,
              f"{g}: phases.csv's total {tot[0] if tot else None:.6f} J = perun's windows {win:.6f} J")

    p = subprocess.run([AP, "phases", "--ring", ring, "--perun", perun, "--no-hook"], capture_output=True, text=True)
    check(p.returncode == 0 and "perun read its sensors" not in p.stdout and "lag its" not in p.stdout,
          f"--no-hook: neither the reads nor the lag line (exit {p.returncode})")
    print(f"{len(fails)} check(s) failed" if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
