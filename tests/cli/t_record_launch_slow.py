"""`anchorpost record -- COMMAND` for commands other than `python SCRIPT.py`.

Real runs, tiny workloads: perun monitors the launcher (.anchor_launch.py),
the command runs as its child, py-spy follows the Python descendants and
every process writes the one ring.  Checked for each:
  - record exits with the command's status (3 for the module, 0 else);
  - perun wrote its HDF5 under the command's name;
  - the ring holds the command's phases, written by processes below perun's
    (not perun itself), one per rank for torchrun --nproc_per_node 2 (gloo);
  - py-spy's profile holds samples of the training code in those processes.
Cases: python -m PKG, a shell script that starts Python, mpirun -n 2 (when
mpirun and mpi4py are there) and torchrun --nproc_per_node 2 SCRIPT (CPU, gloo).
"""
import csv
import io
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from pyanchor_util import ANCHORPOST, PYDIR, PYTHON, TMP, check, need_build, skip  # noqa: E402

need_build()

WORK = """
import anchor, time
def work(n):
    for i in range(n):
        with anchor.phase("step"):
            t = time.perf_counter()
            while time.perf_counter() - t < 0.1:
                pass
"""


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def record(name, cmd, want_rc):
    out = os.path.join(TMP, name)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PYDIR, os.path.join(TMP, "src")]),
               ANCHOR_PYTHON=PYTHON)
    for k in ("ANCHOR_FILE", "LD_PRELOAD", "ANCHOR_AUTO"):
        env.pop(k, None)
    p = subprocess.run([ANCHORPOST, "record", "-d", out, "--", *cmd], capture_output=True, text=True,
                       cwd=os.path.join(TMP, "src"), env=env, timeout=600)
    check(p.returncode == want_rc, "%s: record exit %d, want %d\n%s" % (name, p.returncode, want_rc,
                                                                      p.stderr[-3000:]))
    meta = json.load(open(os.path.join(out, "record.json")))
    check(meta["exit_status"] == want_rc, "%s: record.json exit_status %r" % (name, meta["exit_status"]))
    check("children of perun" in meta["training_process"], "%s: %r" % (name, meta["training_process"]))
    return out, meta


def step_pids(out, perun_pid):
    """pid -> number of 'step' phases; each pid must descend from perun's."""
    p = subprocess.run([ANCHORPOST, "dump", os.path.join(out, "run.ring")], capture_output=True, text=True)
    check(p.returncode == 0, "dump: %s" % p.stderr)
    steps, parent = {}, {}
    for r in csv.DictReader(io.StringIO(p.stdout)):
        if r["kind"] == "begin" and r["name"] == "step":
            steps[r["pid"]] = steps.get(r["pid"], 0) + 1
    info = subprocess.run([ANCHORPOST, "info", os.path.join(out, "run.ring")], capture_output=True, text=True)
    for line in info.stdout.splitlines():
        w = line.split()
        if w[:1] == ["pid"] and w[2] == "ppid":
            parent[w[1]] = w[3]
    for pid in steps:
        # A descendant of perun's process, not perun's process itself.
        check(pid != str(perun_pid), "%s: phases written by perun's own process" % out)
        q, seen = pid, 0
        while q in parent and q != str(perun_pid) and seen < 20:
            q, seen = parent[q], seen + 1
        check(q == str(perun_pid), "%s: pid %s is not below perun (pid %d)" % (out, pid, perun_pid))
    return steps


def sampled_pids(out, needle):
    prof = os.path.join(out, "profile.chrometrace.json")
    p = subprocess.run([ANCHORPOST, "samples", prof, "-o", "-"], capture_output=True, text=True)
    check(p.returncode == 0, "samples: %s" % p.stderr)
    pids = {}
    for r in csv.DictReader(io.StringIO(p.stdout)):
        if needle in r["stack_text"]:
            pids[r["pid"]] = pids.get(r["pid"], 0) + 1
    return pids


def hdf5(out, name):
    path = os.path.join(out, "perun", name + ".hdf5")
    check(os.path.getsize(path) > 0, "%s missing" % path)


