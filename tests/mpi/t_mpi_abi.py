"""The MPI wrappers without a real MPI: a stand-in libmpi with MPICH's int
handles (tests/victims/fakempi) checks that every argument reaches it
intact through libanchor.so, including the 7th argument passed on the
stack, and that return values and errno come back unchanged; with libmpi
loaded RTLD_GLOBAL (RTLD_NEXT finds it) and RTLD_LOCAL (found as PMPI_* by
the fallback).  The ring holds the ranges, value = count."""
import os
import subprocess

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from mpi_testlib import LIB, TMP, begins, check, need, post, read_csv  # noqa: E402

need()
src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "victims", "fakempi")
fake = os.path.join(TMP, "libfakempi.so")
user = os.path.join(TMP, "libuser.so")
exe = os.path.join(TMP, "fakempi_main")
cc = os.environ.get("CC", "cc")
flags = ["-O2", "-Wall", "-Wextra", "-Werror"]
subprocess.run([cc] + flags + ["-shared", "-fPIC", "-o", fake, os.path.join(src, "fakempi.c")], check=True)
subprocess.run([cc] + flags + ["-shared", "-fPIC", "-o", user, os.path.join(src, "user.c"), "-L" + TMP, "-lfakempi",
                "-Wl,-rpath," + TMP], check=True)
subprocess.run([cc] + flags + ["-o", exe, os.path.join(src, "main.c"), "-ldl"], check=True)

for mode in ("link", "local"):
    ring = os.path.join(TMP, "abi-%s.ring" % mode)
    env = dict(os.environ, LD_PRELOAD=LIB, ANCHOR_FILE=ring)
    p = subprocess.run([exe, mode, user], env=env, capture_output=True, text=True)
    check(p.returncode == 0 and p.stdout == "ok\n", "%s: rc %d\n%s%s" % (mode, p.returncode, p.stdout, p.stderr))
    check("anchor" not in p.stderr, "%s: libanchor complained: %s" % (mode, p.stderr))
    n = begins(ring)
    check(n.get("MPI_Allreduce") == 1 and n.get("MPI_Alltoall") == 1, "%s: ranges %s" % (mode, n))
    out = os.path.join(TMP, "abi-%s.csv" % mode)
    post("dump", ring, "-o", out)
    vals = {r["name"]: r["value"] for r in read_csv(out) if r["kind"] == "begin"}
    check(vals.get("MPI_Allreduce") == "5" and vals.get("MPI_Alltoall") == "3", "%s: count values %s" % (mode, vals))
    print("ok: %s: int handles, stack argument, results and errno intact; ranges recorded" % mode)

# ANCHOR_MPI=0: still a pass-through, nothing recorded.
ring = os.path.join(TMP, "abi-off.ring")
p = subprocess.run([exe, "link", user], env=dict(os.environ, LD_PRELOAD=LIB, ANCHOR_FILE=ring, ANCHOR_MPI="0"),
                   capture_output=True, text=True)
check(p.returncode == 0 and p.stdout == "ok\n", "ANCHOR_MPI=0 run failed: %s" % p.stderr)
check(not any(k.startswith("MPI_") for k in begins(ring)), "ANCHOR_MPI=0 still recorded MPI ranges")
print("ok: ANCHOR_MPI=0 passes through and records nothing")

# Without libanchor the same program gives the same answers (control).
p = subprocess.run([exe, "local", user], capture_output=True, text=True)
check(p.returncode == 0 and p.stdout == "ok\n", "control run failed: %s" % p.stderr)
