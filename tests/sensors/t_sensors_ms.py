"""ANCHOR_SENSORS: which process samples, and failing without harm.

Emulated powercap tree (anchor_emul, counters standing still: no updater)
and the C NVML stub (tools/emulated_power/nvml_stub/libnvml_stub.c, built
here), real Python processes under libanchor.so:
  1. a run whose first process forks a child and starts an exec'd child on
     the same ring: exactly one process samples (the first), at ~1 kHz
     asked, with a SENSOR_DESC naming package-0, dram and gpu0 and marking
     the emulated sensor; a child started on another ring (a new run)
     samples into that ring;
  2. nothing to sample (no powercap tree, no NVML library): the program's
     output and exit status are unchanged and libanchor says why in one
     stderr line;
  3. a bad ANCHOR_SENSOR_HZ or ANCHOR_SENSORS: one line, program unchanged;
  4. ANCHOR_SENSOR_HZ=200: about 200 ticks a second.
Emulated sensor, not a measurement.  Rates are printed, and checked only
loosely (a loaded machine delays ticks; never faster than asked).
"""
import csv
import os
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
EMUL = os.path.join(ROOT, "tools", "emulated_power")
fails = []

CHILD_SCRIPT = r"""
import os, subprocess, sys, time
time.sleep(0.3)
pid = os.fork()
if pid == 0:
    time.sleep(0.2)
    os._exit(0)
subprocess.run([sys.executable, "-c", "import time; time.sleep(0.2)"], check=True)
env = dict(os.environ, ANCHOR_FILE=sys.argv[1])
subprocess.run([sys.executable, "-c", "import time; time.sleep(0.3)"], env=env, check=True)
os.waitpid(pid, 0)
print("child-script-done")
"""


def check(cond, msg):
	print(("ok   " if cond else "FAIL ") + msg)
	if not cond:
		fails.append(msg)


def dump(ring):
	out = ring + ".csv"
	subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", "--ring", ring, "-o", out], check=True)
	with open(out) as f:
		return list(csv.DictReader(f))


def rate(rows):
	t = [int(r["mono_ns"]) for r in rows if r["kind"] == "sensor"]
	return (len(t) - 1) / ((t[-1] - t[0]) / 1e9) if len(t) > 2 else 0.0


def run(env_extra, code, args=()):
	env = dict(os.environ, LD_PRELOAD=os.path.join(BUILD, "libanchor.so"), **env_extra)
	return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120)


def main():
	pc = os.path.join(TMP, "powercap")
	subprocess.run([sys.executable, "-m", "anchor_emul.updater", "--powercap", pc, "--init", "--gpu"],
		       env=dict(os.environ, PYTHONPATH=EMUL), check=True)
	stub = os.path.join(TMP, "libnvml_stub.so")
	subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-shared", "-fPIC", "-o", stub,
			os.path.join(EMUL, "nvml_stub", "libnvml_stub.c")], check=True)
	sens = dict(ANCHOR_SENSORS="rapl,nvml", ANCHOR_POWERCAP_ROOT=pc, ANCHOR_NVML_LIB=stub, ANCHOR_EMUL_NVML_ROOT=pc)

	# 1. who samples
	ring, ring2 = os.path.join(TMP, "a.ring"), os.path.join(TMP, "b.ring")
	r = run(dict(sens, ANCHOR_FILE=ring), CHILD_SCRIPT, (ring2,))
	check(r.returncode == 0 and "child-script-done" in r.stdout, f"program ran: rc {r.returncode} {r.stderr[-300:]}")
	check("sensors:" not in r.stderr, f"no sensor complaint: {r.stderr.strip()[-300:]!r}")
	rows = dump(ring)
	starts = [x for x in rows if x["kind"] == "proc_start"]
	first = starts[0]["pid"] if starts else None
	spids = {x["pid"] for x in rows if x["kind"] == "sensor"}
	check(spids == {first}, f"only the first process sampled: sampling {sorted(spids)}, first {first}, "
	      f"processes {len({x['pid'] for x in starts})}")
	desc = [x["name"] for x in rows if x["kind"] == "sensor_desc"]
	check(bool(desc) and desc[0].startswith("c0=cpu|package-0|1e-6|") and "c1=ram|dram|" in desc[0]
	      and "c2=gpu|gpu0|1e-3|0" in desc[0] and "emulated=1" in desc[0], f"desc: {desc[:1]}")
	hz = rate(rows)
	print(f"     1 kHz asked: {hz:.0f} ticks/s")
	check(200 < hz < 1100, f"ticks at about 1 kHz (loose: loaded machine): {hz:.0f}")
	vals = [x["name"].split(";") for x in rows if x["kind"] == "sensor"]
	check(vals and all(len(v) == 3 for v in vals), "every tick holds the 3 counters")
	rows2 = dump(ring2)
	check({x["pid"] for x in rows2 if x["kind"] == "sensor"} == {rows2[0]["pid"]} if rows2 else False,
	      "a child on another ring (a new run) samples into it")

	# 2. nothing to sample
	plain = run({"ANCHOR_FILE": os.path.join(TMP, "c.ring")}, "print('same'); raise SystemExit(3)")
	r = run({"ANCHOR_FILE": os.path.join(TMP, "d.ring"), "ANCHOR_SENSORS": "rapl,nvml",
		 "ANCHOR_POWERCAP_ROOT": os.path.join(TMP, "nope"), "ANCHOR_NVML_LIB": os.path.join(TMP, "nope.so")},
		"import time; time.sleep(0.2); print('same'); raise SystemExit(3)")
	lines = [x for x in r.stderr.splitlines() if "sensors:" in x]
	check(r.returncode == plain.returncode == 3 and r.stdout == plain.stdout, "output and status unchanged")
	check(len(lines) == 1 and "RAPL not sampled" in lines[0] and "GPU energy not sampled" in lines[0]
	      and "sampler off" in lines[0], f"one stderr line says why: {lines}")

	# 3. bad settings
	for extra, what in (({"ANCHOR_SENSOR_HZ": "fast"}, "ANCHOR_SENSOR_HZ"), ({"ANCHOR_SENSORS": "ipmi"}, "ANCHOR_SENSORS")):
		env = dict(sens, ANCHOR_FILE=os.path.join(TMP, "e.ring"))
		env.update(extra)
		r = run(env, "print('same'); raise SystemExit(3)")
		lines = [x for x in r.stderr.splitlines() if "sensors:" in x]
		check(r.returncode == 3 and r.stdout == "same\n" and len(lines) == 1 and what in lines[0],
		      f"bad {what}: one line, program unchanged: {lines}")

	# 4. another rate
	ring = os.path.join(TMP, "f.ring")
	r = run(dict(sens, ANCHOR_FILE=ring, ANCHOR_SENSOR_HZ="200"), "import time; time.sleep(0.6)")
	hz = rate(dump(ring))
	print(f"     200 Hz asked: {hz:.0f} ticks/s")
	check(r.returncode == 0 and 60 < hz < 220, f"ANCHOR_SENSOR_HZ=200 gives about 200 ticks/s: {hz:.0f}")
	if fails:
		print(f"{len(fails)} check(s) failed")
		return 1
	return 0


if __name__ == "__main__":
	sys.exit(main())
