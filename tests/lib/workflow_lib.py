"""Helpers for tests/report/t_workflow_*: run a script the way users do, under
real `perun monitor` (anchor_emul.perun: real perun 1.0, emulated RAPL
driven by the process's CPU time) with libanchor preloaded, optionally
with py-spy as the parent.  Not a test itself."""
import csv
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
PYTHON = os.environ.get("PYTHON") or sys.executable
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp(prefix="anchor-wf-")
ANCHORPOST = os.path.join(BUILD, "anchorpost")
EMUL = os.path.join(ROOT, "tools", "emulated_power")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def need():
    for f in (ANCHORPOST, os.path.join(BUILD, "libanchor.so")):
        if not os.path.exists(f):
            skip(f + " not built")
    if subprocess.run([PYTHON, "-c", "import perun"], capture_output=True).returncode:
        skip("perun is not installed")


def pyspy():
    p = os.path.join(os.path.dirname(PYTHON), "py-spy")
    return p if os.path.exists(p) else shutil.which("py-spy")


def env(ring, auto=None):
    e = dict(os.environ)
    for k in ("ANCHOR_FILE", "ANCHOR_AUTO", "ANCHOR_SYNC_PULSE", "ANCHOR_DISABLE"):
        e.pop(k, None)
    e["ANCHOR_FILE"] = ring
    e["LD_PRELOAD"] = os.path.join(BUILD, "libanchor.so")
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(BUILD, "python"), EMUL])
    if auto:
        e["ANCHOR_AUTO"] = auto
    return e


def first_child(ppid, tries=600):
    """The pid of ppid's first child (polled every 50 ms, 30 s), or None."""
    for _ in range(tries):
        q = subprocess.run(["pgrep", "-P", str(ppid)], capture_output=True, text=True)
        if q.stdout.split():
            return int(q.stdout.split()[0])
        time.sleep(0.05)
    return None


def record(out, script, args=(), ring=None, auto=None, spy=None, period="0.1", timeout=300):
    """perun monitor SCRIPT under libanchor (ring shared when given), on a
    fresh emulated sensor; spy: list of py-spy options (py-spy is then the
    parent: `py-spy record OPTS -- python -m anchor_emul.perun ...`).
    Returns (returncode, perun data dir, pid of the perun process)."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    pc = os.path.join(out, "powercap")
    ring = ring or os.path.join(out, "run.ring")
    e = dict(os.environ, PYTHONPATH=EMUL)
    subprocess.run([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--init"], env=e, check=True)
    cmd = [PYTHON, "-m", "anchor_emul.perun", "--powercap", pc, "monitor", "--sampling_period", period,
           "--data_out", os.path.join(out, "perun"), script, *args]
    if spy is not None:
        cmd = [pyspy(), "record", *spy, "--", *cmd]
    log = open(os.path.join(out, "run.log"), "w")
    p = subprocess.Popen(cmd, env=env(ring, auto), stdout=log, stderr=subprocess.STDOUT, cwd=out)
    pid = p.pid
    if spy is not None:  # the perun process is py-spy's child
        pid = first_child(p.pid)
        check(pid, "py-spy started no child")
    up = subprocess.Popen([PYTHON, "-m", "anchor_emul.updater", "--powercap", pc, "--model", "cpu",
                           "--watch-pid", str(pid), "--truth", os.path.join(out, "truth.json")], env=e)
    rc = p.wait(timeout=timeout)
    up.wait(timeout=60)
    log.close()
    return rc, os.path.join(out, "perun"), pid


def anchorpost(*args, rc=0):
    p = subprocess.run([ANCHORPOST, *args], capture_output=True, text=True, timeout=300)
    if rc is not None and p.returncode != rc:
        fail("anchorpost %s exited %d (want %d): %s%s" % (" ".join(args), p.returncode, rc, p.stdout[-2000:],
                                                          p.stderr[-2000:]))
    return p


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def offset_of(stdout):
    """(method, offset_s, ci95_ms or None) from the table's header lines."""
    m = re.search(r"alignment (.+?) \(\+-[^,]*, offset ([-0-9.]+) s\)", stdout)
    check(m, "no alignment line in:\n" + stdout[:2000])
    c = re.search(r"95% interval \+-([0-9.e+]+) ms", stdout)
    return m.group(1), float(m.group(2)), float(c.group(1)) if c else None


def dump(ring):
    out = ring + ".csv"
    anchorpost("dump", ring, "-o", out)
    return rows(out)


def ranges_of(ev, pid, name):
    """[(t0_s, t1_s)] of the closed `name` ranges of pid in a ring dump (ev:
    dump(ring)), in seconds from the dump's first event."""
    base = int(ev[0]["mono_ns"])
    iv, op = [], None
    for e in ev:
        if e["pid"] == str(pid) and e["name"] == name:
            if e["kind"] == "begin":
                op = (int(e["mono_ns"]) - base) / 1e9
            elif e["kind"] == "end" and op is not None:
                iv.append((op, (int(e["mono_ns"]) - base) / 1e9))
                op = None
    return iv
