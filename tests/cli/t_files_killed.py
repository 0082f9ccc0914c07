"""What a killed or size-limited anchorpost leaves behind (issue 23 point 5).

  * `ulimit -f` (RLIMIT_FSIZE, set in the child): dump, perun, phases,
    samples, timeline and report each stop with one line naming the output
    and saying "File too large", exit 1, and leave nothing in the output
    directory: no temp, no side file (perun's FILE.energy.csv, timeline's
    FILE.alignment.txt), no report directory.  Before: SIGXFSZ killed the
    process without a word and its temps stayed.
  * SIGKILL while `samples` writes and while `report` builds: the temp
    file / build directory stays (nothing can run on SIGKILL), named
    FILE.tmp.anchorpost-PID-KEY-TAG; the next anchorpost that writes into
    that directory removes it.
  * The sweep removes nothing else: with the KEY learnt from a real
    leftover name, entries of the same form but owned by a live process,
    with another key, a symlink, another user's file (as root), a
    directory holding a subdirectory, and old-style FILE.tmp.N names all
    stay.
"""
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
GEN = os.path.join(BUILD, "tools", "ringgen")
TIMEOUT_S = 120  # far above any run here; reached only by a hang


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        die(msg)


for exe in (POST, GEN):
    if not os.access(exe, os.X_OK):
        print("skip: %s not built (make)" % exe)
        sys.exit(77)
try:
    import h5py  # noqa: F401  (perun_synth.py writes HDF5 with it)
except ImportError:
    print("skip: h5py missing (scripts/install-deps.sh)")
    sys.exit(77)

