"""`anchorpost record -- mpirun -n 2 ...` and `-- ./script.sh` (several Python
processes, no rank variables), then `report DIR`.

mpirun: examples/transformer_ddp.py, a real PyTorch model trained data
parallel over mpi4py (MPI_Allreduce of the gradients, anchored by
libanchor), on 2 ranks of Debian's OpenMPI under `anchorpost record`
(perun runs record's launcher, which runs mpirun; perun's own process
makes mpi4py calls of its own).  The shell script starts two Python
workers in the background and waits: no launcher sets a rank, so the
training processes are told apart by pid (scope "process"); worker b
ends first, so a's node share of its compute phase is above b's.
Before: report explained the node's power by perun's own process and
exited 1 (mpirun), or gave one table for one process and nothing for the
other (the script).  Checked for each (dist_testlib.check_report): report
exits 0 with a block per rank / process with intervals, the stragglers,
phases.csv scope rows for each, the node split adding up to perun's own
counter total; no rank is perun's, mpirun's or orted's process; mpirun's
ranks come from OMPI_COMM_WORLD_RANK, their MPI_Allreduce waits are seen.
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
missing = [m for m in ("torch", "h5py", "perun", "mpi4py") if importlib.util.find_spec(m) is None]
if missing:
    skip("missing Python package: %s (scripts/install-deps.sh)" % ", ".join(missing))
if not shutil.which("mpirun"):
    skip("mpirun not installed (Debian: openmpi-bin; scripts/install-deps.sh)")

src = os.path.join(TMP, "src")
os.makedirs(src, exist_ok=True)
WORKER = """
import sys, time, anchor
name, steps = sys.argv[1], int(sys.argv[2])
for i in range(steps):
    with anchor.phase("step"):
        with anchor.phase("compute"):
            t = time.perf_counter()
            while time.perf_counter() - t < (0.012 if name == "a" else 0.006):
                pass
        with anchor.phase("io"):
            time.sleep(0.004)
print("worker %s: %d steps" % (name, steps))
"""
with open(os.path.join(src, "worker.py"), "w") as f:
    f.write(WORKER)
with open(os.path.join(src, "two.sh"), "w") as f:
    f.write('#!/bin/sh\nset -e\n"$ANCHOR_PYTHON" worker.py a 200 &\n"$ANCHOR_PYTHON" worker.py b 200 &\nwait\n')
os.chmod(os.path.join(src, "two.sh"), 0o755)


def record(name, cmd):
    out = os.path.join(TMP, name)
    env = dict(os.environ, PYTHONPATH=PYDIR, ANCHOR_PYTHON=PYTHON, OMPI_MCA_mpi_yield_when_idle="1")
    for k in ("ANCHOR_FILE", "LD_PRELOAD", "ANCHOR_AUTO"):
        env.pop(k, None)
    p = subprocess.run([ANCHORPOST, "record", "-d", out, "--", *cmd], capture_output=True, text=True, cwd=src,
                       env=env, timeout=600)
    check(p.returncode == 0, "%s: record exit %d\n%s" % (name, p.returncode, p.stderr[-3000:]))
    return out, json.load(open(os.path.join(out, "record.json"))), p.stdout + p.stderr


def tool_pids(run_dir):
    """pids of perun, mpirun/orted (by command line) in the ring: each
    pid's last image (orted forks a rank, which then execs python)."""
    p = subprocess.run([ANCHORPOST, "info", os.path.join(run_dir, "run.ring")], capture_output=True, text=True)
    last = {}
    for line in p.stdout.splitlines():
        w = line.split()
        if w[:1] == ["pid"]:
            last[int(w[1])] = line
    return {pid for pid, line in last.items() if any(t in line for t in ("orted", "mpirun", "anchor_emul.perun"))}


# mpirun -n 2, mpi4py data parallel.
root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
out, meta, log = record("mpirun", ["mpirun", *root, "--oversubscribe", "-n", "2", PYTHON,
                                   os.path.join(ROOT, "examples", "transformer_ddp.py"), "--steps", "40",
                                   "--batch-size", "4", "--seq-len", "8"])
# mpirun can splice two ranks' lines together: match each report alone.
sums = re.findall(r"rank (\d)/2 mpi4py: 40 steps .*? weights checksum (-?[0-9]+\.[0-9]{6})", log)
check(len(sums) == 2 and sums[0][1] == sums[1][1], "mpirun: ranks disagree: %s" % sums)
tools = tool_pids(out) | {meta["training_pid"]}
check(len(tools) >= 2, "mpirun: perun's and mpirun's processes not found in the ring (%s)" % tools)
tty, rows, ranks = check_report(out, ["0", "1"], os.path.join(out, "perun", "mpirun.hdf5"), "mpirun -n 2",
                                not_pids=tools, want_tty=("OMPI_COMM_WORLD_RANK",))
for r in ranks:
    check(r["rank_from"] == "OMPI_COMM_WORLD_RANK", "mpirun: rank %s from %r" % (r["rank"], r["rank_from"]))
    check(float(r["coll_s"]) > 0, "mpirun: rank %s spent no time in MPI_Allreduce" % r["rank"])
st = read_csv(os.path.join(out, "report", "stragglers.csv"))
check(len(st) == 80 and any(float(x["wait_ms"]) > 0 for x in st), "mpirun: %d straggler rows, waits %s" %
      (len(st), sorted({x["wait_ms"] for x in st})[:3]))
print("ok: mpirun -n 2: both ranks (OMPI_COMM_WORLD_RANK), waits in MPI_Allreduce, node split adds up")

# A shell script that starts two Python processes: units by pid.
out, meta, log = record("script", ["./two.sh"])
check(log.count("worker ") >= 2, "script: the workers did not finish:\n%s" % log[-2000:])
tty, rows, units = check_report(out, ["", ""], os.path.join(out, "perun", "two.sh.hdf5"), "shell script",
                                not_pids={meta["training_pid"]}, want_tty=("(no rank)",))
check(len({u["pid"] for u in units}) == 2, "script: the two workers are not two units: %s" % units)
# The split follows who is busy: worker b's steps are shorter, so it ends
# first and a computes alone for its last second or so; a's share of the
# node during its compute phase is then above one half, b's about one half.
share = {}
for u in units:
    x = [r for r in rows if r["scope"] == "process" and r["pid"] == u["pid"] and r["phase"] == "compute" and
         r["device_group"] == "cpu"]
    share[u["pid"]] = float(x[0]["node_share"])
worker = {u["pid"]: ("a" if float(u["last_s"]) == max(float(v["last_s"]) for v in units) else "b") for u in units}
sa = [v for k, v in share.items() if worker[k] == "a"][0]
sb = [v for k, v in share.items() if worker[k] == "b"][0]
check(sa > sb + 0.05 and 0.45 <= sb <= 0.62 and sa <= 1.0, "script: node_share of compute a %.3f, b %.3f "
      "(a ran alone after b ended: want a > b, b about 0.5)" % (sa, sb))
print("script: compute's node_share: worker a %.3f (alone at the end), worker b %.3f" % (sa, sb))
print("ok: a shell script's two Python processes: one scope each (by pid), node split adds up")
print("PASS")
