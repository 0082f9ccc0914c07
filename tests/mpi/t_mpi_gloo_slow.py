"""examples/transformer_ddp.py --comm gloo on 2 ranks under mpirun with
libanchor.so preloaded and ANCHOR_AUTO=torch, no code change for the
communication: torch.distributed's broadcast / all_reduce / barrier show as
dist.* ranges in each rank's ring, next to the automatic forward /
backward / optimizer.step anchors, and `anchorpost stragglers` (times only,
no perun) counts the dist.all_reduce time as waiting."""
import os

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from mpi_testlib import BUILD, PY, ROOT, TMP, begins, check, finish, mpirun, need, post, read_csv, skip  # noqa: E402
import socket

need("mpirun")
try:
    import torch.distributed as dist
except ImportError as e:
    skip("torch missing: %s" % e)
if not dist.is_available() or not dist.is_gloo_available():
    skip("torch.distributed without gloo")

STEPS = 8
rings = os.path.join(TMP, "rings")
os.makedirs(rings)
pp = os.pathsep.join([os.path.join(BUILD, "python")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
port = str(29500 + os.getpid() % 400)
rc, out = finish(mpirun(2, os.path.join(rings, "run-%h-%r.ring"),
                        [PY, os.path.join(ROOT, "examples", "transformer_ddp.py"), "--comm", "gloo", "--steps",
                         str(STEPS), "--slow-rank", "1", "--slow-ms", "300", "--batch-size", "4", "--seq-len", "8"],
                        env_extra=(("PYTHONPATH", pp), ("ANCHOR_AUTO", "torch"), ("MASTER_PORT", port))), timeout=300)
check(rc == 0, "mpirun exit %d:\n%s" % (rc, out[-3000:]))
host = socket.gethostname().split(".")[0]
for r in (0, 1):
    n = begins(os.path.join(rings, "run-%s-%d.ring" % (host, r)))
    check(n.get("dist.all_reduce") == STEPS, "rank %d: dist.all_reduce x%s, want %d" % (r, n.get("dist.all_reduce"), STEPS))
    check(n.get("dist.broadcast") == 1 and n.get("dist.barrier") == 1, "rank %d: broadcast/barrier: %s" % (r, n))
    check(n.get("optimizer.step") == STEPS and n.get("backward", 0) >= STEPS, "rank %d: auto anchors: %s" % (r, n))
    check(not any(k.startswith("MPI_") for k in n), "rank %d: gloo run shows MPI ranges: %s" % (r, n))
print("ok: dist.all_reduce x%d, dist.broadcast, dist.barrier and the torch auto anchors in both rings" % STEPS)

strag = os.path.join(TMP, "stragglers.csv")
p = post("stragglers", "--rings", rings, "-o", strag)
rows = read_csv(strag)
check(len(rows) == 2 * STEPS, "%d straggler rows, want %d" % (len(rows), 2 * STEPS))
w0 = sum(float(x["wait_ms"]) for x in rows if x["rank"] == "0" and x["step"] != "0")
check(w0 > 0, "dist.all_reduce time not counted as waiting")
slow1 = sum(1 for x in rows if x["rank"] == "1" and x["slowest"] == "1")
check(slow1 >= 0.6 * STEPS, "rank 1 (+300 ms a step) slowest in only %d of %d steps" % (slow1, STEPS))
print("ok: stragglers from dist.* ranges: rank 1 slowest in %d/%d steps, rank 0 waited %.0f ms" % (slow1, STEPS, w0))
