"""The perun.h model (postproc/input/perun_load.c, perun_guard.c) seen through a
small C program (tests/victims/perun_api_check.c), compared with h5py's reading of
the same files: every sensor's length, unit, mag, scaled values, counter,
metadata, perun's energy, power flag; hosts and MPI ranks; regions; the
clock enum from @perun_version (0.9.1 realtime, 1.x monotonic); and a
sensor perun places directly under the host (DeviceType.NODE), which
`perun export` drops and anchorpost keeps.
"""

import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from perun_testlib import TMP, anchorpost, check, close, copy_fixture, fixture_sets, layout, read_csv

ROOT = os.environ.get("ANCHOR_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
EXE = os.path.join(TMP, "perun_api_check")
cflags = subprocess.run(["pkg-config", "--cflags", "hdf5"], capture_output=True, text=True).stdout.split()
libs = subprocess.run(["pkg-config", "--libs", "hdf5"], capture_output=True, text=True).stdout.split()
p = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow", "-D_GNU_SOURCE",
                    "-I" + ROOT, "-I" + os.path.join(ROOT, "postproc"), *cflags,
                    os.path.join(ROOT, "tests", "victims", "perun_api_check.c"),
                    os.path.join(ROOT, "postproc", "input", "perun_load.c"),
                    os.path.join(ROOT, "postproc", "input", "hdf5_probe.c"),
                    os.path.join(ROOT, "postproc", "input", "perun_guard.c"),
                    os.path.join(ROOT, "postproc", "input", "perun_pack.c"),
                    os.path.join(ROOT, "postproc", "input", "perun_spelling.c"),
                    os.path.join(ROOT, "postproc", "input", "input_file.c"),
                    os.path.join(ROOT, "postproc", "util", "file_ids.c"),
                    # the error carrier, struct em_error (util/ is below input/)
                    os.path.join(ROOT, "postproc", "util", "diag.c"), "-o", EXE, *libs, "-lm", "-pthread"],
                   capture_output=True, text=True)
check(p.returncode == 0, f"building perun_api_check failed: {p.stderr}")


def model(path):
    r = subprocess.run([EXE, path], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"perun_api_check {path}: {r.stdout} {r.stderr}")
    lines = r.stdout.splitlines()
    check(lines[-1] == "freed", f"{path}: perun_free twice did not finish")
    return lines


def kv(line):
    """key=value fields; 'source=' runs to the end of the line (it has spaces)."""
    line, _, source = line.partition(" source=")
    d = dict(f.split("=", 1) for f in line.split() if "=" in f)
    d["source"] = source
    return d


