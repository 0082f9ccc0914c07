"""Cost of libanchor's ANCHOR_SENSORS sampler on the host process.

  python3 bench/sensor_cost.py [--seconds 10] [--hz 1000]

Runs a Python process under libanchor.so with ANCHOR_SENSORS=rapl,nvml over
an emulated powercap tree (package + dram energy_uj files) and the C NVML
stub (one GPU counter): 3 counters per tick.  The process finds the
"anchor-sensors" thread in /proc/self/task and reports its CPU time
(schedstat, ns on CPU) over the run as a percentage of one core, with the
ticks it achieved.  Emulated sensor, not a measurement: a real sysfs
energy_uj read and a real nvmlDeviceGetTotalEnergyConsumption cost more
than these files; see BENCHMARKS.md.
Second part: a fixed CPU-bound loop in the main thread, timed with and
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


def main():
	ap = argparse.ArgumentParser()
	ap.add_argument("--seconds", type=float, default=10.0)
	ap.add_argument("--hz", type=int, default=1000)
	a = ap.parse_args()
	tmp = tempfile.mkdtemp(prefix="anchor-sensor-cost.")
	pc = os.path.join(tmp, "powercap")
	subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--init", "--gpu"],
		       env=dict(os.environ, PYTHONPATH=EMUL), check=True)
	stub = os.path.join(tmp, "libnvml_stub.so")
	subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", stub, os.path.join(EMUL, "nvml_stub", "libnvml_stub.c")],
		       check=True)
	base = dict(os.environ, LD_PRELOAD=os.path.join(BUILD, "libanchor.so"))
	sens = dict(base, ANCHOR_SENSORS="rapl,nvml", ANCHOR_POWERCAP_ROOT=pc, ANCHOR_NVML_LIB=stub,
		    ANCHOR_EMUL_NVML_ROOT=pc, ANCHOR_SENSOR_HZ=str(a.hz))
	ring = os.path.join(tmp, "cost.ring")
	r = subprocess.run([sys.executable, "-c", PROBE, str(a.seconds)], env=dict(sens, ANCHOR_FILE=ring),
			   capture_output=True, text=True, check=True)
	vals = dict(line.split() for line in r.stdout.splitlines())
	d = subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", "--ring", ring], capture_output=True, text=True,
			   check=True).stdout
	ticks = sum(1 for line in d.splitlines() if ",sensor," in line)
	cpu_s = int(vals.get("sampler_cpu_ns", 0)) / 1e9
	print(f"sampler at {a.hz} Hz asked, 3 counters (2 RAPL files + NVML stub), {a.seconds:.0f} s idle host:")
	print(f"  ticks written {ticks} ({ticks / a.seconds:.0f}/s), sampler thread CPU {cpu_s * 1e3:.1f} ms "
	      f"= {100 * cpu_s / a.seconds:.3f} % of one core, {cpu_s / max(ticks, 1) * 1e6:.1f} us per tick")
	spin = {}
	for name, env in (("without", dict(base, ANCHOR_FILE=os.path.join(tmp, "s0.ring"))),
			  ("with", dict(sens, ANCHOR_FILE=os.path.join(tmp, "s1.ring")))):
		r = subprocess.run([sys.executable, "-c", SPIN], env=env, capture_output=True, text=True, check=True)
		spin[name] = float(r.stdout.split()[1])
	print(f"  busy main thread (best of 5): {spin['without'] * 1e3:.1f} ms without, {spin['with'] * 1e3:.1f} ms with "
	      f"the sampler ({100 * (spin['with'] / spin['without'] - 1):+.2f} %)")
	print("  emulated sensor, not a measurement")


if __name__ == "__main__":
	main()
