"""Cost of libanchor's ANCHOR_SENSORS sampler on the host process.

  python3 bench/sensor_cost.py [--seconds 10] [--hz 1000] [--rounds N]
      [--lib OLD.so --lib NEW.so] [--floor] [--spin]

Runs a Python process under libanchor.so with ANCHOR_SENSORS=rapl,nvml over
an emulated powercap tree (package + dram energy_uj files) and the C NVML
stub (one GPU counter): 3 counters per tick.  The process finds the
"anchor-sensors" thread in /proc/self/task and reports its CPU time
(schedstat, ns on CPU) over the run as a percentage of one core, with the
ticks it achieved.  Emulated sensor, not a measurement: a real sysfs
energy_uj read and a real nvmlDeviceGetTotalEnergyConsumption cost more
than these files; see BENCHMARKS.md.
--lib twice: both libraries measured in every round, alternated, with the
per-tick ratio to the first.  --floor: bench/sensor_floor.c on the same
files (bare 1 kHz wake, each read), the part no sampler can avoid.
--spin: a fixed CPU-bound loop in the main thread, timed with and
without the sampler (best of 5 each), as the slowdown of a busy process.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
EMUL = os.path.join(ROOT, "tools", "emulated_power")

PROBE = r"""
import os, sys, time
secs = float(sys.argv[1])
time.sleep(secs)
def cpu_ns(tid):
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        if f.read().strip() == "anchor-sensors":
            print("sampler_cpu_ns", cpu_ns(tid))
            # one voluntary switch per tick (the sleep); involuntary ones:
            # the sampler preempted mid-tick (load), which inflates it
            with open(f"/proc/self/task/{tid}/status") as st:
                for line in st:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        k, v = line.split(":")
                        print(k, v.strip())
print("main_cpu_ns", cpu_ns(os.getpid()))
"""

SPIN = r"""
import time
best = 1e9
for _ in range(5):
    t = time.perf_counter()
    x = 0
    for i in range(3_000_000):
        x += i * i
    best = min(best, time.perf_counter() - t)
print("spin_s", best)
"""


def sampler_cost(lib, sens, tmp, seconds, tag):
	"""(ticks, sampler CPU s) of one idle process under lib."""
	ring = os.path.join(tmp, f"cost-{tag}.ring")
	env = dict(sens, LD_PRELOAD=lib, ANCHOR_FILE=ring)
	r = subprocess.run([sys.executable, "-c", PROBE, str(seconds)], env=env, capture_output=True, text=True, check=True)
	vals = dict(line.split() for line in r.stdout.splitlines())
	d = subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", "--ring", ring], capture_output=True, text=True,
			   check=True).stdout
	os.unlink(ring)
	sampler_cost.switches = (int(vals.get("voluntary_ctxt_switches", 0)), int(vals.get("nonvoluntary_ctxt_switches", 0)))
	return sum(1 for line in d.splitlines() if ",sensor," in line), int(vals.get("sampler_cpu_ns", 0)) / 1e9


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("--seconds", type=float, default=10.0)
	ap.add_argument("--hz", type=int, default=1000)
	ap.add_argument("--lib", action="append", help="libanchor.so to measure (repeat: alternated within each round; "
			"ratios against the first) [build/libanchor.so]")
	ap.add_argument("--rounds", type=int, default=1)
	ap.add_argument("--floor", action="store_true", help="also run bench/sensor_floor.c on the same files: "
			"what a bare 1 kHz wake and each read cost here")
	ap.add_argument("--spin", action="store_true", help="also time a busy main thread with and without the sampler")
	a = ap.parse_args()
	libs = a.lib or [os.path.join(BUILD, "libanchor.so")]
	tmp = tempfile.mkdtemp(prefix="anchor-sensor-cost.")
	pc = os.path.join(tmp, "powercap")
	subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--init", "--gpu"],
		       env=dict(os.environ, PYTHONPATH=EMUL), check=True)
	stub = os.path.join(tmp, "libnvml_stub.so")
	subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", stub, os.path.join(EMUL, "nvml_stub", "libnvml_stub.c")],
		       check=True)
	sens = dict(os.environ, ANCHOR_SENSORS="rapl,nvml", ANCHOR_POWERCAP_ROOT=pc, ANCHOR_NVML_LIB=stub,
		    ANCHOR_EMUL_NVML_ROOT=pc, ANCHOR_SENSOR_HZ=str(a.hz))
	print(f"sampler at {a.hz} Hz asked, 3 counters (2 RAPL files + NVML stub), {a.seconds:g} s idle host, "
	      f"{a.rounds} round(s), libraries alternated within each round:")
	per = {lib: [] for lib in libs}
	for r in range(a.rounds):
		for i, lib in enumerate(libs):
			ticks, cpu_s = sampler_cost(lib, sens, tmp, a.seconds, f"{r}-{i}")
			per[lib].append((ticks, cpu_s))
			print(f"  round {r + 1} lib {i + 1}: ticks {ticks} ({ticks / a.seconds:.0f}/s), sampler CPU "
			      f"{cpu_s * 1e3:.1f} ms = {100 * cpu_s / a.seconds:.3f} % of one core, "
			      f"{cpu_s / max(ticks, 1) * 1e6:.1f} us per tick; context switches {sampler_cost.switches[0]} "
			      f"voluntary, {sampler_cost.switches[1]} preempted")
	for i, lib in enumerate(libs):
		us = sorted(c / max(t, 1) * 1e6 for t, c in per[lib])
		pct = sorted(100 * c / a.seconds for _t, c in per[lib])
		line = f"  lib {i + 1} ({lib}): median {us[len(us) // 2]:.1f} us per tick, {pct[len(pct) // 2]:.3f} % of one core"
		if i:
			ratios = sorted((c / max(t, 1)) / (c0 / max(t0, 1)) for (t, c), (t0, c0) in zip(per[lib], per[libs[0]]))
			line += f"; per-tick ratio to lib 1 median {ratios[len(ratios) // 2]:.3f} [{ratios[0]:.3f}, {ratios[-1]:.3f}]"
		print(line)
	if a.floor:
		exe = os.path.join(tmp, "sensor_floor")
		subprocess.run(["cc", "-O2", "-o", exe, os.path.join(ROOT, "bench", "sensor_floor.c"), "-ldl"], check=True)
		files = sorted(os.path.join(dp, f) for dp, _d, fs in os.walk(pc) for f in fs
			       if f == "energy_uj" and "intel-rapl" in dp)
		print("floor (bench/sensor_floor.c, same files and stub):")
		sys.stdout.flush()
		subprocess.run([exe, str(max(a.rounds, 3)), "1", str(a.hz), stub, *files], env=sens, check=True)
	if a.spin:
		base = dict(os.environ, LD_PRELOAD=libs[0])
		spin = {}
		for name, env in (("without", dict(base, ANCHOR_FILE=os.path.join(tmp, "s0.ring"))),
				  ("with", dict(sens, LD_PRELOAD=libs[0], ANCHOR_FILE=os.path.join(tmp, "s1.ring")))):
			r = subprocess.run([sys.executable, "-c", SPIN], env=env, capture_output=True, text=True, check=True)
			spin[name] = float(r.stdout.split()[1])
		print(f"  busy main thread (best of 5): {spin['without'] * 1e3:.1f} ms without, {spin['with'] * 1e3:.1f} ms "
		      f"with the sampler ({100 * (spin['with'] / spin['without'] - 1):+.2f} %)")
	print("  emulated sensor, not a measurement")


if __name__ == "__main__":
	main()