def compare(path, want_clock):
    lines = model(path)
    sensors = {}
    for ln in lines:
        if ln.startswith("sensor "):
            _, rnd, grp, sid = ln.split()[:4]
            sensors[(rnd, grp, sid)] = kv(ln)
    hosts = [ln.split() for ln in lines if ln.startswith("host ")]
    regions = [ln.split() for ln in lines if ln.startswith("region ")]
    runs = [kv(ln) | {"id": ln.split()[1]} for ln in lines if ln.startswith("run ")]
    n = 0
    with h5py.File(path, "r") as f:
        (app,) = f.values()
        check(len(runs) == len(app["nodes"]), f"{path}: multiruns")
        for run, (mr_id, mr) in zip(runs, app["nodes"].items()):
            check(run["id"] == mr_id and run["version"] == mr.attrs["perun_version"]
                  and run["dt"] == mr.attrs["execution_dt"] and run["app"] == mr.attrs["app_name"],
                  f"{path}: multirun attrs {run}")
            check(run["clock"] == want_clock, f"{path}: clock {run['clock']}, want {want_clock}")
            # perun's config for the run: every other string attribute, through the guard's pack
            conf = [k for k, v in mr.attrs.items() if isinstance(v, str)
                    and k not in ("app_name", "perun_version", "execution_dt", "n_runs")]
            check(int(run["config"]) == len(conf) and run["period"] == mr.attrs.get("monitor.sampling_period", "-"),
                  f"{path}: config {run['config']} entries, period {run['period']}; h5py: {len(conf)}, "
                  f"{mr.attrs.get('monitor.sampling_period')}")
            for rnd, rn in mr["nodes"].items():
                for hname, h in rn["nodes"].items():
                    ranks = [int(x) for x in h.attrs["mpi_ranks"].strip("[]").split(",")]
                    check(["host", rnd, hname, "ranks", *map(str, ranks)] in hosts,
                          f"{path}: host {hname} ranks {ranks} not in {hosts}")
                    for gname, g in h["nodes"].items():
                        members = g["nodes"].items() if g.attrs["type"] == 5 else [(gname, g)]
                        grp = gname if g.attrs["type"] == 5 else g.attrs.get("device_type", "node")
                        for sname, s in members:
                            m = sensors.get((rnd, grp, sname))
                            check(m is not None, f"{path}: sensor {grp}/{sname} missing")
                            rd = s["raw_data"]
                            v = rd["values"][:].astype(np.float64) * rd["values"].attrs["mag"]
                            check(int(m["n"]) == len(v), f"{sname}: n")
                            check(m["unit"] == rd["values"].attrs["unit"], f"{sname}: unit")
                            check(float(m["mag"]) == float(rd["values"].attrs["mag"]), f"{sname}: mag")
                            check(close(float(m["v_sum"]), float(np.sum(v)), 1e-12),
                                  f"{sname}: sum {m['v_sum']} vs {np.sum(v)}")
                            check(np.float32(float(m["t_last"])) == rd["timesteps"][-1], f"{sname}: t")
                            check(m["power"] == ("1" if m["unit"] == "W" else "0"), f"{sname}: power")
                            strs = [k for k, a in s.attrs.items()
                                    if isinstance(a, str) and k not in ("type", "device_type")]
                            check(int(m["nmeta"]) == len(strs), f"{sname}: nmeta {m['nmeta']} vs {strs}")
                            check(m["source"] == s.attrs.get("source", ""), f"{sname}: source")
                            if "alt_values" in rd:
                                a = rd["alt_values"]
                                check(m["alt"] == a.attrs["unit"] and close(
                                    float(m["alt_last"]), float(a[-1]) * a.attrs["mag"], 1e-15),
                                    f"{sname}: alt_values")
                            else:
                                check(m["alt"] == "-", f"{sname}: alt")
                            if "ENERGY" in s["metrics"]:
                                e = float(s["metrics"]["ENERGY"].attrs["value"])
                                check(close(float(m["energy"]), e, 1e-7), f"{sname}: energy")
                            else:
                                check(m["energy"].startswith("none:"), f"{sname}: energy not -ENOENT")
                            n += 1
                for reg, rg in rn.get("regions", {}).items():
                    for rank, ds in rg["raw_data"].items():
                        check(["region", rnd, reg, "rank", rank, "calls", str(len(ds) // 2)] in regions,
                              f"{path}: region {reg} rank {rank}")
    check(n == len(sensors), f"{path}: model has {len(sensors)} sensors, h5py {n}")
    return n


for label, folder in fixture_sets():
    for name in ("psutil_only_regions.hdf5", "emulated_rapl_nvml.hdf5", "mpi_2ranks.hdf5"):
        path = os.path.join(folder, name)
        with h5py.File(path, "r") as f:
            (app,) = f.values()
            version = next(iter(app["nodes"].values())).attrs["perun_version"]
        # perun 0.9.1 stamps with time.time_ns(), 1.x with perf_counter_ns()
        clock = "realtime" if version.startswith("0.") else "monotonic"
        n = compare(path, clock)
        print(f"ok: {label} {name}: model equals h5py for {n} sensors, hosts/ranks, regions; "
              f"clock {clock} (perun {version})")

# the clock follows @perun_version, not the file's age: flip it both ways
for version, clock in (("0.9.1", "realtime"), ("1.0.0", "monotonic")):
    v = copy_fixture("emulated_rapl_nvml.hdf5", os.path.join(TMP, version))
    app, _, _ = layout(v)
    with h5py.File(v, "r+") as f:
        for mr in f[app]["nodes"].values():
            mr.attrs["perun_version"] = version
    compare(v, clock)
    print(f"ok: @perun_version {version} gives clock {clock}")

# a DeviceType.NODE sensor directly under the host
node = copy_fixture("psutil_only_regions.hdf5")
app, mr_id, hname = layout(node)
with h5py.File(node, "r+") as f:
    host = f[app]["nodes"][mr_id]["nodes"]["0"]["nodes"][hname]["nodes"]
    f.copy(host["cpu"]["nodes"]["CPU_USAGE_0"], host, name="NODE_SENSOR")
    host["NODE_SENSOR"].attrs["device_type"] = "node"
    nsamples = len(host["NODE_SENSOR"]["raw_data"]["values"])
compare(node, "monotonic")
out = os.path.join(TMP, "node.csv")
anchorpost("perun", node, "-o", out)
_, rows = read_csv(out)
got = [r for r in rows if r[3] == "node" and r[4] == "NODE_SENSOR"]
check(len(got) == nsamples and got[0][5] == "utilization", f"NODE sensor rows: {got[:2]}")
print(f"ok: a sensor placed directly under the host is kept (group 'node'), {nsamples} rows")
print("PASS")
