"""Recover the CLOCK_MONOTONIC time of perun's samples from the emulator's trace.

  python tools/groundtruth/perun_clock.py SCENARIO_DIR

perun stores, per sample, seconds since its first sample (float32) and, for
RAPL, the raw counter it read (raw_data/alt_values).  The updater's trace
(run_scenario --trace -> counters.csv) says when each counter value was
written: a value first present at tick k and replaced at tick n was read
by perun in [t_k, t_n).  So every sample read while the counter was moving pins
perun's clock to within one updater tick (~1 ms): the ground truth for
the perun <-> ring alignment (perun 1.0.0 takes timesteps from
time.perf_counter_ns(), i.e. CLOCK_MONOTONIC on Linux, so one offset fits).

Prints: t0 = CLOCK_MONOTONIC ns of perun's first sample (timestep 0), the
interval it lies in, how many samples pinned it, and how many of perun's
reads came late after their time stamp (a preempted sampler).
As a library: perun_t0(scenario_dir) -> dict.
"""

import bisect
import json
import os
import sys

import h5py
import numpy as np


def _package_sensor(path):
	found = {}
	with h5py.File(path, "r") as f:
		def visit(name, obj):
			if name.endswith("/cpu_0_package-0") and "raw_data" in obj:
				found["t_s"] = obj["raw_data/timesteps"][()].astype(np.float64)
				found["alt"] = obj["raw_data/alt_values"][()].astype(np.int64)
		f.visititems(visit)
	if not found:
		raise ValueError(f"{path}: no emulated package sensor")
	return found["t_s"], found["alt"]


def _trace(path):
	t, tot = [], []
	with open(path) as f:
		for line in f:
			if line[0].isdigit():
				a = line.split(",")
				t.append(int(a[0]))
				tot.append(int(a[2]))
	return t, tot


def perun_t0(scenario_dir):
	with open(os.path.join(scenario_dir, "scenario.json")) as f:
		sc = json.load(f)
	if not sc["files"].get("counters"):
		raise ValueError(f"{scenario_dir}: run the scenario with --trace (trace=True)")
	with open(sc["files"]["truth"]) as f:
		truth = json.load(f)
	dev = truth["devices"]["package"]
	mod = dev["max_energy_range_uj"] + 1
	t_s, alt = _package_sensor(sc["files"]["perun_hdf5"])
	# Counter read by perun -> energy since the updater started (the trace's unit).
	since = (alt - dev["counter_start_uj"]) % mod
	tick_t, tick_tot = _trace(sc["files"]["counters"])
	lo_bounds, hi_bounds = [], []
	for i in range(1, len(since)):
		if since[i] == since[i - 1]:
			continue  # no energy in between: the value says nothing new
		k = bisect.bisect_left(tick_tot, int(since[i]))
		# The value stays until the first tick that changes it (at 0 W it
		# stays for many ticks).
		n = bisect.bisect_right(tick_tot, int(since[i]))
		if k >= len(tick_tot) or tick_tot[k] != since[i] or n >= len(tick_t):
			continue
		ts_ns = t_s[i] * 1e9
		# perun read at t in [t_k, t_n): t0 = t - timestep.
		lo_bounds.append(tick_t[k] - ts_ns)
		hi_bounds.append(tick_t[n] - ts_ns)
	if not lo_bounds:
		raise ValueError("no perun sample could be pinned (no energy during the run?)")
	# perun stamps a sample, then reads its sensors (RAPL first: backends
	# are read in the order HWMon, NVML, RAPL, psutil), so the read happens
	# delta >= 0 after the stamp: every hi bound holds, a lo bound only for
	# a read that was not delayed by more than a tick (a preempted sampler
	# reads late: those lo bounds exceed min(hi) and are set aside).
	hi = min(hi_bounds)
	ok = [b for b in lo_bounds if b <= hi]
	lo = max(ok) if ok else hi
	return {
		"t0_mono_ns": int((lo + hi) / 2),
		"interval_ns": [int(lo), int(hi)],
		"uncertainty_ms": (hi - lo) / 2e6,
		"samples_pinned": len(lo_bounds),
		"samples": len(t_s),
		"delayed_reads": len(lo_bounds) - len(ok),
		"max_read_delay_ms": (max(lo_bounds) - hi) / 1e6 if max(lo_bounds) > hi else 0.0,
	}


def main():
	if len(sys.argv) != 2:
		sys.exit(__doc__)
	print(json.dumps(perun_t0(sys.argv[1]), indent=1))
	return 0


if __name__ == "__main__":
	sys.exit(main())
