"""anchorpost perun on files the installed perun (1.0.x) writes right now.

Runs the real `perun monitor` (psutil sensors: this machine has no RAPL or
GPU) at --sampling_period 0.1 on a small app with regions:
  - --rounds 2 with every sensor (perun 1.0's disk/net bandwidth + counters),
  - a second invocation into the same file (two multiruns, --run selects),
  - mpirun -np 2 (skipped with a message when MPI cannot run here),
and checks each multirun row for row against `perun export FILE csv -i ID`,
the counters and regions against h5py, and --run errors.
"""

import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from perun_testlib import (FIXTURES, TMP, anchorpost, check, close, compare_with_export,
                           perun_cmd, read_csv)

APP = os.path.join(TMP, "toy_app.py")
shutil.copy(os.path.join(FIXTURES, "toy_app.py"), APP)
OUT = os.path.join(TMP, "perun_out")


def monitor(*opts, mpi=None, app=APP, timeout=150):
    cmd = perun_cmd() + ["monitor", "--sampling_period", "0.1", "--data_out", OUT, *opts, app]
    if mpi:
        cmd = ["mpirun", "-np", str(mpi), "--oversubscribe", "--allow-run-as-root"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=TMP)
    return p


p = monitor("--exclude-sensors", "none", "--rounds", "2")
check(p.returncode == 0, f"perun monitor --rounds 2 failed: {p.stderr[-2000:]}")
p = monitor()
check(p.returncode == 0, f"second perun monitor failed: {p.stderr[-2000:]}")
H5 = os.path.join(OUT, "toy_app.hdf5")

with h5py.File(H5, "r") as f:
    mr_ids = list(f["toy_app"]["nodes"].keys())
    versions = [f["toy_app"]["nodes"][m].attrs["perun_version"] for m in mr_ids]
    rounds = {m: list(f["toy_app"]["nodes"][m]["nodes"].keys()) for m in mr_ids}
check(len(mr_ids) == 2, f"expected two multiruns in {H5}, h5py sees {mr_ids}")
check(all(v.startswith("1.") for v in versions), f"perun versions {versions}")
multi = [m for m in mr_ids if rounds[m] == ["0", "1"]]
check(len(multi) == 1, f"one multirun should have rounds 0 and 1: {rounds}")
print(f"ok: perun {versions[0]} wrote {len(mr_ids)} multiruns; rounds {rounds}")

# 1. every multirun, row for row against perun export -i ID
for m in mr_ids:
    n = compare_with_export(H5, "fresh_" + m.replace(":", "_"), run_id=m)
    print(f"ok: multirun {m} (rounds {rounds[m]}): {n} rows equal perun export -i")

# 2. all multiruns at once; the psutil note; counters and sampling
out = os.path.join(TMP, "all.csv")
p = anchorpost("perun", H5, "-o", out)
with h5py.File(H5, "r") as f:
    npower = []
    f.visititems(lambda n, o: npower.append(n) if n.endswith("raw_data/values")
                 and o.attrs["unit"] == "W" else None)
_, erows = read_csv(out + ".energy.csv")
if npower:  # a machine where perun can read RAPL or a GPU
    check(len(erows) == len(npower) and p.stderr == "",
          f"{len(npower)} power sensors but {len(erows)} energy rows, stderr {p.stderr!r}")
    print(f"note: this machine has {len(npower)} power sensors; energies listed")
else:
    check("holds no power sensors" in p.stderr and len(p.stderr.strip().splitlines()) == 1
          and erows == [], f"psutil-only note: {p.stderr!r}")
_, rows = read_csv(out)
check({r[0] for r in rows} == set(mr_ids), "not every multirun in the full CSV")
check({r[1] for r in rows if r[0] == multi[0]} == {"0", "1"}, "rounds missing")
counters = [r for r in rows if r[5] == "bytes_counter"]
bw = [r for r in rows if r[6] == "B/s"]
check(counters and bw, "perun 1.0 disk/net sensors: expected B/s values and B counters")
with h5py.File(H5, "r") as f:
    host = f["toy_app"]["nodes"][multi[0]]["nodes"]["0"]["nodes"]
    (hname,) = host.keys()
    ncheck = 0
    for g in ("disk", "net"):
        for sname, s in host[hname]["nodes"][g]["nodes"].items():
            a = s["raw_data"]["alt_values"][:].astype(np.float64)
            got = [float(r[8]) for r in counters
                   if r[0] == multi[0] and r[1] == "0" and r[3] == g and r[4] == sname]
            check(len(got) == len(a) and all(close(x, y, 1e-15) for x, y in zip(got, a)),
                  f"{g}/{sname}: counter rows differ from h5py alt_values")
            ncheck += 1
