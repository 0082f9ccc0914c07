"""Run one ground-truth scenario: real perun over the emulated RAPL sensor.

  python tools/groundtruth/run_scenario.py --out DIR [--sampling-period 0.1]
         [--phase NAME:MS:PKG_W:DRAM_W[:GPU_W][:spin|sleep]]... [--repeat N]
         [--jitter F] [--noise F] [--spec spec.json] [--gpu [--gpu-avg-ms MS]]

Starts anchor_emul.updater (phase model), then
  LD_PRELOAD=build/libanchor.so ANCHOR_FILE=DIR/run.ring \
  python -m anchor_emul.perun --powercap DIR/powercap monitor \
      --data_out DIR/perun --sampling_period S tools/groundtruth/workload.py ...
and leaves in DIR:
  spec.json        the scenario (phases, lengths, watts)
  run.ring         anchors: one range per phase instance (+ perun's processes)
  perun/workload.hdf5, perun/EMULATED_SENSOR.txt
  truth.json       exact joules/seconds per phase per device put into the counters
  instances.csv    every phase instance, CLOCK_MONOTONIC ns
  counters.csv     (--trace) every updater tick
  scenario.json    what ran, exit status, paths (read this first)
Everything is marked "emulated sensor, not a measurement".

As a library: run_scenario.run(out_dir, spec, sampling_period=0.1, ...)
returns the scenario dict; make_spec(...) builds a spec.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
EMUL = os.path.join(ROOT, "tools", "emulated_power")
sys.path.insert(0, EMUL)

from anchor_emul import EMULATED_NOTICE, phasefile  # noqa: E402

DEFAULT_PHASES = [
	# name, ms, pkg_w, dram_w, kind, gpu_w (used with gpu=True)
	("data", 40, 6.0, 1.0, "sleep", 60.0),
	("forward", 60, 25.0, 3.0, "spin", 250.0),
	("backward", 120, 35.0, 4.0, "spin", 300.0),
	("step", 20, 15.0, 5.0, "spin", 120.0),
]


def make_spec(phases=DEFAULT_PHASES, repeat=20, jitter=0.2, sequence=None,
	      lead_in_s=None, lead_out_s=1.0, sampling_period=0.1, seed=1):
	"""A spec dict; lead-in defaults to max(1 s, one sampling period).
	phases: tuples (name, ms, pkg_w, dram_w, kind[, gpu_w])."""
	return {
		"notice": EMULATED_NOTICE,
		"phases": [{"name": p[0], "ms": p[1], "pkg_w": p[2], "dram_w": p[3], "kind": p[4],
			    "gpu_w": p[5] if len(p) > 5 else 0.0, "jitter": jitter}
			   for p in phases],
		"sequence": sequence or [p[0] for p in phases],
		"repeat": repeat,
		"lead_in_s": lead_in_s if lead_in_s is not None else max(1.0, sampling_period),
		"lead_out_s": lead_out_s,
		"seed": seed,
	}


def _env(libanchor, ring, preload):
	env = dict(os.environ)
	pp = [EMUL, os.path.join(ROOT, "build", "python")]
	if env.get("PYTHONPATH"):
		pp.append(env["PYTHONPATH"])
	env["PYTHONPATH"] = os.pathsep.join(pp)
	if preload:
		env["ANCHOR_FILE"] = ring
		env["LD_PRELOAD"] = libanchor + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
	return env


def run(out, spec, sampling_period=0.1, noise=0.0, python=None, libanchor=None,
	preload=True, trace=False, seed=1, timeout_s=600, quiet=False, max_range_uj=None,
	gpu=False, gpu_avg_ms=0.0, gpu_coverage=1.0, updater_args=(), workload=None, workload_args=()):
	"""workload: another program in workload.py's place (it takes the same
	--spec/--phase-file/--log, publishes its phases and writes the log;
	e.g. tests/victims/torch_truth_train.py), with workload_args after."""
	python = python or sys.executable
	libanchor = libanchor or os.path.join(ROOT, "build", "libanchor.so")
	if preload and not os.path.exists(libanchor):
		raise FileNotFoundError(f"{libanchor}: build it first (make)")
	os.makedirs(out, exist_ok=True)
	p = lambda *x: os.path.join(out, *x)  # noqa: E731
	with open(p("spec.json"), "w") as f:
		json.dump(spec, f, indent=1)
	for stale in ("truth.json", "run.ring", "instances.csv", "scenario.json"):
		if os.path.exists(p(stale)):
			os.unlink(p(stale))
	plain = _env(libanchor, p("run.ring"), False)
	icmd = [python, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--init"]
	if max_range_uj:
		icmd += ["--max-range-uj", str(max_range_uj)]
	if gpu:
		icmd += ["--gpu"]
	if os.path.exists(p("powercap")):
		shutil.rmtree(p("powercap"))
	subprocess.run(icmd, env=plain, check=True)
	phasefile.create(p("phase.mmap"))
	ucmd = [python, "-m", "anchor_emul.updater", "--powercap", p("powercap"), "--model", "phase",
		"--spec", p("spec.json"), "--phase-file", p("phase.mmap"), "--truth", p("truth.json"),
		"--ready-file", p("updater.ready"), "--noise", str(noise), "--seed", str(seed),
		"--gpu-avg-ms", str(gpu_avg_ms), "--gpu-coverage", str(gpu_coverage)]
	if trace:
		ucmd += ["--trace", p("counters.csv")]
	ucmd += list(updater_args)  # e.g. glitches (anchor_emul.updater --help)
	if os.path.exists(p("updater.ready")):
		os.unlink(p("updater.ready"))
	upd = subprocess.Popen(ucmd, env=plain)
	try:
		t0 = time.monotonic()
		while not os.path.exists(p("updater.ready")):
			if upd.poll() is not None:
				raise RuntimeError(f"updater exited with {upd.returncode} before it was ready")
			if time.monotonic() - t0 > 30:
				raise RuntimeError("updater not ready after 30 s")
			time.sleep(0.01)
		pcmd = [python, "-m", "anchor_emul.perun", "--powercap", p("powercap"), "monitor",
			"--data_out", p("perun"), "--sampling_period", str(sampling_period),
			workload or os.path.join(HERE, "workload.py"), "--spec", p("spec.json"),
			"--phase-file", p("phase.mmap"), "--log", p("instances.csv")] + list(workload_args)
		started = time.time()
		res = subprocess.run(pcmd, env=_env(libanchor, p("run.ring"), preload), timeout=timeout_s,
				     stdout=subprocess.DEVNULL if quiet else None)
		elapsed = time.time() - started
	finally:
		if upd.poll() is None:
			upd.send_signal(signal.SIGTERM)
		upd.wait(timeout=30)
	if upd.returncode != 0:
		raise RuntimeError(f"updater exited with {upd.returncode}")
	scenario = {
		"notice": EMULATED_NOTICE,
		"sampling_period_s": sampling_period,
		"noise_rel": noise,
		"perun_exit": res.returncode,
		"wall_s": elapsed,
		"preloaded": preload,
		"gpu": gpu,
		"gpu_avg_ms": gpu_avg_ms if gpu else None,
		"files": {
			"spec": p("spec.json"), "ring": p("run.ring") if preload else None,
			"perun_hdf5": p("perun", os.path.splitext(os.path.basename(workload or "workload.py"))[0] + ".hdf5"), "truth": p("truth.json"),
			"instances": p("instances.csv"), "marker": p("perun", "EMULATED_SENSOR.txt"),
			"counters": p("counters.csv") if trace else None,
		},
		"perun_command": pcmd,
	}
	with open(p("scenario.json"), "w") as f:
		json.dump(scenario, f, indent=1)
	if res.returncode != 0:
		raise RuntimeError(f"perun exited with {res.returncode}")
	return scenario


def _phase_arg(s):
	parts = s.split(":")
	kind = "spin"
	if parts[-1] in ("spin", "sleep"):
		kind = parts.pop()
	if len(parts) not in (4, 5):
		raise argparse.ArgumentTypeError("NAME:MS:PKG_W:DRAM_W[:GPU_W][:spin|sleep]")
	gpu_w = float(parts[4]) if len(parts) == 5 else 0.0
	return (parts[0], float(parts[1]), float(parts[2]), float(parts[3]), kind, gpu_w)


def main():
	ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
	ap.add_argument("--out", required=True)
	ap.add_argument("--sampling-period", type=float, default=0.1)
	ap.add_argument("--spec", help="use this spec file instead of --phase/--repeat/--jitter")
	ap.add_argument("--phase", action="append", type=_phase_arg, help="NAME:MS:PKG_W:DRAM_W[:GPU_W][:spin|sleep]")
	ap.add_argument("--gpu", action="store_true", help="add an emulated GPU (stub pynvml for perun's NVML backend)")
	ap.add_argument("--gpu-avg-ms", type=float, default=0.0, help="GPU power reading averaged over this window (0: current)")
	ap.add_argument("--repeat", type=int, default=20)
	ap.add_argument("--jitter", type=float, default=0.2)
	ap.add_argument("--noise", type=float, default=0.0)
	ap.add_argument("--seed", type=int, default=1)
	ap.add_argument("--no-preload", action="store_true", help="run perun without libanchor.so")
	ap.add_argument("--trace", action="store_true", help="write counters.csv (every updater tick)")
	a = ap.parse_args()
	if a.spec:
		with open(a.spec) as f:
			spec = json.load(f)
	else:
		spec = make_spec(a.phase or DEFAULT_PHASES, a.repeat, a.jitter,
				 sampling_period=a.sampling_period, seed=a.seed)
	s = run(a.out, spec, a.sampling_period, a.noise, preload=not a.no_preload, trace=a.trace, seed=a.seed,
		gpu=a.gpu, gpu_avg_ms=a.gpu_avg_ms)
	with open(s["files"]["truth"]) as f:
		truth = json.load(f)
	print(f"{EMULATED_NOTICE}: scenario in {a.out}")
	for name, ph in sorted(truth["phases"].items()):
		e = ph["energy_j"]
		gpu = f"  gpu {e['gpu']:9.3f} J" if "gpu" in e else ""
		print(f"  {name:12s} {ph['seconds']:8.3f} s  package {e['package']:9.3f} J  dram {e['dram']:8.3f} J{gpu}")
	for d, dv in truth["devices"].items():
		print(f"  total {d:8s} {dv['total_j']:9.3f} J")
	return 0


if __name__ == "__main__":
	sys.exit(main())
