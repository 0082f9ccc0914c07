"""Real perun over the emulated RAPL sensor agrees with the emulator's ledger.

Two short ground-truth scenarios at perun's fastest period (0.1 s), with
phases from 30 ms (shorter than the period) to 150 ms:
  1. default counter range: perun's ENERGY per sensor (HDF5, h5py) is within
     1 % of truth.json (3 % when perun's own sample intervals were irregular:
     its trapezoid then differs from the counter sum), perun's per-window
     power times its intervals equals the truth to 0.01 %, perun's raw counter series is monotonic and its
     first/last values are exactly the counter's start/end (no torn reads),
     the ledger matches the phase schedule, the ring holds one range per
     phase instance, and every output says "emulated sensor".
  2. a 20 J counter range, so the counters wrap several times: perun's
     wrap handling must still give the totals within 1 %.
  In scenario 1 the updater's tick trace pins perun's sample times: one
  CLOCK_MONOTONIC offset fits them within 1 ms, and perun's first sample
  falls inside the workload's 1 s lead-in as the ring's marks place it.
  3. with an emulated GPU (stub pynvml, perun's real NVML backend) whose
     reading is the average power over the last 100 ms (as NVML averages on
     recent GPUs): perun's GPU ENERGY within 3 % of the truth, RAPL still
     within 1 %, and the GPU's HDF5 name says "emulated sensor".
"""
import csv
import json
import os
import subprocess
import sys

import h5py
import numpy as np

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
import perun_clock  # noqa: E402
import run_scenario  # noqa: E402

NOTICE = "emulated sensor, not a measurement"
PHASES = [("load", 30, 6.0, 1.0, "sleep", 60.0), ("fwd", 70, 25.0, 3.0, "spin", 250.0),
	  ("bwd", 150, 40.0, 4.0, "spin", 300.0), ("opt", 30, 15.0, 6.0, "spin", 120.0)]
REPEAT = 12
fails = []


def check(cond, msg):
	print(("ok   " if cond else "FAIL ") + msg)
	if not cond:
		fails.append(msg)


def rapl_sensors(path):
	out = {}
	with h5py.File(path, "r") as f:
		def visit(name, obj):
			if name.endswith("/CUDA:0_POWER") and "metrics" in obj:
				out["CUDA:0_POWER"] = {"energy_j": float(obj["metrics/ENERGY"].attrs["value"]),
						       "name": obj.attrs.get("name")}
			if isinstance(obj, h5py.Group) and "raw_data" in obj and "alt_values" in obj["raw_data"]:
				out[name.rsplit("/", 1)[-1]] = {
					"energy_j": float(obj["metrics/ENERGY"].attrs["value"]),
					"alt": obj["raw_data/alt_values"][()].astype(np.int64),
					"t_s": obj["raw_data/timesteps"][()].astype(np.float64),
					"power_w": obj["raw_data/values"][()].astype(np.float64),
					"emulated": obj.attrs.get("emulated_sensor"),
				}
		f.visititems(visit)
	return out


