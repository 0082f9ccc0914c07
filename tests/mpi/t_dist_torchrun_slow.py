"""`anchorpost record -- torchrun --nproc_per_node 2 ...` then `report DIR`.

Real PyTorch DDP (gloo, CPU: tests/victims/ddp_train.py) on 2 ranks under
torchrun, recorded the way a new user would: perun (emulated RAPL sensor,
no RAPL here) runs record's launcher, which runs torchrun, whose agent
starts the ranks; py-spy follows them; every process writes run.ring.
Before: report attributed perun's power to perun's own process (its
mpi4py MPI calls were the "phases") and exited 1 ("too few perun sample
windows over the phases of thread <perun's pid>").  Checked, on a short
run (60 steps) and a longer one (600):
  * report DIR exits 0 and shows every rank's block, phase rows with 95 %
    intervals, the stragglers; phases.csv has scope=rank rows for both;
  * the node split: both ranks' totals add up to the node's total, which
    is perun's own counter total (h5py on the HDF5); host rows are the
    sums of the ranks' (dist_testlib.check_report);
  * no rank is perun's process; the ranks' weights agree (real DDP);
  * `anchorpost` alone in the run directory gives the same per-rank
    tables and writes phases.csv, stragglers.csv, ranks.csv there.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from dist_testlib import check, check_report, read_csv  # noqa: E402
from pyanchor_util import ANCHORPOST, PYDIR, PYTHON, ROOT, TMP, need_build, skip  # noqa: E402

need_build()
missing = [m for m in ("torch", "h5py", "perun") if importlib.util.find_spec(m) is None]
if missing:
    skip("missing Python package: %s (scripts/install-deps.sh)" % ", ".join(missing))
torchrun = os.path.join(os.path.dirname(PYTHON), "torchrun")
if not os.path.exists(torchrun):
    skip("no torchrun beside %s" % PYTHON)

src = os.path.join(TMP, "src")
os.makedirs(src, exist_ok=True)
shutil.copy(os.path.join(ROOT, "tests", "victims", "ddp_train.py"), src)


def record(name, steps):
    out = os.path.join(TMP, name)
    env = dict(os.environ, PYTHONPATH=PYDIR, ANCHOR_PYTHON=PYTHON)
    for k in ("ANCHOR_FILE", "LD_PRELOAD", "ANCHOR_AUTO"):
        env.pop(k, None)
    p = subprocess.run([ANCHORPOST, "record", "-d", out, "--", "torchrun", "--nproc_per_node", "2", "ddp_train.py",
                        "--steps", str(steps)], capture_output=True, text=True, cwd=src, env=env, timeout=600)
    check(p.returncode == 0, "%s: record exit %d\n%s" % (name, p.returncode, p.stderr[-3000:]))
    sums = re.findall(r"rank (\d)/2 ddp: %d steps .*? weights checksum (-?[0-9.]+)" % steps, p.stdout + p.stderr)
    check(len(sums) == 2 and sums[0][1] == sums[1][1], "%s: the ranks' weights differ: %s" % (name, sums))
    meta = json.load(open(os.path.join(out, "record.json")))
    return out, meta


for name, steps in (("short", 60), ("long", 600)):
    out, meta = record(name, steps)
    h5 = os.path.join(out, "perun", "torchrun.hdf5")
    tty, rows, ranks = check_report(out, ["0", "1"], h5, "torchrun %s (%d steps)" % (name, steps),
                                    not_pids={meta["training_pid"]}, want_tty=("rank from", "RANK"))
    for r in ranks:
        check(r["rank_from"] == "RANK", "%s: rank %s from %r, want torchrun's RANK" % (name, r["rank"], r["rank_from"]))
    st = read_csv(os.path.join(out, "report", "stragglers.csv"))
    check(len(st) == 2 * steps, "%s: %d straggler rows, want %d (train_step on both ranks)" % (name, len(st), 2 * steps))
    print("ok: torchrun %s: report shows both ranks with intervals; %d straggler rows" % (name, len(st)))

# `anchorpost` alone in the (short) run's directory.
run_dir = os.path.join(TMP, "short")
p = subprocess.run([ANCHORPOST], capture_output=True, text=True, cwd=run_dir, timeout=300)
check(p.returncode == 0, "anchorpost alone: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))
check("scope rank vm" in p.stdout or re.search(r"scope rank \S+ rank 1:", p.stdout),
      "anchorpost alone shows no rank block:\n%s" % p.stdout[:3000])
here = read_csv(os.path.join(run_dir, "phases.csv"))
check({x["rank"] for x in here if x["scope"] == "rank"} == {"0", "1"}, "anchorpost alone: phases.csv ranks %s" %
      sorted({x["rank"] for x in here if x["scope"] == "rank"}))
check(os.path.exists(os.path.join(run_dir, "stragglers.csv")) and os.path.exists(os.path.join(run_dir, "ranks.csv")),
      "anchorpost alone wrote no stragglers.csv / ranks.csv")
print("ok: anchorpost alone in the run directory: both ranks' scopes in phases.csv")
print("PASS")
