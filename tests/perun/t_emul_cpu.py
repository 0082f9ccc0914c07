"""The CPU-activity power model follows the watched process tree's CPU time.

A child process sleeps, spins one core, then spins in two processes (a
forked grandchild), and reports its own CPU time (getrusage, children
included).  The updater (--model cpu) watches it.  Checks:
  * package energy = idle_w * T + w_per_core * CPU seconds, within 3 %
    (+ 50 ms of CPU for the last poll before the process exits);
  * dram likewise with its own coefficients;
  * the traced power is near idle while sleeping and idle + w_per_core x
    (the core share the spinning process got) while it spins;
  * truth.json says "emulated sensor, not a measurement".
"""
import json
import os
import subprocess
import sys
import time

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
EMUL = os.path.join(ROOT, "tools", "emulated_power")
env = dict(os.environ, PYTHONPATH=EMUL)
IDLE, PER_CORE, D_IDLE, D_PER_CORE = 10.0, 20.0, 2.0, 3.0

CHILD = r"""
import os, resource, sys, time
def spin(s):
	end = time.monotonic() + s
	while time.monotonic() < end:
		pass
marks = {}
time.sleep(1.0)
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
# Spin 1.5 s, longer on a loaded machine until 0.4 CPU s were had (at most
# 15 s): the power step must stand clear of the polling noise.
marks["spin1"] = time.monotonic_ns(); c0 = cpu(); t0 = time.monotonic()
while time.monotonic() - t0 < 1.5 or (cpu() - c0 < 0.4 and time.monotonic() - t0 < 15):
	spin(0.05)
c1 = cpu(); marks["spin1_end"] = time.monotonic_ns()
marks["spin1_busy"] = (c1 - c0) / ((marks["spin1_end"] - marks["spin1"]) / 1e9)
time.sleep(0.5)
pid = os.fork()
if pid == 0:
	spin(1.0)
	os._exit(0)
spin(1.0)
os.waitpid(pid, 0)
time.sleep(0.5)
r = resource.getrusage(resource.RUSAGE_SELF); c = resource.getrusage(resource.RUSAGE_CHILDREN)
marks["cpu_s"] = r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime
with open(sys.argv[1], "w") as f:
	import json; json.dump(marks, f)
"""

fails = []


def check(cond, msg):
	print(("ok   " if cond else "FAIL ") + msg)
	if not cond:
		fails.append(msg)


pc = os.path.join(TMP, "powercap")
subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], env=env, check=True)
child = subprocess.Popen([sys.executable, "-c", CHILD, os.path.join(TMP, "marks.json")])
upd = subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu",
		      "--watch-pid", str(child.pid), "--idle-w", str(IDLE), "--w-per-core", str(PER_CORE),
		      "--dram-idle-w", str(D_IDLE), "--dram-w-per-core", str(D_PER_CORE),
		      "--truth", os.path.join(TMP, "truth.json"), "--trace", os.path.join(TMP, "trace.csv")],
		     env=env, timeout=120)
child.wait()
check(upd.returncode == 0 and child.returncode == 0, "updater and child exited cleanly")
truth = json.load(open(os.path.join(TMP, "truth.json")))
marks = json.load(open(os.path.join(TMP, "marks.json")))
T = (truth["t_end_mono_ns"] - truth["t_begin_mono_ns"]) / 1e9
cpu = marks["cpu_s"]
check(truth["notice"] == "emulated sensor, not a measurement", "truth.json says emulated")
for dev, idle, per in (("package", IDLE, PER_CORE), ("dram", D_IDLE, D_PER_CORE)):
	want = idle * T + per * cpu
	got = truth["devices"][dev]["total_j"]
	check(abs(got - want) < 0.03 * want + per * 0.05,
	      f"{dev}: {got:.2f} J vs idle {idle} W x {T:.2f} s + {per} W x {cpu:.2f} CPU s = {want:.2f} J ({(got - want) / want * 100:+.1f} %)")

rows = [tuple(int(x) for x in line.split(",")) for line in open(os.path.join(TMP, "trace.csv")) if line[0].isdigit()]


def mean_power(t0, t1):
	sel = [r for r in rows if t0 <= r[0] <= t1]
	return (sel[-1][2] - sel[0][2]) / 1e6 / ((sel[-1][0] - sel[0][0]) / 1e9)


t_b = truth["t_begin_mono_ns"]
p_sleep = mean_power(t_b + 200_000_000, marks["spin1"] - 100_000_000)
p_spin = mean_power(marks["spin1"] + 200_000_000, marks["spin1_end"] - 100_000_000)
check(abs(p_sleep - IDLE) < 0.1 * PER_CORE, f"sleeping: {p_sleep:.1f} W (idle {IDLE} W)")
# A loaded machine gives the spinning process less than a full core: expect
# the share it really got (its own getrusage over the spin).
busy = marks["spin1_busy"]
want = IDLE + PER_CORE * busy
# Tolerance: 15 % of a core's watts, tighter when the spinner got only a
# small share of a core (so the step above idle is never inside it).
tol = min(0.15 * PER_CORE, 0.25 * PER_CORE * busy + 0.3)
check(busy > 0.02 and abs(p_spin - want) < tol,
      f"spinning ({busy:.2f} cores by getrusage): {p_spin:.1f} W (expect {want:.1f} W)")
print(f"updater ticks {truth['ticks']}, tick p50 {truth['tick_ms']['p50']:.1f} ms p99 {truth['tick_ms']['p99']:.1f} ms")
for m in fails:
	print("failed: " + m)
sys.exit(1 if fails else 0)
