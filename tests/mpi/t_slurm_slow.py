"""Slurm as the real engine: a one-node cluster from Debian's packages
(munged, slurmctld, slurmd; tests/slurm_testlib.py, started and stopped
here), then the two ways docs/mpi.md tells HPC users to record, the doc's
own blocks run as they stand:
  * "slurm-srun": `srun -n 2 --mpi=pmix --export=ALL,LD_PRELOAD=...
    perun monitor ... train.py`, then `anchorpost report`;
  * "slurm-job-script": the job script, submitted with `sbatch`.
train.py is examples/transformer_ddp.py (real PyTorch, gradients averaged
with mpi4py's Allreduce): under --mpi=pmix the tasks are one MPI world,
so perun runs in its MPI mode (rank 0 samples for the node, one HDF5).
`perun` on PATH is real perun with its RAPL backend reading an emulated
powercap tree driven by the CPU time of everything below slurmd (no RAPL
here): only the sensor is emulated.
Before: report on the job's directory (one ring per rank) refused "several
rings".  Checked for each job (dist_testlib.check_report): report exits
0 with both ranks' blocks with intervals, the stragglers, phases.csv
scope=rank rows, the node split adding up to perun's counters; ranks.csv
and the terminal name SLURM_PROCID and the job's SLURM_JOB_ID (sbatch's
job id; the srun job's as slurmctld knows it); the accounting line says
Slurm's energy accounting is not configured (no slurmdbd, no plugin).
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from dist_testlib import check, check_report  # noqa: E402
from pyanchor_util import ANCHORPOST, BUILD, LIB, PYDIR, PYTHON, ROOT, TMP, need_build, skip  # noqa: E402
from slurm_testlib import SlurmCluster, missing_programs  # noqa: E402

need_build()
gone = missing_programs()
if gone:
    skip("Slurm not installed (%s missing): scripts/install-deps.sh installs slurmctld slurmd slurm-client munge" %
         ", ".join(gone))
missing = [m for m in ("torch", "h5py", "perun", "mpi4py") if importlib.util.find_spec(m) is None]
if missing:
    skip("missing Python package: %s (scripts/install-deps.sh)" % ", ".join(missing))


def doc_block(marker):
    """The fenced sh block right after `<!-- marker... -->` in docs/mpi.md."""
    with open(os.path.join(ROOT, "docs", "mpi.md")) as f:
        text = f.read()
    m = re.search(r"<!-- %s[^>]*-->\n```sh\n(.*?)\n```" % re.escape(marker), text, re.S)
    check(m, "docs/mpi.md has no %s block" % marker)
    return m.group(1) + "\n"


work = os.path.join(TMP, "work")
bindir = os.path.join(TMP, "bin")
os.makedirs(work)
os.makedirs(bindir)
shutil.copy(os.path.join(ROOT, "examples", "transformer_ddp.py"), os.path.join(work, "train.py"))
shutil.copy(os.path.join(ROOT, "examples", "transformer.py"), work)
emul = os.path.join(ROOT, "tools", "emulated_power")
pc = os.path.join(TMP, "powercap")
# `perun` as the doc calls it: real perun, its RAPL backend on the emulated tree.
with open(os.path.join(bindir, "perun"), "w") as f:
    f.write('#!/bin/sh\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec %s -m anchor_emul.perun --powercap %s "$@"\n' %
            (emul, PYTHON, pc))
os.chmod(os.path.join(bindir, "perun"), 0o755)
subprocess.run([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], check=True,
               env=dict(os.environ, PYTHONPATH=emul))


def job_checks(run_dir, job_id, env, label):
    tty, rows, ranks = check_report(run_dir, ["0", "1"], os.path.join(run_dir, "perun", "train.hdf5"), label,
                                    env=env, want_tty=("Slurm job SLURM_JOB_ID=%s" % job_id, "SLURM_PROCID=0",
                                                       "SLURM_PROCID=1"))
    for r in ranks:
        check(r["slurm_job_id"] == job_id and r["slurm_procid"] == r["rank"] and r["slurm_step_id"] == "0",
              "%s: ranks.csv row %s: want job %s, SLURM_PROCID = rank, step 0" % (label, r, job_id))
    acct = [ln for ln in tty.splitlines() if ln.startswith("Slurm accounting:")]
    check(len(acct) == 1 and "not configured" in acct[0] and "perun's" in acct[0],
          "%s: no accounting line saying Slurm's energy accounting is not configured:\n%s" % (label, acct))
    print("%s: %s" % (label, acct[0][:200]))


with SlurmCluster(os.path.join(TMP, "slurm")) as cluster:
    env = dict(cluster.env, PATH=os.pathsep.join([bindir, BUILD, os.environ["PATH"]]), ANCHOR_LIB=LIB,
               ANCHOR_PYTHONPATH=PYDIR, PYTHONPATH=PYDIR, OMPI_MCA_mpi_yield_when_idle="1")
    for k in ("LD_PRELOAD", "ANCHOR_FILE", "ANCHOR_AUTO"):
        env.pop(k, None)
    upd = subprocess.Popen([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu", "--watch-pid",
                            str(cluster.slurmd_pid()), "--truth", os.path.join(TMP, "truth.json")],
                           env=dict(os.environ, PYTHONPATH=emul), stdout=subprocess.DEVNULL,
                           stderr=subprocess.STDOUT)
    try:
        # 1. srun -n 2, the doc's block (it ends with anchorpost report).
        t_start = time.time()
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", doc_block("slurm-srun")], cwd=work, env=env,
                           capture_output=True, text=True, timeout=400)
        check(p.returncode == 0, "srun block: exit %d\n%s\n%s" % (p.returncode, p.stdout[-2000:], p.stderr[-3000:]))
        sums = re.findall(r"rank (\d)/2 mpi4py: \d+ steps .*? weights checksum (-?[0-9]+\.[0-9]{6})", p.stdout)
        check(len(sums) == 2 and sums[0][1] == sums[1][1], "srun: the ranks are not one MPI world: %s" % sums)
        check("R0/2" in p.stdout + p.stderr and "R1/2" in p.stdout + p.stderr,
              "srun: perun did not run in its MPI mode (no R0/2, R1/2 in its log)")
        print("srun -n 2: %d steps on 2 ranks, perun in MPI mode (%.0f s)" % (int(re.search(
            r"mpi4py: (\d+) steps", p.stdout).group(1)), time.time() - t_start))
        jobs = subprocess.run(["scontrol", "show", "jobs", "-o"], capture_output=True, text=True, env=env).stdout
        srun_jobs = re.findall(r"JobId=(\d+) .*?JobState=COMPLETED.*?NumTasks=2", jobs)
        check(len(srun_jobs) == 1, "slurmctld knows %d completed 2-task jobs:\n%s" % (len(srun_jobs), jobs[:2000]))
        job_checks(os.path.join(work, "anchor-srun"), srun_jobs[0], env, "srun -n 2")

        # 2. The job script, with sbatch.
        script = os.path.join(work, "train.sbatch")
        with open(script, "w") as f:
            f.write(doc_block("slurm-job-script"))
        p = subprocess.run(["sbatch", "--parsable", script, "train.py", "--steps", "30", "--batch-size", "4",
                            "--seq-len", "8"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "sbatch: exit %d: %s" % (p.returncode, p.stderr))
        job = p.stdout.strip().split(";")[0]
        t0 = time.time()
        while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True, env=env).stdout.strip():
            check(time.time() - t0 < 400, "job %s still in the queue after 400 s" % job)
            time.sleep(1)
        info = subprocess.run(["scontrol", "show", "job", job, "-o"], capture_output=True, text=True, env=env).stdout
        log = open(os.path.join(work, "anchor-train-%s.out" % job)).read()
        check("JobState=COMPLETED" in info, "job %s: %s\n%s" % (job, info, log[-3000:]))
        check("anchor: recorded %s" % os.path.join(work, "anchor-" + job) in log, "job script did not finish:\n%s" %
              log[-3000:])
        print("sbatch: job %s completed in %.0f s" % (job, time.time() - t0))
        job_checks(os.path.join(work, "anchor-" + job), job, env, "sbatch (the doc's job script)")
    finally:
        upd.terminate()
        upd.wait(timeout=30)
print("PASS")
