"""NVML power readings as a moving average with partial coverage: attribution
with and without the sensor response model, against exact truth.

  python3 bench/gpu_window_accuracy.py [--repeat 40] [--out DIR]

Real perun 1.0 at 0.1 s reads the stub pynvml, whose power reading the
anchor_emul updater computes like an H100 (arXiv 2312.02741 / NVML docs):
the mean over the last 1 s of only the first 25 % of every 100 ms.  The
stub names the GPU "NVIDIA H100 80GB HBM3 (emulated sensor, ...)", so
anchorpost's response table matches it.  The same run has libanchor's ms
counters (ANCHOR_SENSORS, exact C NVML stub) as a reference.  anchorpost
phases then runs three ways on the same files:
  point    --gpu-window 0: each reading taken as the power at its timestamp
  model    the table's response (1 s window, 25 % coverage)
  counters the ms energy counter (scope "counters")
and each phase's GPU mean power is compared with the spec's watts (the
phases have constant power, so the mean power over the anchored ranges is
known exactly).  Emulated sensor, not a measurement.
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
import run_scenario  # noqa: E402

PHASES = [("load", 30, 6.0, 1.0, "sleep", 60.0), ("fwd", 70, 25.0, 3.0, "spin", 250.0),
	  ("bwd", 150, 40.0, 4.0, "spin", 300.0), ("opt", 30, 15.0, 6.0, "spin", 120.0)]


def phases(ring, hdf5, out, extra):
	subprocess.run([os.path.join(BUILD, "anchorpost"), "phases", "--ring", ring, "--perun", hdf5, "-o", out, *extra],
		       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
	with open(out) as f:
		return list(csv.DictReader(f))


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("--repeat", type=int, default=40)
	ap.add_argument("--out", default=None)
	ap.add_argument("--scale", type=float, default=1.0, help="multiply every phase length (10: 0.3-1.5 s)")
	a = ap.parse_args()
	out = a.out or tempfile.mkdtemp(prefix="anchor-gpuwin.")
	os.makedirs(out, exist_ok=True)
	stub = os.path.join(out, "libnvml_stub.so")
	subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", stub,
			os.path.join(ROOT, "tools", "emulated_power", "nvml_stub", "libnvml_stub.c")], check=True)
	os.environ.update(
		ANCHOR_EMUL_GPU_MODEL="NVIDIA H100 80GB HBM3",
		ANCHOR_SENSORS="nvml", ANCHOR_NVML_LIB=stub, ANCHOR_EMUL_NVML_ROOT=os.path.join(out, "powercap"),
		ANCHOR_EMUL_PHASE_FILE=os.path.join(out, "phase.mmap"),
		ANCHOR_EMUL_GPU_W="0," + ",".join(str(p[5]) for p in PHASES))
	phs = [(p[0], p[1] * a.scale) + p[2:] for p in PHASES]
	spec = run_scenario.make_spec(phs, repeat=a.repeat, jitter=0.3, sampling_period=0.1, seed=5)
	s = run_scenario.run(out, spec, sampling_period=0.1, python=sys.executable,
			     libanchor=os.path.join(BUILD, "libanchor.so"), gpu=True, gpu_avg_ms=1000.0,
			     gpu_coverage=0.25, quiet=True)
	ring, hdf5 = s["files"]["ring"], s["files"]["perun_hdf5"]
	runs = {"point (--gpu-window 0)": phases(ring, hdf5, os.path.join(out, "point.csv"), ["--gpu-window", "0"]),
		"model (table: H100, 1 s, 25 %)": phases(ring, hdf5, os.path.join(out, "model.csv"), [])}
	print(f"GPU mean power per phase vs spec ({a.repeat} repetitions, jitter 30 %, perun 0.1 s, reading = 1 s mean of 25 % "
	      f"slices; emulated sensor, not a measurement); out {out}")
	print("| phase (ms) | spec W | " + " | ".join(runs) + " | ms counters |")
	print("|---|---|" + "---|" * (len(runs) + 1))
	for name, ms, _p, _d, _k, w in phs:
		cells = []
		for rows in runs.values():
			r = next((x for x in rows if x["scope"] == "all" and x["phase"] == name and x["device_group"] == "gpu"), None)
			if r is None or not r["energy_j"]:
				cells.append("-")
				continue
			e, t = float(r["energy_j"]), float(r["self_s"])
			lo, hi = float(r["ci95_low_j"]) / t, float(r["ci95_high_j"]) / t
			flag = " unidentifiable" if "unidentifiable" in r["flags"] else ""
			cells.append(f"{e / t:.1f} ({100 * (e / t / w - 1):+.1f} %) [{lo:.0f}, {hi:.0f}] {r['method']}{flag}")
		r = next((x for x in runs["model (table: H100, 1 s, 25 %)"] if x["scope"] == "counters" and x["phase"] == name
			  and x["device_group"] == "gpu"), None)
		cells.append(f"{float(r['mean_power_w']):.1f} ({100 * (float(r['mean_power_w']) / w - 1):+.2f} %)" if r else "-")
		print(f"| {name} ({ms}) | {w:.0f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
	main()
