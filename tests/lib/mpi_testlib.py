"""Shared by the MPI tests: paths, skips, mpirun with libanchor in every rank."""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
LIB = os.path.join(BUILD, "libanchor.so")
POST = os.path.join(BUILD, "anchorpost")
PY = sys.executable


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        die(msg)


def skip(msg):
    print("skip: " + msg)
    sys.exit(77)


def need(*tools):
    for exe in (LIB, POST):
        if not os.path.exists(exe):
            skip("%s not built (make)" % exe)
    for t in tools:
        if not shutil.which(t):
            skip("%s not installed (Debian: openmpi-bin libopenmpi-dev)" % t)


def mpirun(np, ring_template, argv, env_extra=(), timeout=240, log=None):
    """mpirun -np N with libanchor preloaded into every rank (not into
    mpirun itself: -x only reaches the ranks)."""
    cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(np),
           "-x", "LD_PRELOAD=" + LIB, "-x", "ANCHOR_FILE=" + ring_template]
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.pop("ANCHOR_FILE", None)
    for k, v in env_extra:
        cmd += ["-x", "%s=%s" % (k, v)]
    cmd += list(argv)
    out = open(log, "w") if log else subprocess.PIPE
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True, env=env)
    return p


def finish(p, timeout=240):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        die("mpirun did not finish in %d s" % timeout)
    return p.returncode, out or ""


def post(*args, rc=0):
    p = subprocess.run([POST] + list(args), capture_output=True, text=True)
    if rc is not None and p.returncode != rc:
        die("anchorpost %s -> %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def begins(ring):
    """{name: count} of BEGIN records in a ring (anchorpost dump)."""
    out = os.path.join(TMP, os.path.basename(ring) + ".csv")
    post("dump", ring, "-o", out)
    n = {}
    for r in read_csv(out):
        if r["kind"] == "begin":
            n[r["name"]] = n.get(r["name"], 0) + 1
    return n
