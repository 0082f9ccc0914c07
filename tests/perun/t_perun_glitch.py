"""A perun file whose RAPL counter stepped back once, in seconds (issue 23
point 9; t_perun_glitch_slow.py does the same with real perun over the
emulated sensor).

A synthetic run (ringgen + perun_synth: perun 1.0's layout) is copied and
its package counter made to step back by 5 J halfway, then processed the
way perun 1.0 processes a counter (perun/processing.py processEnergyData:
np.diff on uint64, d >= max gives max + d - (2^64 - 1): the step back
becomes a full wrap, 2.6 MW in one window) into the stored power and
ENERGY; a second copy gets one bad read instead (the counter read as 0
once, what perun's RAPL callback returns on a read error).  Then:
  * phases on the glitched files: the (total) within 1 J of the clean
    file's (the reset's window is estimated from its neighbours, the bad
    read repaired exactly), every phase inside the clean file's 95 %
    interval (or within 1 J), no row above 1.5 kW, the
    total and the touched rows flagged sensor-glitch, the table says so;
  * timeline.csv: the bins over the repaired window flagged, none above
    1.5 kW;
  * the clean file: nothing flagged.
"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
GEN = os.path.join(BUILD, "tools", "ringgen")
RANGE_UJ = 262143328850  # max_energy_range_uj of many Intel parts

fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


for exe in (POST, GEN):
    if not os.access(exe, os.X_OK):
        print("skip: %s not built (make)" % exe)
        sys.exit(77)
try:
    import h5py
    import numpy as np
except ImportError:
    print("skip: h5py/numpy missing (scripts/install-deps.sh)")
    sys.exit(77)

RING = os.path.join(TMP, "r.ring")
CLEAN = os.path.join(TMP, "clean.hdf5")
subprocess.run([GEN, RING, "--rank", "0", "--nranks", "1", "--steps", "400", "--host", "hostA",
                "--power-out", os.path.join(TMP, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), CLEAN,
                "hostA=" + os.path.join(TMP, "pw.csv")], check=True, capture_output=True)


def perun_process(counter_uj, t_s):
    """perun 1.0 processEnergyData on a uint64 µJ counter: power W, ENERGY J."""
    d = np.diff(counter_uj)
    idx = d >= np.uint64(RANGE_UJ)
    d[idx] = np.uint64(RANGE_UJ) + d[idx] - np.uint64(np.iinfo("uint64").max)
    power = d.astype("float32") / np.diff(t_s).astype("float32") * np.float32(1e-6)
    power = np.insert(power, 0, power[0])
    return power.astype("float32"), float(np.trapezoid(power, x=t_s) if hasattr(np, "trapezoid")
                                          else np.trapz(power, x=t_s))


def glitched(name, how):
    path = os.path.join(TMP, name + ".hdf5")
    shutil.copy(CLEAN, path)
    with h5py.File(path, "r+") as f:
        def visit(n, obj):
            if not (isinstance(obj, h5py.Group) and n.endswith("cpu_0_package-0")):
                return
            rd = obj["raw_data"]
            c = rd["alt_values"][:].astype(np.uint64)
            k = len(c) // 2
            if how == "reset":
                c[k:] -= np.uint64(5_000_000)
            else:
                c[k] = 0
            rd["alt_values"][...] = c
            rd["alt_values"].attrs["valid_max"] = np.uint64(RANGE_UJ)  # what perun 1.0 stores there
            t = rd["timesteps"][:].astype(np.float64)
            power, energy = perun_process(c, t)
            rd["values"][...] = power
            obj["metrics/ENERGY"].attrs["value"] = energy
        f.visititems(visit)
    return path


def phases(perun):
    out = os.path.join(TMP, os.path.basename(perun) + ".csv")
    p = subprocess.run([POST, "phases", "--ring", RING, "--perun", perun, "-o", out],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "phases on %s: exit %d %s" % (os.path.basename(perun), p.returncode, p.stderr[-300:]))
    rows = [r for r in csv.DictReader(open(out)) if r["scope"] == "all"] if p.returncode == 0 else []
    return {(r["phase"], r["device_group"]): r for r in rows}, p.stdout


ref, ref_out = phases(CLEAN)
check(not any(r["flags"] for r in ref.values() if "sensor-glitch" in r["flags"]), "clean file: nothing flagged")
for how in ("reset", "badread"):
    path = glitched(how, how)
    got, out = phases(path)
    tot = got.get(("(total)", "cpu"))
    want = float(ref[("(total)", "cpu")]["energy_j"])
    check(tot is not None and abs(float(tot["energy_j"]) - want) < 1.0,
          "%s: (total) cpu %s J vs the clean file's %.3f J" % (how, tot and tot["energy_j"], want))
    check(tot is not None and "sensor-glitch" in tot["flags"], "%s: (total) cpu flagged %r" % (how, tot and tot["flags"]))
    check(float(got[("(total)", "ram")]["energy_j"]) == float(ref[("(total)", "ram")]["energy_j"]) and
          "sensor-glitch" not in got[("(total)", "ram")]["flags"], "%s: ram untouched and unflagged" % how)
    # Each row where the clean file's own 95 % interval puts it (or within
    # 1 J): the repair moves no answer beyond what the data already allow.
    off = [(k[0], r["energy_j"], ref[k]["ci95_low_j"], ref[k]["ci95_high_j"]) for k, r in got.items()
           if k[1] == "cpu" and k[0] != "(total)" and r["energy_j"] and ref[k]["energy_j"]
           and abs(float(r["energy_j"]) - float(ref[k]["energy_j"])) > 1.0
           and not float(ref[k]["ci95_low_j"]) <= float(r["energy_j"]) <= float(ref[k]["ci95_high_j"])]
    check(not off, "%s: every cpu row inside the clean file's 95 %% interval or within 1 J of it %s" % (how, off))
    high = [k for k, r in got.items() if r["mean_power_w"] and float(r["mean_power_w"]) > 1500]
    check(not high, "%s: no row above 1.5 kW (%s)" % (how, high))
    touched = [k[0] for k, r in got.items() if k[1] == "cpu" and "sensor-glitch" in r["flags"] and k[0] != "(total)"]
    check(bool(touched), "%s: rows touching the repaired window flagged: %s" % (how, touched))
    check("impossible reading (counter" in out and ("estimated" if how == "reset" else "exactly") in out,
          "%s: the table says what was found and how it was repaired" % how)
    tl = os.path.join(TMP, how + ".timeline.csv")
    p = subprocess.run([POST, "timeline", "--ring", RING, "--perun", path, "-o", tl], capture_output=True, text=True,
                       timeout=120)
    trows = list(csv.DictReader(open(tl))) if p.returncode == 0 else []
    flagged = {r["group"] for r in trows if r["flags"] == "sensor-glitch"}
    check(p.returncode == 0 and flagged == {"cpu"}, "%s: timeline.csv flags bins of cpu only: %s" % (how, flagged))
    check(trows and max(float(r["power_w"]) for r in trows if r["power_w"]) < 1500,
          "%s: no timeline bin above 1.5 kW" % how)
if fails:
    print("%d check(s) failed" % len(fails))
    sys.exit(1)
print("PASS")
