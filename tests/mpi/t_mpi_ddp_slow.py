"""End to end: examples/transformer_ddp.py on 2 ranks under
  mpirun -np 2 python -m anchor_emul.perun --powercap PC monitor ... (real
  perun 1.0 in MPI mode: one sampler for the host, on its lowest rank)
with libanchor.so preloaded into every rank (one ring per rank), gradients
averaged with mpi4py's Allreduce (interposed as MPI_Allreduce), rank 1 the
deliberate straggler (+500 ms forward per step: on 2 cores shared with
other work, scheduling noise reaches hundreds of ms a step), and the emulated RAPL
sensor driven by the CPU time of the whole mpirun tree (anchor_emul cpu
model: emulated sensor, not a measurement).  Checked with
`anchorpost phases --rings DIR --perun F --by-rank --stragglers S`:
  * both ranks, with their phases and MPI_Allreduce ranges, one per step;
  * the weights checksum agrees across ranks (the allreduce went through);
  * host and rank rows carry joules; the host's (total) matches the
    emulated counters over perun's span (perun's own ENERGY within 5 %);
  * rank 1 is the slowest rank in most steps, rank 0 waits longer.
"""
import importlib.util
import os
import re
import socket
import subprocess

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from mpi_testlib import PY, ROOT, TMP, BUILD, check, finish, mpirun, need, post, read_csv, skip  # noqa: E402

need("mpirun")
try:
    import h5py
except ImportError as e:
    skip("missing Python package: %s" % e)
# find_spec, not import: the test process never uses these itself, and
# importing it only to see whether it is there costs seconds.
_missing = [m for m in ("mpi4py", "perun", "torch") if importlib.util.find_spec(m) is None]
if _missing:
    skip("missing Python package: %s" % ", ".join(_missing))

STEPS = 10
emul = os.path.join(ROOT, "tools", "emulated_power")
env = dict(os.environ)
env["PYTHONPATH"] = os.pathsep.join([emul, os.path.join(BUILD, "python")] +
                                    ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
pc = os.path.join(TMP, "powercap")
subprocess.run([PY, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], check=True, env=env)
rings = os.path.join(TMP, "rings")
os.makedirs(rings)
perun_out = os.path.join(TMP, "perun")
os.environ["PYTHONPATH"] = env["PYTHONPATH"]
p = mpirun(2, os.path.join(rings, "run-%h-%r.ring"),
           [PY, "-m", "anchor_emul.perun", "--powercap", pc, "monitor", "--data_out", perun_out,
            "--sampling_period", "0.1", os.path.join(ROOT, "examples", "transformer_ddp.py"),
            "--steps", str(STEPS), "--slow-rank", "1", "--slow-ms", "500", "--batch-size", "4", "--seq-len", "8"],
           env_extra=(("PYTHONPATH", env["PYTHONPATH"]), ("OMPI_MCA_mpi_yield_when_idle", "1")))
upd = subprocess.Popen([PY, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu",
                        "--watch-pid", str(p.pid), "--truth", os.path.join(TMP, "truth.json")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
rc, out = finish(p, timeout=400)
upd.wait(timeout=60)
check(rc == 0, "mpirun exit %d:\n%s" % (rc, out[-3000:]))
# mpirun can splice two ranks' lines together (no newline between them):
# match each report on its own, non-greedy, and the number only.
sums = re.findall(r"rank (\d)/2 mpi4py: %d steps .*? weights checksum (-?[0-9.]+)" % STEPS, out)
check(len(sums) == 2 and sums[0][1] == sums[1][1], "ranks disagree on the weights: %s\n%s" % (sums, out[-2000:]))
h5 = os.path.join(perun_out, "transformer_ddp.hdf5")
check(os.path.exists(h5), "perun wrote no %s:\n%s" % (h5, out[-2000:]))
print("ok: 2 ranks x %d steps under perun MPI mode, weights agree (%s)" % (STEPS, sums[0][1]))

phases = os.path.join(TMP, "phases.csv")
strag = os.path.join(TMP, "stragglers.csv")
r = post("phases", "--rings", rings, "--perun", h5, "--by-rank", "-o", phases, "--stragglers", strag)
print(r.stdout)
rows = read_csv(phases)
host = socket.gethostname().split(".")[0]
for rank in ("0", "1"):
    mine = {x["phase"]: x for x in rows if x["scope"] == "rank" and x["rank"] == rank and x["device_group"] == "cpu"}
    for ph in ("train_step", "forward", "backward", "grad_sync", "MPI_Allreduce"):
        check(ph in mine and int(mine[ph]["count"]) == STEPS, "rank %s: phase %s count %s" %
              (rank, ph, mine.get(ph, {}).get("count")))
    check(mine["(total)"]["energy_j"] != "", "rank %s has no joules" % rank)
print("ok: both ranks present with their phases and %d MPI_Allreduce ranges each" % STEPS)

# Host total vs perun's own ENERGY (trapezoid; ours integrates the counter).
with h5py.File(h5, "r") as f:
    perun_j = {}

    def visit(name, obj):
        if name.endswith("metrics/ENERGY") and "/nodes/cpu/nodes/" in name:
            perun_j[name] = float(obj.attrs["value"])
    f.visititems(visit)
check(len(perun_j) == 1, "expected one cpu package sensor, found %s" % list(perun_j))
tot = [x for x in rows if x["scope"] == "host" and x["phase"] == "(total)" and x["device_group"] == "cpu"]
check(len(tot) == 1, "no host total row")
ours, theirs = float(tot[0]["energy_j"]), list(perun_j.values())[0]
check(abs(ours - theirs) <= 0.05 * theirs, "host cpu total %.2f J vs perun ENERGY %.2f J" % (ours, theirs))
print("ok: host %s cpu total %.2f J, perun's ENERGY %.2f J (emulated sensor)" % (host, ours, theirs))

srows = read_csv(strag)
slow1 = sum(1 for x in srows if x["rank"] == "1" and x["slowest"] == "1")
# Step 0 absorbs the ranks' start-up skew (perun sets up its sampler on
# rank 0 first): compare the waits of the steady steps.
wait = {k: sum(float(x["wait_ms"]) for x in srows if x["rank"] == k and x["step"] != "0") for k in ("0", "1")}
check(len(srows) == 2 * STEPS, "%d straggler rows" % len(srows))
check(slow1 >= 0.6 * STEPS, "rank 1 (+500 ms a step) slowest in only %d of %d steps" % (slow1, STEPS))
check(wait["0"] > wait["1"], "rank 0 should wait longer: %s" % wait)
check(all(x["wait_j"] != "" for x in srows), "wait joules missing")
print("ok: rank 1 slowest in %d/%d steps; waits %.0f ms (rank 0) vs %.0f ms (rank 1)" %
      (slow1, STEPS, wait["0"], wait["1"]))