D = os.path.join(TMP, "in")
os.makedirs(D, exist_ok=True)
RING = os.path.join(D, "r.ring")
PERUN = os.path.join(D, "p.hdf5")
PROF = os.path.join(D, "prof.json")
subprocess.run([GEN, RING, "--rank", "0", "--nranks", "1", "--steps", "3000", "--host", "hostA",
                "--power-out", os.path.join(D, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), PERUN,
                "hostA=" + os.path.join(D, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_pyspy_profile.py"), PROF, "--seconds", "60",
                "--rate", "500"], check=True, capture_output=True)


def fsize_limit(nbytes):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return set_limit


# ---- ulimit -f -----------------------------------------------------------
OUT = os.path.join(TMP, "fsize")
os.makedirs(OUT)
CMDS = [
    ("dump", ["dump", RING, "-o", "{o}/d.csv"], "d.csv"),
    ("perun", ["perun", PERUN, "-o", "{o}/p.csv"], "p.csv"),
    ("phases", ["phases", "--ring", RING, "--perun", PERUN, "-o", "{o}/ph.csv"], "ph.csv"),
    ("samples", ["samples", PROF, "-o", "{o}/s.csv"], "s.csv"),
    ("timeline", ["timeline", "--ring", RING, "--perun", PERUN, "-o", "{o}/t.csv"], "t.csv"),
    ("report", ["report", "--ring", RING, "--perun", PERUN, "-d", "{o}/rep"], "rep/"),
]
ncase = 0
for label, args, name in CMDS:
    # 1 KiB stops every command at its first output; 16 KiB lets the
    # small ones (perun's FILE.energy.csv, timeline's alignment, report's
    # phases.csv) through and stops a later, larger one.
    for limit in (1024, 16384):
        a = [x.replace("{o}", OUT) for x in args]
        p = subprocess.run([POST, *a], capture_output=True, text=True, timeout=TIMEOUT_S,
                           preexec_fn=fsize_limit(limit))
        what = "%s under ulimit -f %d B" % (label, limit)
        if p.returncode == 0:
            shutil.rmtree(OUT)
            os.makedirs(OUT)
            continue  # the outputs fit: nothing to check at this limit
        check(p.returncode == 1, "%s: exit %d, want 1 (killed by %s?) stderr %r" %
              (what, p.returncode, "SIGXFSZ" if p.returncode == -signal.SIGXFSZ else "?", p.stderr))
        lines = p.stderr.strip().splitlines()
        check(len(lines) == 1, "%s: want one stderr line, got %r" % (what, p.stderr))
        check(lines[0].startswith("anchorpost: %s/" % OUT) and "File too large" in lines[0],
              "%s: the line does not name the output and EFBIG: %r" % (what, lines[0]))
        check(".tmp." not in lines[0], "%s: the line names a temp path: %r" % (what, lines[0]))
        check(os.listdir(OUT) == [], "%s: left %s" % (what, os.listdir(OUT)))
        ncase += 1
    check(ncase > 0, "%s: no limit made it fail" % label)
print("ok: ulimit -f: one line naming the output, exit 1, nothing left (%d cases, %d commands)" %
      (ncase, len(CMDS)))


# ---- SIGKILL leaves temps; the next run removes them ---------------------
MARK = re.compile(r"\.tmp\.anchorpost-(\d+)-([0-9a-f]{8})-[A-Za-z0-9]{6,32}$")


def kill_while_writing(cmd, outdir, label):
    """SIGKILL cmd once its temp appears in outdir; the leftover names."""
    for attempt in range(10):
        for e in os.listdir(outdir):
            shutil.rmtree(os.path.join(outdir, e), ignore_errors=True)
        p = subprocess.Popen([POST, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + TIMEOUT_S
        while p.poll() is None and not any(MARK.search(e) for e in os.listdir(outdir)):
            if time.monotonic() > deadline:
                p.kill()
                die("%s: no temp appeared in %d s" % (label, TIMEOUT_S))
            time.sleep(0.001)
        if p.poll() is not None:
            continue  # finished before its temp was seen: try again
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = [e for e in os.listdir(outdir) if MARK.search(e)]
        if left:
            return p.pid, left
    die("%s: could not kill it while it wrote (10 tries)" % label)


K = os.path.join(TMP, "killed")
os.makedirs(K)
pid, left = kill_while_writing(["samples", PROF, "-o", os.path.join(K, "big.csv")], K, "samples")
m = MARK.search(left[0])
check(int(m.group(1)) == pid, "temp %s does not carry the killed pid %d" % (left[0], pid))
KEY = m.group(2)
print("ok: SIGKILL during samples left %s (pid %d, key %s)" % (left, pid, KEY))
p = subprocess.run([POST, "dump", RING, "-o", os.path.join(K, "other.csv")], capture_output=True, text=True)
check(p.returncode == 0, "dump after the kill: %s" % p.stderr)
rest = [e for e in os.listdir(K) if MARK.search(e)]
check(rest == [], "the next run into %s did not remove the dead process's temps: %s" % (K, rest))
print("ok: the next run into the directory removed them")

R = os.path.join(TMP, "killed-report")
os.makedirs(R)
pid, left = kill_while_writing(["report", "--ring", RING, "--perun", PERUN, "-d", os.path.join(R, "rep")], R,
                               "report")
check(all(e.startswith("rep.tmp.anchorpost-%d-" % pid) for e in left), "report left %s" % left)
print("ok: SIGKILL during report left %s" % left)
p = subprocess.run([POST, "report", "--ring", RING, "--perun", PERUN, "-d", os.path.join(R, "rep")],
                   capture_output=True, text=True, timeout=TIMEOUT_S)
check(p.returncode == 0, "report after the kill: %s" % p.stderr)
check(sorted(os.listdir(R)) == ["rep"], "the next report did not remove the dead one's directory: %s" %
      os.listdir(R))
print("ok: the next report removed it")

# ---- what the sweep must leave alone -------------------------------------
S = os.path.join(TMP, "sweep")
os.makedirs(S)
dead = subprocess.Popen(["true"])
dead.wait()
DEAD = dead.pid
live = subprocess.Popen(["sleep", "600"])
try:
    keep = {}

    def plant(name, kind="file", **kw):
        path = os.path.join(S, name)
        if kind == "file":
            with open(path, "w") as f:
                f.write("x\n")
        elif kind == "link":
            os.symlink(kw["to"], path)
        elif kind == "dir":
            os.makedirs(os.path.join(path, "sub") if kw.get("sub") else path)
            with open(os.path.join(path, "f.csv"), "w") as f:
                f.write("x\n")
        return name

    gone = [plant("a.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (DEAD, KEY)),
            plant("b.tmp.anchorpost-%d-%s-Xy12Zq" % (DEAD, KEY), "dir")]
    victim = os.path.join(TMP, "victim.txt")
    with open(victim, "w") as f:
        f.write("keep me\n")
    stays = [
        plant("live.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (live.pid, KEY)),
        plant("self.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (os.getpid(), KEY)),
        plant("key.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (DEAD, "%08x" % (int(KEY, 16) ^ 1))),
        plant("link.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (DEAD, KEY), "link", to=victim),
        plant("deep.tmp.anchorpost-%d-%s-Xy12Zq" % (DEAD, KEY), "dir", sub=True),
        plant("tail.csv.tmp.anchorpost-%d-%s-abcdefgh1234.bak" % (DEAD, KEY)),
        plant("short.csv.tmp.anchorpost-%d-%s-abc" % (DEAD, KEY)),
        plant("old.csv.tmp.%d" % DEAD),
        plant("old.csv.tmp.k3j4h5g6f7d8"),
    ]
    if os.geteuid() == 0:
        name = plant("theirs.csv.tmp.anchorpost-%d-%s-abcdefgh1234" % (DEAD, KEY))
        os.chown(os.path.join(S, name), 65534, 65534)
        stays.append(name)
    p = subprocess.run([POST, "dump", RING, "-o", os.path.join(S, "out.csv")], capture_output=True, text=True)
    check(p.returncode == 0, "dump into the sweep directory: %s" % p.stderr)
    now = set(os.listdir(S))
    for g in gone:
        check(g not in now, "a dead process's temp was not removed: %s" % g)
    for s in stays:
        check(s in now, "the sweep removed what it must not: %s" % s)
    check(open(victim).read() == "keep me\n", "the symlink's target was changed")
    check(os.path.isdir(os.path.join(S, stays[4], "sub")), "the directory with a subdirectory was emptied")
    print("ok: the sweep removed the dead process's file and flat directory and left %d look-alikes" % len(stays))
finally:
    live.kill()
    live.wait()
print("PASS")
