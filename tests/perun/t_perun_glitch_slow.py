"""perun's counter glitches are found, repaired and flagged (issue 23 point 9),
with real perun 1.0 reading an emulated powercap tree and an emulated GPU.

The workload (tools/groundtruth, phases of 20-120 ms at known watts) runs
under real perun at 0.1 s.  Once during it the emulated RAPL package counter
steps back by 5 J (a reset, or a read racing an update: the updater's
--step-back-at-s; the truth ledger keeps counting what went in), and the
emulated GPU's power reading shows 3 MW for 150 ms (an impossible NVML read:
--gpu-glitch-at-s; perun 1.0 reads NVML power, not its energy counter).

perun itself is checked to have done what its source says (processing.py:
the step back taken as a full wrap, ~262 kJ in one window, ~2.6 MW stored;
the GPU read stored as is), then anchorpost:
  * phases: the (total) per device within 2 % + one repaired window of the
    truth (before: 262 kJ for the package); no row above the device's
    ceiling; every phase within 10 % + 1 J of the truth or, where its 95 %
    interval is wider, within that, and the intervals holding the truth
    in the RAPL phase rows but for the misses a correct 95 % interval
    shows once in 200 runs (the GPU's instantaneous reads are
    checked by their total); the rows whose time
    overlaps a repaired window and the (total) rows carry the flag
    sensor-glitch in phases.csv and (!) in the table, and the table names
    each glitched sensor and what replaced its readings;
  * perun: the energy table marks both sensors (!) and says why, the energy
    CSV's flags column says sensor-glitch, perun.csv flags the rows.
"""
import csv
import json
import os
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from interval_check import misses_allowed  # noqa: E402

fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)


for need in (POST, os.path.join(BUILD, "libanchor.so")):
    if not os.access(need, os.R_OK):
        print("skip: %s not built (make)" % need)
        sys.exit(77)
try:
    import h5py
    import perun  # noqa: F401
    import run_scenario
except ImportError as e:
    print("skip: %s (scripts/install-deps.sh)" % e)
    sys.exit(77)

STEP_BACK_UJ = 5_000_000
GPU_GLITCH_W = 3.0e6
PHASES = [  # name, ms, pkg_w, dram_w, kind, gpu_w
    ("data", 40, 6.0, 1.0, "sleep", 60.0),
    ("forward", 60, 25.0, 3.0, "spin", 250.0),
    ("backward", 120, 35.0, 4.0, "spin", 300.0),
    ("step", 20, 15.0, 5.0, "spin", 120.0),
]
out = os.path.join(TMP, "sc")
spec = run_scenario.make_spec(PHASES, repeat=15, jitter=0.2, sampling_period=0.1)
sc = run_scenario.run(out, spec, sampling_period=0.1, gpu=True, quiet=True,
                      updater_args=["--step-back-at-s", "1.2", "--step-back-uj", str(STEP_BACK_UJ),
                                    "--gpu-glitch-at-s", "2.1", "--gpu-glitch-w", str(GPU_GLITCH_W)])
truth = json.load(open(sc["files"]["truth"]))
h5 = sc["files"]["perun_hdf5"]
kinds = sorted(g["kind"] for g in truth["glitches"])
check(kinds == ["gpu_reading", "step_back"], "the updater injected both glitches (%s)" % kinds)

# ---- what perun made of them (its source: processing.py) ------------------
perun_j, peak_w = {}, {}
with h5py.File(h5, "r") as f:
    def visit(name, obj):
        if isinstance(obj, h5py.Group) and name.endswith(("cpu_0_package-0", "CUDA:0_POWER")):
            key = "package" if "package" in name else "gpu"
            perun_j[key] = float(obj["metrics/ENERGY"].attrs["value"])
            peak_w[key] = float((obj["raw_data/values"][:] * obj["raw_data/values"].attrs["mag"]).max())
    f.visititems(visit)
check(perun_j.get("package", 0) > 100e3,
      "perun took the package counter's step back for a wrap: ENERGY %.0f J (truth %.1f J), peak %.3g W"
      % (perun_j.get("package", 0), truth["devices"]["package"]["total_j"], peak_w.get("package", 0)))
check(peak_w.get("gpu", 0) >= GPU_GLITCH_W * 0.99, "perun stored the impossible GPU read (peak %.3g W)" %
      peak_w.get("gpu", 0))

# ---- phases ---------------------------------------------------------------
pcsv = os.path.join(TMP, "phases.csv")
p = subprocess.run([POST, "phases", "--ring", sc["files"]["ring"], "--perun", h5, "-o", pcsv],
                   capture_output=True, text=True, timeout=300)
