"""anchorpost phases end to end on real perun runs (emulated RAPL sensor):
rows add up to perun's total, every row names its alignment and says the
sensor is emulated; bad input: files from different runs, a ring without
phases, a perun file without power sensors (times, no joules)."""
import csv
import os
import subprocess
import sys

root = os.environ["ANCHOR_ROOT"]
T = os.environ["ANCHOR_TEST_TMP"]
B = os.environ["BUILD"]
PY = os.environ["PYTHON"]
AP = os.path.join(B, "anchorpost")
sys.path.insert(0, os.path.join(root, "tools", "groundtruth"))
import run_scenario  # noqa: E402

fails = 0


def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond


os.environ["ANCHOR_AUTO"] = "perun"
os.environ["ANCHOR_SYNC_PULSE"] = "0"
phases = [("fwd", 60, 40, 5, "spin"), ("bwd", 90, 70, 8, "spin"), ("step", 30, 30, 4, "spin")]
for name in ("a", "b"):
    run_scenario.run(os.path.join(T, name), run_scenario.make_spec(phases=phases, repeat=15, lead_in_s=0.5,
                                                                    lead_out_s=0.5), quiet=True)
ring_a, perun_a = os.path.join(T, "a", "run.ring"), os.path.join(T, "a", "perun", "workload.hdf5")
perun_b = os.path.join(T, "b", "perun", "workload.hdf5")

out = os.path.join(T, "phases.csv")
r = subprocess.run([AP, "phases", "--ring", ring_a, "--perun", perun_a, "-o", out], capture_output=True, text=True)
print(r.stdout)
check(r.returncode == 0, "phases exit 0")
rows = list(csv.DictReader(open(out)))
for g in ("cpu", "ram"):
    gr = [x for x in rows if x["scope"] == "all" and x["device_group"] == g]
    total = float([x for x in gr if x["phase"] == "(total)"][0]["energy_j"])
    parts = sum(float(x["energy_j"]) for x in gr if x["phase"] != "(total)" and x["energy_j"])
    check(abs(parts - total) <= 0.01 * total, f"{g}: phases + unattributed = {parts:.3f} J, perun total {total:.3f} J")
    counts = {x["phase"]: x["count"] for x in gr}
    check(counts.get("fwd") == "15" and counts.get("bwd") == "15" and counts.get("step") == "15",
          f"{g}: 15 occurrences of each phase ({counts})")
check(all(x["alignment"] == "perun-hook" for x in rows), "alignment perun-hook on every row")
check(all(x["sensor_note"] == "emulated sensor, not a measurement" for x in rows), "every row says emulated")
check("emulated sensor, not a measurement" in r.stdout, "the table says emulated")

# Different runs: ring of run a, perun of run b.
out2 = os.path.join(T, "mismatch.csv")
r = subprocess.run([AP, "phases", "--ring", ring_a, "--perun", perun_b, "-o", out2], capture_output=True, text=True)
err = r.stderr.strip().splitlines()
check(r.returncode == 1 and len(err) == 1 and "different runs" in err[0] and perun_b in err[0]
      and not os.path.exists(out2), f"different runs refused: {r.stderr.strip()}")

# A ring without phases.
empty = os.path.join(T, "empty.ring")
subprocess.run(["true"], env=dict(os.environ, LD_PRELOAD=os.path.join(B, "libanchor.so"), ANCHOR_FILE=empty),
               check=True)
r = subprocess.run([AP, "phases", "--ring", empty, "--perun", perun_a], capture_output=True, text=True)
check(r.returncode == 1 and "no phases" in r.stderr and empty in r.stderr, f"ring without phases: {r.stderr.strip()}")

# perun without power sensors: plain perun here reads psutil only.
script = os.path.join(T, "marks.py")
open(script, "w").write(
    "import time, anchor\n"
    "for i in range(6):\n"
    "    with anchor.phase('work'):\n"
    "        t = time.time()\n"
    "        while time.time() - t < 0.15: pass\n"
    "    with anchor.phase('rest'):\n"
    "        time.sleep(0.1)\n")
ring_p = os.path.join(T, "psutil.ring")
env = dict(os.environ, LD_PRELOAD=os.path.join(B, "libanchor.so"), ANCHOR_FILE=ring_p)
subprocess.run([PY, "-m", "perun", "monitor", "--data_out", os.path.join(T, "psutil"), "--sampling_period", "0.1",
                script], env=env, check=True, capture_output=True)
h5 = [f for f in os.listdir(os.path.join(T, "psutil")) if f.endswith(".hdf5")][0]
out3 = os.path.join(T, "psutil.csv")
r = subprocess.run([AP, "phases", "--ring", ring_p, "--perun", os.path.join(T, "psutil", h5), "-o", out3],
                   capture_output=True, text=True)
rows = list(csv.DictReader(open(out3))) if os.path.exists(out3) else []
work = [x for x in rows if x["phase"] == "work"]
check(r.returncode == 0 and "no power sensors" in r.stderr, f"psutil-only: says so ({r.stderr.strip()})")
check(bool(work) and work[0]["count"] == "6" and work[0]["energy_j"] == "" and
      work[0]["method"] == "no-power-sensor", "psutil-only: times reported, no joules")
print("failures:", fails)
sys.exit(1 if fails else 0)
