"""anchorpost perun on the perun fixtures: tests/data/perun (perun 1.0.0, made
by tests/data/perun/make.sh) and, when present, ../shared/fixtures/perun
(perun 0.9.1).

Checks, for every fixture, that the long CSV agrees row for row with the
real `perun export FILE csv` (installed perun, value * magnitude), that the
psutil fixture also matches the export the writing perun itself wrote, and, on the
emulated RAPL + NVML file, that power values, mag scaling (NVML mW -> W),
alt_values counters and perun's energies equal what h5py reads, and that
--regions equals the raw region data.
"""

import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from perun_testlib import (COLS, TMP, anchorpost, check, close, compare_with_export, copy_fixture,
                           fixture_sets, layout, read_csv)

FIXTURES = ["psutil_only_regions.hdf5", "emulated_rapl_nvml.hdf5", "mpi_2ranks.hdf5"]


def check_set(SET, SRC):
    D = TMP
    os.makedirs(D, exist_ok=True)
    # 1. row-for-row against perun export, on copies (export writes beside its input)
    for name in FIXTURES:
        h5 = copy_fixture(name, D, SRC)
        n = compare_with_export(h5, name)
        print(f"ok: {SET} {name}: {n} rows equal perun export (value = raw * magnitude)")
    # 2. the export perun 0.9.1 wrote when the fixture was made
    h5 = copy_fixture("psutil_only_regions.hdf5", D, SRC)
    _, ours = read_csv(os.path.join(TMP, "psutil_only_regions.hdf5.csv"))  # left by step 1
    ours = [r for r in ours if not r[5].endswith("_counter")]
    _, old = read_csv(os.path.join(SRC, "psutil_only_regions.export.csv"))
    check(len(ours) == len(old), f"{SET}: perun's own export has {len(old)} rows, anchorpost {len(ours)}")
    # perun exported from memory, in sensor creation order; HDF5 (and we)
    # list sensors by name.  Compare per sensor, samples in order.
    def per_sensor(rows, key, t, v):
        d = {}
        for r in rows:
            d.setdefault(key(r), []).append((float(r[t]), v(r)))
        return d
    a_s = per_sensor(ours, lambda r: (r[1], r[2], r[3], r[4], r[6]), 7, lambda r: float(r[8]))
    b_s = per_sensor(old, lambda r: (r[1], r[2], r[3], r[4], r[5]), 7,
                     lambda r: float(r[8]) * float(r[6]))
    check(a_s.keys() == b_s.keys(), f"sensors differ: {sorted(a_s)} vs {sorted(b_s)}")
    for k in a_s:
        check(len(a_s[k]) == len(b_s[k]), f"{k}: sample counts differ")
        for (ta, va), (tb, vb) in zip(a_s[k], b_s[k]):
            check(np.float32(ta) == np.float32(tb) and close(va, vb, 2e-7), f"{k}: ({ta},{va}) vs ({tb},{vb})")
    print(f"ok: {SET}: psutil fixture: {len(ours)} rows equal the export perun wrote with it")
    # 3. psutil only: one clear line, no energies
    out = os.path.join(TMP, "psutil.csv")
    p = anchorpost("perun", h5, "-o", out)
    check("holds no power sensors" in p.stderr and "no energy can be computed" in p.stderr,
          f"psutil-only warning missing: {p.stderr!r}")
    check(len(p.stderr.strip().splitlines()) == 1, f"expected one stderr line, got {p.stderr!r}")
    _, erows = read_csv(out + ".energy.csv")
    check(erows == [], f"psutil-only file has energy rows {erows}")
    print(f"ok: {SET} psutil-only file: one-line 'no power sensors' note, empty energy table")
    # 4. emulated RAPL + NVML against h5py
    h5 = copy_fixture("emulated_rapl_nvml.hdf5", D, SRC)
    out = os.path.join(TMP, "rapl.csv")
    p = anchorpost("perun", h5, "-o", out)
    check(p.stderr == "", f"unexpected stderr {p.stderr!r}")
    _, rows = read_csv(out)
    _, erows = read_csv(out + ".energy.csv")
    series = {}
    for r in rows:
        series.setdefault((r[3], r[4], r[5]), []).append((float(r[7]), float(r[8]), r[6]))
    energy = {(r[3], r[4]): float(r[5]) for r in erows}

    f = h5py.File(h5, "r")
    _, _, hname = layout(h5)
    app = f["toy_app"]
    (mr_id, mr), = app["nodes"].items()
    host = mr["nodes"]["0"]["nodes"][hname]
    nsensors = npower = 0
    for gname, g in host["nodes"].items():
        for sname, s in g["nodes"].items():
            rd = s["raw_data"]
            t = rd["timesteps"][:].astype(np.float64)
            v = rd["values"][:].astype(np.float64) * rd["values"].attrs["mag"]
            unit = rd["values"].attrs["unit"]
            metric = {"W": "power", "%": "utilization", "Hz": "frequency", "B": "bytes"}[unit]
            got = series.get((gname, sname, metric))
            check(got is not None and len(got) == len(t), f"{gname}/{sname}: {metric} series missing")
            for (gt, gv, gu), wt, wv in zip(got, t, v):
                check(gu == unit and np.float32(gt) == np.float32(wt) and close(gv, wv, 2e-7),
                      f"{gname}/{sname}: ({gt},{gv},{gu}) vs h5py ({wt},{wv},{unit})")
            nsensors += 1
            if "alt_values" in rd:
                a = rd["alt_values"][:].astype(np.float64) * rd["alt_values"].attrs["mag"]
                got = series.get((gname, sname, "energy_counter"))
                check(got is not None and len(got) == len(a), f"{gname}/{sname}: counter rows missing")
                check(all(close(gv, wv, 1e-12) and gu == "J" for (_, gv, gu), wv in zip(got, a)),
                      f"{gname}/{sname}: counter values differ from h5py")
                # RAPL power is the counter's derivative (perun processing.py)
                dp = np.diff(a) / np.diff(t)
                check(np.allclose(dp, v[1:], rtol=1e-3), f"{gname}/{sname}: power != d(counter)/dt")
            if unit == "W":
                npower += 1
                e = float(s["metrics"]["ENERGY"].attrs["value"])
                check(close(energy[(gname, sname)], e, 1e-7),
                      f"{gname}/{sname}: energy {energy.get((gname, sname))} vs h5py {e}")
                trap = float(np.sum((v[1:] + v[:-1]) / 2 * np.diff(t)))
                check(close(e, trap, 1e-3), f"{gname}/{sname}: perun energy {e} != trapezoid {trap}")
    check(len(erows) == npower == 3, f"{len(erows)} energy rows, {npower} power sensors, expected 3")
    pkg = [v for (t, v, u) in series[("cpu", "cpu_0_package-0", "power")]]
    dram = [v for (t, v, u) in series[("ram", "ram_0_dram", "power")]]
    gpu = [v for (t, v, u) in series[("gpu", "CUDA:0_POWER", "power")]]
    check(abs(np.mean(pkg) - 60) < 3 and abs(np.mean(dram) - 8) < 0.5,
          f"emulated RAPL is 60 W / 8 W, read {np.mean(pkg):.2f} / {np.mean(dram):.2f}")
    check(set(gpu) <= {150.0, 250.0} and len(set(gpu)) >= 1,
          f"emulated NVML is 150 W (0.9.1 file: 150 or 250 W) (stored in mW, mag 0.001), read {sorted(set(gpu))}")
    print(f"ok: {SET} RAPL+NVML: {nsensors} sensors equal h5py; package {np.mean(pkg):.2f} W, "
          f"dram {np.mean(dram):.2f} W, GPU {sorted(set(gpu))} W (mW * 0.001); "
          f"counters J; energies {sorted(round(x, 3) for x in energy.values())} J equal perun's")
    # 5. --regions against the raw region data
    for name in ("psutil_only_regions.hdf5", "mpi_2ranks.hdf5"):
        h5 = copy_fixture(name, D, SRC)
        out = os.path.join(TMP, name + ".regions.csv")
        anchorpost("perun", h5, "--regions", "-o", out)
        header, rows = read_csv(out)
        check(header == ["multirun", "round", "region", "rank", "start_s", "stop_s"], f"{header}")
        want = []
        with h5py.File(h5, "r") as f:
            (app,) = f.values()
            for mr_id, mr in app["nodes"].items():
                for rnd, rn in mr["nodes"].items():
                    for reg, rg in rn.get("regions", {}).items():
                        for rank, ds in rg["raw_data"].items():
                            ev = ds[:]
                            for k in range(0, len(ev), 2):
                                want.append((mr_id, rnd, reg, rank, ev[k], ev[k + 1]))
        check(len(rows) == len(want), f"{name}: {len(rows)} region rows, h5py {len(want)}")
        for a, b in zip(rows, want):
            check(tuple(a[:4]) == b[:4] and np.float32(float(a[4])) == b[4]
                  and np.float32(float(a[5])) == b[5], f"{name}: region row {a} vs {b}")
        ranks = sorted({r[3] for r in rows})
        print(f"ok: {SET} {name}: {len(rows)} region calls on ranks {ranks} equal h5py")
        if name == "mpi_2ranks.hdf5":
            calls = {rk: sum(1 for r in rows if r[3] == rk) for rk in ranks}
            check(calls == {"0": 2, "1": 3}, f"toy_mpi.py: rank 0 calls work twice, rank 1 three times: {calls}")



for label, folder in fixture_sets():
    check_set(label, folder)

# 6. anchorpost CSV column set
check(COLS == ["multirun", "round", "host", "device_group", "sensor", "metric", "unit", "t_rel_s",
               "value", "flags"], "columns")
print("PASS")