t = [float(r[7]) for r in rows if r[0] == multi[0] and r[1] == "0" and r[4] == "RAM_USAGE"]
dt = np.diff(t)
check(t[0] == 0 and (dt > 0).all() and 0.08 < np.median(dt) < 0.5,
      f"RAM_USAGE timesteps should start at 0 and step ~0.1 s: {t[:5]}")
print(f"ok: full CSV has both multiruns, rounds 0/1, {ncheck} disk/net counters equal h5py "
      f"alt_values; {len(t)} samples, median period {np.median(dt):.4f} s")

# 3. regions: toy_app calls busy and sleepy 3 times per round
out = os.path.join(TMP, "regions.csv")
anchorpost("perun", H5, "--regions", "--run", multi[0], "-o", out)
_, rrows = read_csv(out)
for rnd in ("0", "1"):
    for reg in ("busy", "sleepy"):
        calls = [r for r in rrows if r[1] == rnd and r[2] == reg]
        check(len(calls) == 3, f"round {rnd} region {reg}: {len(calls)} calls, expected 3")
        for r in calls:
            d = float(r[5]) - float(r[4])
            want = 0.4 if reg == "busy" else 0.3
            # at least the app's duration (float32 rounding aside); longer
            # only when the machine is busy
            check(want - 0.005 < d < want + 1.0, f"{reg} call lasted {d:.3f} s, toy_app runs {want} s")
print(f"ok: --regions --run: {len(rrows)} calls, busy >= 0.4 s / sleepy >= 0.3 s per call in both rounds")

# 4. --run with an unknown id
p = anchorpost("perun", H5, "--run", "nope", "-o", os.path.join(TMP, "x.csv"), check_rc=False)
check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "nope" in p.stderr
      and mr_ids[0] in p.stderr, f"--run nope: rc {p.returncode} {p.stderr!r}")
check(not os.path.exists(os.path.join(TMP, "x.csv")), "--run nope left an output file")
print("ok: --run with an unknown id: one line naming the ids in the file, exit 1, no output")

# 5. MPI, two ranks
if not shutil.which("mpirun"):
    print("SKIP part: no mpirun here, the 2-rank MPI check did not run")
else:
    mpi_app = os.path.join(TMP, "toy_mpi.py")
    shutil.copy(os.path.join(FIXTURES, "toy_mpi.py"), mpi_app)
    p = monitor(mpi=2, app=mpi_app)
    h5 = os.path.join(OUT, "toy_mpi.hdf5")
    if p.returncode != 0 or not os.path.exists(h5):
        print(f"SKIP part: mpirun -np 2 perun monitor failed here (exit {p.returncode}): "
              f"{p.stderr.strip().splitlines()[-1:]}")
    else:
        n = compare_with_export(h5, "mpi")
        with h5py.File(h5, "r") as f:
            (m,) = f["toy_mpi"]["nodes"].values()
            hosts = m["nodes"]["0"]["nodes"]
            ranks = {h: hosts[h].attrs["mpi_ranks"] for h in hosts}
        check(sorted(ranks.values()) == ["[0, 1]"], f"one host with ranks [0, 1] expected: {ranks}")
        out = os.path.join(TMP, "mpi_regions.csv")
        anchorpost("perun", h5, "--regions", "-o", out)
        _, rrows = read_csv(out)
        calls = {rk: sum(1 for r in rrows if r[3] == rk) for rk in {r[3] for r in rrows}}
        check(calls == {"0": 2, "1": 3}, f"toy_mpi: rank 0 calls work twice, rank 1 three times: {calls}")
        print(f"ok: mpirun -np 2: {n} rows equal perun export; host ranks {ranks}; region calls {calls}")
print("PASS")
