"""Write a multi-host perun HDF5 file (perun 1.0.0's layout, FORMATS.md)
from ringgen --power-out traces: one host per trace, RAPL-like package and
dram sensors (power float32 W + alt_values uint64 uJ counter).

  python perun_synth.py OUT.hdf5 HOST=power.csv [HOST=power.csv ...]
         [--app NAME] [--tz-offset-s S]

The traces must share one sampling grid origin (ringgen runs of one job
do).  execution_dt is written as local time (this machine's zone, or UTC
shifted by --tz-offset-s) one second before the first sample, which is
what anchorpost's execution_dt prior assumes.  Marked as synthetic:
EMULATED_SENSOR.txt beside the file.
"""
import argparse
import datetime
import os
import sys

import h5py
import numpy as np


def read_trace(path):
    first = None
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("# first_sample_unix_ns="):
                first = int(line.split("=", 1)[1])
            elif line.startswith("#") or line.startswith("t_rel_s"):
                continue
            else:
                rows.append([float(x) for x in line.split(",")])
    if first is None or len(rows) < 2:
        sys.exit(f"perun_synth: {path}: not a ringgen --power-out trace")
    a = np.array(rows)
    return first, a[:, 0], a[:, 1], a[:, 2]


def ds(g, name, data, unit, mag):
    d = g.create_dataset(name, data=data)
    d.attrs["unit"] = unit
    d.attrs["mag"] = np.float64(mag)
    d.attrs["dtype"] = str(data.dtype)
    return d


def sensor(parent, sid, dev, t, cum_j):
    s = parent.create_group(sid)
    s.attrs["type"] = np.int64(6)
    s.attrs["device_type"] = dev
    s.attrs["source"] = "synthetic (tools/ringgen)"
    for sub in ("metrics", "nodes", "raw_data"):
        s.create_group(sub)
    power = np.empty(len(t), dtype=np.float32)
    power[1:] = np.diff(cum_j) / np.diff(t)
    power[0] = power[1]
    rd = s["raw_data"]
    ds(rd, "timesteps", t.astype(np.float32), "s", 1.0)
    ds(rd, "values", power, "W", 1.0)
    ds(rd, "alt_values", np.round(cum_j * 1e6).astype(np.uint64), "J", 1e-6)
    e = s["metrics"].create_group("ENERGY")
    e.attrs["type"] = "energy"
    e.attrs["unit"] = "J"
    e.attrs["mag"] = np.float64(1.0)
    e.attrs["agg_type"] = "sum"
    e.attrs["value"] = np.float32(np.trapezoid(power, x=t) if hasattr(np, "trapezoid") else np.trapz(power, x=t))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("traces", nargs="+", help="HOST=power.csv")
    ap.add_argument("--app", default="train")
    ap.add_argument("--tz-offset-s", type=float, default=None)
    a = ap.parse_args()
    hosts = []
    for spec in a.traces:
        host, _, path = spec.partition("=")
        if not path:
            sys.exit(f"perun_synth: '{spec}' is not HOST=power.csv")
        hosts.append((host, read_trace(path)))
    first = min(h[1][0] for h in hosts)
    exec_unix = (first - 1_000_000_000) / 1e9
    if a.tz_offset_s is None:
        exec_dt = datetime.datetime.fromtimestamp(exec_unix)
    else:
        exec_dt = datetime.datetime.utcfromtimestamp(exec_unix + a.tz_offset_s)
    exec_s = exec_dt.isoformat(timespec="microseconds")
    tmp = a.out + ".tmp"
    with h5py.File(tmp, "w") as f:
        app = f.create_group(a.app)
        app.attrs["type"] = np.int64(1)
        app.attrs["creation_dt"] = exec_s
        app.attrs["last_execution_dt"] = exec_s
        app.create_group("metrics")
        run = app.create_group("nodes").create_group(exec_s)
        run.attrs.update({"type": np.int64(2), "app_name": a.app, "perun_version": "1.0.0",
                          "execution_dt": exec_s, "n_runs": "1", "monitor.sampling_period": "0.1"})
        run.create_group("metrics")
        rnd = run.create_group("nodes").create_group("0")
        rnd.attrs.update({"type": np.int64(3), "hostname": hosts[0][0], "perun_version": "1.0.0"})
        rnd.create_group("metrics")
        rnd.create_group("regions")
        hn = rnd.create_group("nodes")
        for i, (host, (h_first, t, pkg, dram)) in enumerate(hosts):
            h = hn.create_group(host)
            h.attrs["type"] = np.int64(4)
            h.attrs["mpi_ranks"] = f"[{i}]"
            h.create_group("metrics")
            groups = h.create_group("nodes")
            for dev, sid, cum in (("cpu", "cpu_0_package-0", pkg), ("ram", "ram_0_dram", dram)):
                g = groups.create_group(dev)
                g.attrs["type"] = np.int64(5)
                g.attrs["device_type"] = dev
                g.create_group("metrics")
                # perun's timesteps are relative to THIS host's first sample.
                sensor(g.create_group("nodes"), sid, dev, t + (h_first - h_first) / 1e9, cum)
    os.replace(tmp, a.out)
    with open(os.path.join(os.path.dirname(os.path.abspath(a.out)), "EMULATED_SENSOR.txt"), "w") as f:
        f.write("synthetic power traces from tools/ringgen: emulated sensor, not a measurement\n")


if __name__ == "__main__":
    main()