check(p.returncode == 0, "anchorpost phases: exit %d %s" % (p.returncode, p.stderr[-500:]))
print(p.stdout)
rows = list(csv.DictReader(open(pcsv))) if p.returncode == 0 else []
rows = [r for r in rows if r["scope"] == "all"]
GROUP = {"cpu": "package", "ram": "dram", "gpu": "gpu"}
CEIL = {"cpu": 1500.0, "ram": 1500.0, "gpu": 1400.0}  # tunables.h; GPU: 2 x the stub's 700 W limit
MAXW = {"package": 35.0, "dram": 5.0, "gpu": 300.0}
rapl_rows = []
for g, dev in GROUP.items():
    tot = [r for r in rows if r["row"] == "total" and r["device_group"] == g]
    if not tot:
        check(False, "no (total) row for %s" % g)
        continue
    got, want = float(tot[0]["energy_j"]), truth["devices"][dev]["total_j"]
    # one repaired window (0.1 s; the GPU's 150 ms spans up to 3 reads)
    tol = 0.02 * want + MAXW[dev] * (0.1 if dev != "gpu" else 0.3)
    check(abs(got - want) <= tol, "%s (total) %.2f J vs truth %.2f J (tolerance %.2f J)" % (g, got, want, tol))
    glitched = dev in ("package", "gpu")
    check(("sensor-glitch" in tot[0]["flags"]) == glitched,
          "%s (total) flags %r (%s)" % (g, tot[0]["flags"], "glitched" if glitched else "clean"))
    flagged = [r["phase"] for r in rows if r["device_group"] == g and "sensor-glitch" in r["flags"]
               and r["row"] != "total"]
    check(bool(flagged) == glitched, "%s rows flagged sensor-glitch: %s" % (g, flagged))
    for r in rows:
        if r["device_group"] == g and r["mean_power_w"]:
            if float(r["mean_power_w"]) > CEIL[g]:
                check(False, "%s %s at %s W, above the ceiling" % (r["phase"], g, r["mean_power_w"]))
    # Per phase on the RAPL counters only: NVML's instantaneous reads at
    # 0.1 s under 20-120 ms phases are this coarse without any glitch too
    # (the same scenario unglitched: step -46 %, forward -12 % on a loaded
    # machine), so the GPU is checked by its total and its flags.
    # The point target (10 % + 1 J) yields to the row's own 95 % interval
    # where that is wider: a 20 ms phase under 0.1 s windows states
    # +-2-2.5 J, and a CI run failed `step` at +1.43 J against a target of
    # 1.43 J.  The intervals must hold the truth but for as many misses as
    # a correct 95 % interval shows but once in 200 runs (interval_check.py).
    for ph in PHASES if g != "gpu" else ():
        rr = [r for r in rows if r["row"] == "phase" and r["phase"] == ph[0] and r["device_group"] == g]
        tj = truth["phases"][ph[0]]["energy_j"][dev]
        if rr and rr[0]["energy_j"]:
            e, lo, hi = (float(rr[0][c]) for c in ("energy_j", "ci95_low_j", "ci95_high_j"))
            rapl_rows.append(lo <= tj <= hi)
            check(abs(e - tj) <= max(0.10 * tj + 1.0, (hi - lo) / 2),
                  "%s %s %.2f J [%.2f, %.2f] vs truth %.2f J: within 10 %% + 1 J or its half width%s" %
                  (ph[0], g, e, lo, hi, tj, " (flagged)" if "sensor-glitch" in rr[0]["flags"] else ""))
check(len(rapl_rows) >= 6 and rapl_rows.count(False) <= misses_allowed(len(rapl_rows)),
      "the RAPL phase rows' 95 %% intervals hold the truth in %d of %d (at most %d misses)"
      % (rapl_rows.count(True), len(rapl_rows), misses_allowed(len(rapl_rows))))
check("perun cpu cpu_0_package-0: 1 window(s) with an impossible reading (counter" in p.stdout,
      "the table names the package counter's glitch")
check("perun gpu CUDA:0_POWER:" in p.stdout and "impossible reading" in p.stdout,
      "the table names the GPU read's glitch")
check("(total)" in p.stdout and "perun (!)" in p.stdout, "the (total) rows are marked (!) in the table")

# ---- perun ----------------------------------------------------------------
ecsv = os.path.join(TMP, "perun.csv")
p = subprocess.run([POST, "perun", h5, "-o", ecsv], capture_output=True, text=True, timeout=300)
check(p.returncode == 0, "anchorpost perun: exit %d" % p.returncode)
marked = [ln for ln in p.stdout.splitlines() if ln.rstrip().endswith("(!)")]
check(len(marked) == 2 and any("cpu_0_package-0" in m for m in marked) and any("CUDA:0_POWER" in m for m in marked),
      "perun's energy table marks both glitched sensors: %s" % marked)
check("sums those readings as if real" in p.stdout, "and says what that means")
erows = list(csv.DictReader(open(ecsv + ".energy.csv")))
check(sorted(r["sensor"] for r in erows if r["flags"] == "sensor-glitch") == ["CUDA:0_POWER", "cpu_0_package-0"],
      "the energy CSV's flags column")
prow = [r for r in csv.DictReader(open(ecsv)) if r["flags"] == "sensor-glitch"]
check({r["sensor"] for r in prow} == {"CUDA:0_POWER", "cpu_0_package-0"},
      "perun.csv flags the glitched readings' rows (%d rows)" % len(prow))

if fails:
    print("%d check(s) failed" % len(fails))
    sys.exit(1)
print("PASS")
