"""ANCHOR_SENSORS=rapl,nvml: ms counters in the ring, attributed per phase, beside perun.

Real perun (emulated RAPL + stub pynvml) monitors the ground-truth workload
under libanchor with ANCHOR_SENSORS=rapl,nvml; the sampler reads the same
emulated powercap tree (a 20 J counter range, so the RAPL counters wrap
several times) and the GPU's energy counter through a C NVML stub loaded
with dlopen (tools/emulated_power/nvml_stub/libnvml_stub.c) in its exact
mode: the counter is the integral of the phase model's power up to the
moment of each read, with no updater lag.  Checks:
  * one sampling process (the workload/perun process; perun's forked
    sampler and the short processes perun spawns do not sample), ~1 kHz;
  * `anchorpost phases` writes scope "counters" rows; over perun's span the
    RAPL counters agree with perun's totals within 1 % and the output says
    so; the GPU row says perun's GPU figure is an estimate from readings;
  * GPU (exact, lag-free counter): every phase's mean power within 1 % of the
    spec's watts, phases of 30 to 150 ms;
  * RAPL (counters advanced by the updater every ~1 ms, so they lag the
    phase edges by a tick; a 1 W phase after a 6 W one then reads ~5 % high):
    every phase's mean power within 10 %;
  * every output says "emulated sensor"; `anchorpost report` writes the
    same counter rows into its phases.csv.
Emulated sensor, not a measurement.
"""
import importlib.util
import csv
import os
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
import run_scenario  # noqa: E402

PHASES = [("load", 30, 6.0, 1.0, "sleep", 60.0), ("fwd", 70, 25.0, 3.0, "spin", 250.0),
	  ("bwd", 150, 40.0, 4.0, "spin", 300.0), ("opt", 30, 15.0, 6.0, "spin", 120.0)]
fails = []


def check(cond, msg):
	print(("ok   " if cond else "FAIL ") + msg)
	if not cond:
		fails.append(msg)


def main():
	# find_spec, not import: only the child processes use perun.
	if importlib.util.find_spec("perun") is None:
		print("skip: perun is not installed (scripts/install-deps.sh)")
		return 77
	out = os.path.join(TMP, "run")
	os.makedirs(out, exist_ok=True)
	stub = os.path.join(out, "libnvml_stub.so")
	subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-shared", "-fPIC",
			"-o", stub, os.path.join(ROOT, "tools", "emulated_power", "nvml_stub", "libnvml_stub.c")],
		       check=True)
	os.environ.update(
		ANCHOR_SENSORS="rapl,nvml", ANCHOR_POWERCAP_ROOT=os.path.join(out, "powercap"),
		ANCHOR_NVML_LIB=stub, ANCHOR_EMUL_NVML_ROOT=os.path.join(out, "powercap"),
		ANCHOR_EMUL_PHASE_FILE=os.path.join(out, "phase.mmap"),
		ANCHOR_EMUL_GPU_W="0," + ",".join(str(p[5]) for p in PHASES))
	spec = run_scenario.make_spec(PHASES, repeat=10, jitter=0.3, sampling_period=0.1, seed=11)
	s = run_scenario.run(out, spec, sampling_period=0.1, python=sys.executable,
			     libanchor=os.path.join(BUILD, "libanchor.so"), gpu=True, gpu_avg_ms=0.0,
			     max_range_uj=20_000_000)
	ring = s["files"]["ring"]

	dump = os.path.join(out, "dump.csv")
	subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", "--ring", ring, "-o", dump], check=True)
	with open(dump) as f:
		rows = list(csv.DictReader(f))
	sens = [r for r in rows if r["kind"] == "sensor"]
	desc = [r for r in rows if r["kind"] == "sensor_desc"]
	pids = {r["pid"] for r in sens}
	forks = {r["pid"] for r in rows if r["kind"] == "fork"}
	check(len(pids) == 1, f"one sampling process: {sorted(pids)}")
	check(not (pids & forks), f"no forked child sampled (forked: {len(forks)})")
	check(desc and all("emulated=1" in d["name"] for d in desc), "SENSOR_DESC marks the emulated sensor")
	check(desc and "c0=cpu|package-0|1e-6|20000000" in desc[0]["name"] and "gpu|gpu0|1e-3" in desc[0]["name"],
	      f"desc names package, dram, gpu0 with the 20 J range: {desc[0]['name'] if desc else None}")
	if len(sens) > 2:
		t = [int(r["mono_ns"]) for r in sens]
		rate = (len(t) - 1) / ((t[-1] - t[0]) / 1e9)
		check(500 < rate < 1100, f"sampler rate {rate:.0f} Hz (1 kHz asked; a loaded machine delays ticks)")
		pkg = [int(r["name"].split(";")[0]) for r in sens]
		wraps = sum(1 for a, b in zip(pkg, pkg[1:]) if b < a)
		check(wraps >= 2, f"the package counter wrapped {wraps} times in the ring (wrap-around exercised)")

	res = subprocess.run([os.path.join(BUILD, "anchorpost"), "phases", "--ring", ring, "--perun",
			      s["files"]["perun_hdf5"], "-o", os.path.join(out, "phases.csv")],
			     capture_output=True, text=True)
	print(res.stdout[-3000:], res.stderr[-2000:])
	check(res.returncode == 0, f"anchorpost phases exit {res.returncode}")
	check("ms counters (ANCHOR_SENSORS)" in res.stdout, "the table has the ms counters block")
	check("cpu: counters" in res.stdout and "agree within 1 %" in res.stdout, "the output states the cross-check")
	with open(os.path.join(out, "phases.csv")) as f:
		prow = [r for r in csv.DictReader(f) if r["scope"] == "counters"]
	check(prow and all("emulated sensor" in r["sensor_note"] for r in prow), "counter rows say emulated sensor")
	by = {(r["phase"], r["device_group"]): r for r in prow}
	for g in ("cpu", "ram"):
		r = by.get(("(perun span)", g))
		check(r is not None and "agree_1pct=yes" in r["flags"],
		      f"{g}: counters vs perun over perun's span: {r['flags'] if r else 'no row'}")
	r = by.get(("(perun span)", "gpu"))
	check(r is not None and "perun=power-readings-estimate" in r["flags"],
	      f"gpu: perun's figure flagged as an estimate from readings: {r['flags'] if r else 'no row'}")
	for name, _ms, pkg_w, dram_w, _k, gpu_w in PHASES:
		for g, w, tol in (("gpu", gpu_w, 0.01), ("cpu", pkg_w, 0.10), ("ram", dram_w, 0.10)):
			r = by.get((name, g))
			p = float(r["mean_power_w"]) if r else float("nan")
			err = p / w - 1
			check(abs(err) <= tol, f"{name}/{g}: {p:.3f} W vs {w} W ({100 * err:+.2f} %, limit {100 * tol:.0f} %)")
	rep = os.path.join(out, "report")
	res = subprocess.run([os.path.join(BUILD, "anchorpost"), "report", "--ring", ring, "--perun",
			      s["files"]["perun_hdf5"], "-d", rep], capture_output=True, text=True)
	check(res.returncode == 0, f"anchorpost report exit {res.returncode}: {res.stderr[-300:]}")
	if res.returncode == 0:
		with open(os.path.join(rep, "phases.csv")) as f:
			rrows = [r for r in csv.DictReader(f) if r["scope"] == "counters"]
		check(len(rrows) == len(prow), f"report's phases.csv has the same counter rows ({len(rrows)} vs {len(prow)})")
	if fails:
		print(f"{len(fails)} check(s) failed")
		return 1
	return 0


if __name__ == "__main__":
	sys.exit(main())