src = os.path.join(TMP, "src")
write(os.path.join(src, "tinypkg", "__init__.py"), "")
write(os.path.join(src, "tinypkg", "__main__.py"), WORK + "work(8)\nraise SystemExit(3)\n")
write(os.path.join(src, "work_script.py"), WORK + "work(8)\n")
write(os.path.join(src, "run.sh"), "#!/bin/sh\nset -e\necho starting\nexec \"$ANCHOR_PYTHON\" work_script.py\n",
      0o755)

# python -m PKG: the module's status comes back.
out, meta = record("module", [PYTHON, "-m", "tinypkg"], 3)
hdf5(out, "tinypkg")
steps = step_pids(out, meta["training_pid"])
check(len(steps) == 1 and list(steps.values()) == [8], "python -m: step phases per pid %r" % steps)
pids = sampled_pids(out, "tinypkg")
check(set(steps) <= set(pids), "python -m: py-spy sampled %r, the module ran in %r" % (pids, steps))
print("python -m: exit 3 kept, 8 steps in pid %s, %d profile rows there" % (list(steps)[0], pids[list(steps)[0]]))

# A shell script that starts Python.
out, meta = record("shell", ["./run.sh"], 0)
hdf5(out, "run.sh")
steps = step_pids(out, meta["training_pid"])
check(list(steps.values()) == [8], "run.sh: step phases per pid %r" % steps)
check(set(steps) <= set(sampled_pids(out, "work_script.py")), "run.sh: the script's process was not sampled")
print("shell script: 8 steps in pid %s" % list(steps)[0])

# mpirun -n 2: perun's own MPI singleton start must not leak into the
# command's environment (a child mpirun that inherits OMPI_*/PMIX_* fails).
import shutil  # noqa: E402
have_mpi = shutil.which("mpirun") and subprocess.run([PYTHON, "-c", "import mpi4py"], capture_output=True).returncode == 0
if have_mpi:
    write(os.path.join(src, "mpi_work.py"), WORK + """
from mpi4py import MPI
work(4)
MPI.COMM_WORLD.Barrier()
""")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    out, meta = record("mpirun", ["mpirun", *root, "--oversubscribe", "-n", "2", PYTHON, "mpi_work.py"], 0)
    hdf5(out, "mpirun")
    steps = step_pids(out, meta["training_pid"])
    check(len(steps) == 2 and sorted(steps.values()) == [4, 4], "mpirun: step phases per pid %r" % steps)
    print("mpirun: ranks in pids %s, 4 steps each" % sorted(steps))
else:
    print("mpirun case not run: no mpirun or mpi4py")

# torchrun, two ranks on the CPU (gloo).
try:
    subprocess.run([PYTHON, "-c", "import torch.distributed"], check=True, capture_output=True)
except subprocess.CalledProcessError:
    skip("torch is not installed")
if not os.path.exists(os.path.join(os.path.dirname(PYTHON), "torchrun")):
    skip("no torchrun beside %s" % PYTHON)
write(os.path.join(src, "ddp.py"), WORK + """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 16))
for i in range(4):
    with anchor.phase("step"):
        m(torch.randn(8, 16)).sum().backward()
work(4)
dist.barrier()
dist.destroy_process_group()
""")
out, meta = record("torchrun", ["torchrun", "--nproc_per_node", "2", "ddp.py"], 0)
check(meta["command"][0] == os.path.join(os.path.dirname(PYTHON), "torchrun"),
      "torchrun taken from %r, not beside the interpreter" % meta["command"][0])
hdf5(out, "torchrun")
steps = step_pids(out, meta["training_pid"])
check(len(steps) == 2 and sorted(steps.values()) == [8, 8], "torchrun: step phases per pid %r" % steps)
pids = sampled_pids(out, "ddp.py")
check(set(steps) <= set(pids), "torchrun: py-spy sampled %r, the ranks are %r" % (sorted(pids), sorted(steps)))
print("torchrun: ranks in pids %s, 8 steps each, both sampled" % sorted(steps))
print("PASS")
