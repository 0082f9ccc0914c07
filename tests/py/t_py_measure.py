"""anchor.measure: live joules from the counters the process reads itself,
checked against the emulated sensor (tools/emulated_power) at known power.

The updater advances an emulated powercap tree (package 40 W, dram 4 W)
and an emulated GPU (100 W, read through the stub pynvml's
nvmlDeviceGetTotalEnergyConsumption) only while the workload publishes
phase "eval"; before and after, 0 W.  The workload opens
`anchor.measure("eval")`, waits 0.1 s at 0 W, publishes "eval" for 0.3 s,
publishes "off", and waits (a condition, not a time: the emulated GPU's
power file shows 0 W again, written after the counters) until the updater
has written the phase's energy before leaving the block.  The package counter
starts 5 J below its max_energy_range_uj, so it wraps inside the window.

Checks: m.by_sensor equals the updater's ledger for "eval" per device
(RAPL to 1e-5 J: the counters hold whole µJ; GPU to 2 mJ: NVML's unit) and
the known power x the published phase time; m.joules is their sum; the
block is an anchor range; without readable counters joules is None and
`skipped` says why.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYDIR, PYTHON, ROOT, TMP, check, dump, events, need_build, run_py  # noqa: E402

need_build()
EMUL = os.path.join(ROOT, "tools", "emulated_power")
STUB = os.path.join(EMUL, "nvml_stub")
d = os.path.join(TMP, "measure")
os.makedirs(d, exist_ok=True)
pc = os.path.join(d, "powercap")
env = dict(os.environ, PYTHONPATH=EMUL)
MAX_UJ = 20_000_000
subprocess.run([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--init", "--gpu", "--max-range-uj",
                str(MAX_UJ), "--start-uj", str(MAX_UJ - 5_000_000)], env=env, check=True)
spec = os.path.join(d, "spec.json")
json.dump({"phases": [{"name": "eval", "pkg_w": 40.0, "dram_w": 4.0, "gpu_w": 100.0}]}, open(spec, "w"))
phf = os.path.join(d, "phase.bin")
sys.path.insert(0, EMUL)
from anchor_emul import phasefile  # noqa: E402

phasefile.create(phf)
truth, ready = os.path.join(d, "truth.json"), os.path.join(d, "ready")
upd = subprocess.Popen([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "phase", "--spec", spec,
                        "--phase-file", phf, "--truth", truth, "--ready-file", ready], env=env)
try:
    for _ in range(600):
        if os.path.exists(ready) or upd.poll() is not None:
            break
        time.sleep(0.05)
    check(os.path.exists(ready), "updater did not start")
    ring = os.path.join(d, "run.ring")
    p = run_py(r'''
import json, os, sys, time
import anchor
from anchor_emul import phasefile
pub = phasefile.Publisher(sys.argv[1])
power = os.path.join(os.environ["ANCHOR_EMUL_NVML"], "gpu0", "power_mw")
def until(mw):
    # The updater writes every counter, then the GPU power, each tick:
    # once the power shows the new phase, the counters hold the old one.
    while int(open(power).read().strip()) != mw:
        time.sleep(0.005)
with anchor.measure("eval") as m:
    time.sleep(0.1)
    t0 = pub.publish(1)
    until(100_000)
    time.sleep(0.3)
    t1 = pub.publish(0)
    until(0)
print(json.dumps({"joules": m.joules, "by": m.by_sensor, "seconds": m.seconds, "watts": m.watts,
                  "skipped": m.skipped, "phase_s": (t1 - t0) / 1e9}))
m2 = anchor.measure(powercap=os.path.join(sys.argv[1] + ".none"), nvml=False)
m2.start(); m2.stop()
print(json.dumps({"joules": m2.joules, "skipped": m2.skipped}))
''', ring, False, args=(phf,), extra={"PYTHONPATH_TAIL": EMUL + os.pathsep + STUB, "ANCHOR_POWERCAP": pc,
                                      "ANCHOR_EMUL_NVML": os.path.join(pc, "nvml")})
finally:
    upd.send_signal(signal.SIGTERM)
    upd.wait(timeout=60)
lines = p.stdout.strip().splitlines()
got, none = json.loads(lines[-2]), json.loads(lines[-1])
t = json.load(open(truth))["phases"]["eval"]
tsec, t = t["seconds"], t["energy_j"]
print("measured", got["by"], "truth", t)
by = got["by"]
check(set(by) == {"cpu_0_package-0", "ram_0_dram", "gpu_0"}, "sensors: %s (skipped %s)" % (sorted(by), got["skipped"]))
check(abs(by["cpu_0_package-0"] - t["package"]) <= 1e-5, "package %.6f J vs truth %.6f J (wrap?)"
      % (by["cpu_0_package-0"], t["package"]))
check(abs(by["ram_0_dram"] - t["dram"]) <= 1e-5, "dram %.6f J vs truth %.6f J" % (by["ram_0_dram"], t["dram"]))
check(abs(by["gpu_0"] - t["gpu"]) <= 2e-3, "gpu %.4f J vs truth %.4f J" % (by["gpu_0"], t["gpu"]))
check(abs(by["cpu_0_package-0"] - 40.0 * tsec) <= 1e-5, "package = 40 W x the phase's time")
check(abs(got["joules"] - sum(by.values())) <= 1e-9, "joules is the sum over sensors")
check(got["seconds"] >= 0.4 and abs(got["watts"] - got["joules"] / got["seconds"]) <= 1e-9, "seconds, watts")
check(none["joules"] is None and "rapl" in none["skipped"], "no counters: joules None, skipped says why: %s" % none)
ev = [r for r in dump(ring) if r["name"] == "eval"]
check([r["kind"] for r in ev] == ["begin", "end"], "the measured block is an anchor range: %s" % ev)
print("ok")