def scenario(name, max_range_uj=None, gpu=False, trace=False):
	out = os.path.join(TMP, name)
	spec = run_scenario.make_spec(PHASES, repeat=REPEAT, jitter=0.3, sampling_period=0.1, seed=7)
	s = run_scenario.run(out, spec, sampling_period=0.1, python=sys.executable,
			     libanchor=os.path.join(BUILD, "libanchor.so"), max_range_uj=max_range_uj,
			     gpu=gpu, gpu_avg_ms=100.0 if gpu else 0.0, trace=trace)
	with open(s["files"]["truth"]) as f:
		truth = json.load(f)
	sensors = rapl_sensors(s["files"]["perun_hdf5"])
	want_ids = {"cpu_0_package-0", "ram_0_dram"} | ({"CUDA:0_POWER"} if gpu else set())
	check(set(sensors) == want_ids, f"{name}: perun found the emulated sensors: {sorted(sensors)}")
	if gpu and "CUDA:0_POWER" in sensors:
		want, got = truth["devices"]["gpu"]["total_j"], sensors["CUDA:0_POWER"]["energy_j"]
		check(abs(got - want) < 0.03 * want, f"{name}: gpu: perun ENERGY {got:.2f} J vs truth {want:.2f} J ({(got - want) / want * 100:+.2f} %)")
		check(NOTICE in str(sensors["CUDA:0_POWER"]["name"]), f"{name}: gpu: HDF5 name says '{NOTICE}'")
	for dev, sid in (("package", "cpu_0_package-0"), ("dram", "ram_0_dram")):  # RAPL
		if sid not in sensors:
			continue
		want = truth["devices"][dev]["total_j"]
		got = sensors[sid]["energy_j"]
		err = (got - want) / want
		# perun's ENERGY is a trapezoid over its per-window powers; with
		# irregular sample intervals (its sampler delayed on a loaded machine)
		# that is not the counter sum: measured up to +1.25 % with intervals
		# of 0.045-0.19 s.  1 % is required when perun sampled regularly.
		dt = np.diff(sensors[sid]["t_s"])
		regular = dt.max() <= 1.5 * 0.1 and dt.min() >= 0.5 * 0.1
		tol = 0.01 if regular else 0.03
		check(want > 1.0 and abs(err) < tol,
		      f"{name}: {dev}: perun ENERGY {got:.4f} J vs truth {want:.4f} J ({err * 100:+.3f} %, "
		      f"sample intervals {dt.min():.3f}-{dt.max():.3f} s, tolerance {tol * 100:.0f} %)")
		rect = float(np.sum(sensors[sid]["power_w"][1:] * dt))
		check(abs(rect - want) < 1e-4 * want,
		      f"{name}: {dev}: perun's power series x its own intervals = {rect:.4f} J (truth {want:.4f} J)")
		mod = truth["devices"][dev]["max_energy_range_uj"] + 1
		alt = sensors[sid]["alt"]
		steps = np.diff(alt) % mod  # unwrap as the hardware counter would
		check(bool(np.all(steps < mod // 2)), f"{name}: {dev}: counter series read by perun has no backward step")
		check(int(steps.sum()) == round(want * 1e6), f"{name}: {dev}: counter delta read by perun {steps.sum()} µJ == truth {round(want * 1e6)} µJ")
		check(sensors[sid]["emulated"] == NOTICE, f"{name}: {dev}: HDF5 sensor metadata says '{NOTICE}'")
		if max_range_uj and dev == "package":
			check(want * 1e6 > 2 * max_range_uj, f"{name}: {dev}: counter wrapped ({want:.1f} J over a {max_range_uj / 1e6:.0f} J range)")
	return s, truth


s, truth = scenario("plain", trace=True)
marker = s["files"]["marker"]
check(os.path.exists(marker) and NOTICE in open(marker).read(), "perun/EMULATED_SENSOR.txt exists and says so")
check(truth.get("notice") == NOTICE and truth.get("emulated") is True, "truth.json says so")

# The ledger follows the schedule the workload logged.
sched = {}
with open(s["files"]["instances"]) as f:
	for row in csv.DictReader(f):
		sched.setdefault(row["phase"], []).append((int(row["t_end_mono_ns"]) - int(row["t_begin_mono_ns"])) / 1e9)
for name, ms, pw, dw, _, _ in PHASES:
	ph = truth["phases"][name]
	sec = sum(sched[name])
	check(len(sched[name]) == REPEAT and ph["entries"] == REPEAT, f"{name}: {REPEAT} instances logged and entered")
	# A transition the updater saw only after its next tick (descheduled
	# under load) moves its lateness from one phase to the next: the ledger
	# counts it and says so, so the schedule may differ by that much more.
	tol = 0.002 + truth["late_seconds"]
	check(abs(ph["seconds"] - sec) < tol, f"{name}: ledger {ph['seconds']:.4f} s vs schedule {sec:.4f} s (tolerance {tol * 1e3:.1f} ms: 2 ms + {truth['late_seconds'] * 1e3:.1f} ms of late transitions)")
	check(abs(ph["energy_j"]["package"] - pw * ph["seconds"]) < 1e-6 * pw * ph["seconds"] + 1e-9, f"{name}: ledger package J = {pw} W x seconds")
check(truth["phases"]["off"]["energy_j"]["package"] == 0.0, "nothing drawn outside the workload")
total = sum(p["energy_j"]["package"] for p in truth["phases"].values())
check(abs(total - truth["devices"]["package"]["total_j"]) < 2e-6, f"ledger sums to the counter total ({total:.6f} J)")
print(f"updater tick p50 {truth['tick_ms']['p50']:.3f} ms p99 {truth['tick_ms']['p99']:.3f} ms max {truth['tick_ms']['max']:.3f} ms, late transitions {truth['late_transitions']} ({truth['late_seconds'] * 1e6:.1f} µs)")

# The ring holds one range per phase instance.
dump = os.path.join(TMP, "plain.csv")
subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", s["files"]["ring"], "-o", dump], check=True)
begins = {}
with open(dump) as f:
	for row in csv.DictReader(f):
		if row["kind"] == "begin":
			begins[row["name"]] = begins.get(row["name"], 0) + 1
for name, *_ in PHASES:
	check(begins.get(name) == REPEAT, f"ring: {begins.get(name)} '{name}' ranges (want {REPEAT})")

# perun's clock: every sample read while the counter moved pins its time
# stamp to a ~1 ms updater tick; one offset must fit them all (perun 1.0.0
# stamps with perf_counter_ns = CLOCK_MONOTONIC, the ring's clock).
pc = perun_clock.perun_t0(os.path.join(TMP, "plain"))
print(f"perun t0 = {pc['t0_mono_ns']} ns ±{pc['uncertainty_ms']:.3f} ms from {pc['samples_pinned']} samples, "
      f"{pc['delayed_reads']} delayed reads (max {pc['max_read_delay_ms']:.1f} ms)")
check(pc["samples_pinned"] >= 10 and pc["uncertainty_ms"] < 1.0,
      "perun's sample times fit one CLOCK_MONOTONIC offset within 1 ms")
check(pc["delayed_reads"] <= pc["samples_pinned"] // 4, "most perun reads follow their time stamp within a tick")
marks = {}
with open(dump) as f:
	for row in csv.DictReader(f):
		if row["kind"] == "mark" and row["name"].startswith("groundtruth_"):
			marks[row["name"]] = int(row["mono_ns"])
lead = (marks["groundtruth_start"] - pc["t0_mono_ns"]) / 1e9
check(0.0 < lead < 1.0 + 0.1, f"perun's first sample is {lead:.3f} s before the workload's first phase (lead-in 1 s)")

scenario("wrap", max_range_uj=20_000_000)
scenario("gpu", gpu=True)

for m in fails:
	print("failed: " + m)
print(f"{len(fails)} failed checks")
sys.exit(1 if fails else 0)
