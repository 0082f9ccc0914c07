"""ANCHOR_FILE templates (%r rank, %h short host, %p pid, %%): expanded by
libanchor.so and by the Python module's own writer alike; an exec'd child
with the same rank variables lands in the same ring; no rank -> "norank"."""
import os
import socket
import subprocess

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from mpi_testlib import BUILD, LIB, PY, TMP, check, need, post, read_csv  # noqa: E402

need()
host = socket.gethostname().split(".")[0]
base = dict(os.environ)
for k in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK", "LD_PRELOAD", "ANCHOR_FILE",
          "ANCHOR_AUTO"):
    base.pop(k, None)


def run(argv, **env):
    e = dict(base)
    e.update(env)
    subprocess.run(argv, env=e, check=True)


def procs(ring):
    out = os.path.join(TMP, os.path.basename(ring) + ".csv")
    post("dump", ring, "-o", out)
    return [r for r in read_csv(out) if r["kind"] == "proc_start"]


tmpl = os.path.join(TMP, "run-%h-%r.ring")
# Preloaded, rank from OpenMPI's variable; sh execs a child: same ring.
run(["sh", "-c", "exec /bin/true"], LD_PRELOAD=LIB, ANCHOR_FILE=tmpl, OMPI_COMM_WORLD_RANK="5")
ring = os.path.join(TMP, "run-%s-5.ring" % host)
check(os.path.exists(ring), "no %s: %s" % (ring, os.listdir(TMP)))
ps = procs(ring)
check(len(ps) == 2 and all(p["rank"] == "5" for p in ps), "sh and its exec'd child in rank 5's ring: %s" % ps)
print("ok: %%h-%%r -> %s, exec'd child in the same ring" % os.path.basename(ring))

# A PMIx launch (Open MPI 5's prterun, srun --mpi=pmix) sets only PMIX_RANK:
# the file is named by it, and the reader must see the same rank in it
# (anchors/ring_rank.h: one list for the writers, %r and the reader).
run(["/bin/true"], LD_PRELOAD=LIB, ANCHOR_FILE=tmpl, PMIX_RANK="3")
ring = os.path.join(TMP, "run-%s-3.ring" % host)
check(os.path.exists(ring), "PMIX_RANK not used for %%r: %s" % sorted(os.listdir(TMP)))
ps = procs(ring)
check(len(ps) == 1 and ps[0]["rank"] == "3", "PMIX_RANK=3: the reader sees rank %s" % [p["rank"] for p in ps])
print("ok: PMIX_RANK names the file and the reader's rank alike")

# Slurm's variable, and no rank at all.
run(["/bin/true"], LD_PRELOAD=LIB, ANCHOR_FILE=tmpl, SLURM_PROCID="7")
check(os.path.exists(os.path.join(TMP, "run-%s-7.ring" % host)), "SLURM_PROCID not used")
run(["/bin/true"], LD_PRELOAD=LIB, ANCHOR_FILE=tmpl)
check(os.path.exists(os.path.join(TMP, "run-%s-norank.ring" % host)), "no rank -> norank")
run(["/bin/true"], LD_PRELOAD=LIB, ANCHOR_FILE=os.path.join(TMP, "lit-%%-%q.ring"))
check(os.path.exists(os.path.join(TMP, "lit-%-%q.ring")), "%%%% and unknown %%q: %s" % sorted(os.listdir(TMP)))
print("ok: SLURM_PROCID, norank, %% and unknown placeholders")

# The Python module's own writer (no LD_PRELOAD), RANK as torchrun sets it.
run([PY, "-c", "import anchor; anchor.mark('x'); print(anchor.ring_path())"], ANCHOR_FILE=tmpl, RANK="2",
    PYTHONPATH=os.path.join(BUILD, "python"))
ring = os.path.join(TMP, "run-%s-2.ring" % host)
check(os.path.exists(ring) and len(procs(ring)) == 1, "python module did not expand the template")
print("ok: the Python module (not preloaded) expands the template too")
