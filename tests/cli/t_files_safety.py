"""anchorpost never harms a file it does not own and never hangs on an input
(issue 15 points 10 and 11), with real filesystem objects and real processes:

  * -o onto a private character device (mknod c 1 3, /dev/null's numbers):
    written to, still a character device afterwards, for every writing
    subcommand that synthetic data reaches (dump, samples, perun, phases,
    timeline, phases --rings);
  * -o onto a FIFO with a reader: the reader gets the whole CSV, the FIFO
    stays a FIFO;
  * -o onto a private symlink to /proc/self/fd/1 (what /dev/stdout is), stdout
    a pipe and a regular file: the CSV arrives there, the link stays;
  * a sticky world-writable directory where uid 65534 (setpriv) plants
    symlinks to a root-owned victim at every FILE.tmp.PID name for the next
    3000 pids, and at the output name itself: the victim is untouched;
  * the output's mode follows the umask (0644 under 022, 0600 under 077);
  * -o equal to an input (same path, ./path, ../dir/path, a symlink, a hard
    link; ring, perun file, profile; --rings DIR): one line, exit 1, input
    byte for byte unchanged, no file left behind;
  * SIGINT and SIGTERM while `samples` writes a large profile's CSV: the
    process dies of the signal and no temp file is left;
  * a FIFO (no writer) and a character device given as input to every
    subcommand: one line naming the file, exit 1, within the timeout.
"""
import atexit
import glob
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
GEN = os.path.join(BUILD, "tools", "ringgen")
HANG_S = float(os.environ.get("ANCHOR_HANG_S", 60))  # far above any real run; reached only by a hang


FAILED = []


def die(msg):
    print("FAIL: " + msg)
    if os.environ.get("KEEP_GOING"):  # see every failing case (e.g. against an older build)
        FAILED.append(msg)
        return
    sys.exit(1)


def check(cond, msg):
    if not cond:
        die(msg)


def run(args, rc=0, **kw):
    try:
        p = subprocess.run([POST, *args], capture_output=True, text=True, timeout=HANG_S, **kw)
    except subprocess.TimeoutExpired:
        die("anchorpost %s hung (killed after %g s)" % (" ".join(args), HANG_S))
        return subprocess.CompletedProcess(args, None, "", "(hung)")
    if rc is not None and p.returncode != rc:
        die("anchorpost %s -> %d (want %d)\n%s" % (" ".join(args), p.returncode, rc, p.stderr))
    return p


def one_line_error(p, path, what, label):
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1, "%s: exit %s, want 1 (stderr %r)" % (label, p.returncode, p.stderr))
    check(len(lines) == 1, "%s: want one stderr line, got %r" % (label, p.stderr))
    if not lines:
        return
    check(lines[0].startswith("anchorpost: %s: " % path), "%s: line does not name %s: %r" % (label, path, lines[0]))
    check(what in lines[0], "%s: %r not in %r" % (label, what, lines[0]))


def read(path):
    with open(path, "rb") as f:
        return f.read()


for exe in (POST, GEN):
    if not os.access(exe, os.X_OK):
        print("skip: %s not built (make)" % exe)
        sys.exit(77)
try:
    import h5py  # noqa: F401
except ImportError:
    print("skip: h5py missing (scripts/install-deps.sh)")
    sys.exit(77)

# ---- inputs: a synthetic run (ring + perun) and a py-spy profile ----------
D = os.path.join(TMP, "in")
os.makedirs(D, exist_ok=True)
RING = os.path.join(D, "r.ring")
PERUN = os.path.join(D, "p.hdf5")
PROF = os.path.join(D, "prof.json")
subprocess.run([GEN, RING, "--rank", "0", "--nranks", "1", "--steps", "100", "--host", "hostA",
                "--power-out", os.path.join(D, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), PERUN,
                "hostA=" + os.path.join(D, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_pyspy_profile.py"), PROF, "--seconds", "2",
                "--rate", "100"], check=True, capture_output=True)
RINGS = os.path.join(TMP, "rings")
os.makedirs(RINGS, exist_ok=True)
os.link(RING, os.path.join(RINGS, "a.ring"))
ORIG = {p: read(p) for p in (RING, PERUN, PROF)}

# Every writing subcommand synthetic data reaches, as (label, args before -o).
WRITERS = [
    ("dump", ["dump", RING]),
    # --stack-text: a stream output (device, FIFO) has no companion
    # files, so samples writes the stack text there; a regular file gets
    # the same column plus companions.
    ("samples", ["samples", PROF, "--stack-text"]),
    ("perun", ["perun", PERUN]),
    ("phases", ["phases", "--ring", RING, "--perun", PERUN]),
    ("timeline", ["timeline", "--ring", RING, "--perun", PERUN]),
    ("phases --rings", ["phases", "--rings", RINGS, "--perun", PERUN]),
]
REF = {}
for label, args in WRITERS:
    out = os.path.join(TMP, "ref.csv")
    run(args + ["-o", out])
    REF[label] = read(out)
    os.unlink(out)
    for side in os.listdir(TMP):  # samples' companions (ref.csv.stacks.csv, ...)
        if side.startswith("ref.csv."):
            os.unlink(os.path.join(TMP, side))
    check(len(REF[label]) > 100, "%s: reference output too short" % label)
print("ok: reference outputs of %d subcommands" % len(WRITERS))


def entries(d):
    return sorted(os.listdir(d))


# ---- point 10: outputs ----------------------------------------------------
is_root = os.geteuid() == 0
if is_root:
    N = os.path.join(TMP, "node")
    os.makedirs(N)
    dev = os.path.join(N, "nul")
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for label, args in WRITERS:
        run(args + ["-o", dev])
        st = os.lstat(dev)
        check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
              "%s -o CHARDEV replaced the device node (mode %o)" % (label, st.st_mode))
        check(entries(N) == ["nul"], "%s -o CHARDEV left %s" % (label, entries(N)))
    print("ok: -o onto a private char device (1,3): written to, still a device, nothing left (%d subcommands)"
          % len(WRITERS))
else:
    print("note: not root: mknod and setpriv cases skipped")

F = os.path.join(TMP, "fifo")
os.makedirs(F)
fifo = os.path.join(F, "out.fifo")
for label, args in WRITERS:
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()

    t = threading.Thread(target=reader)
    t.start()
    run(args + ["-o", fifo])
    t.join(HANG_S)
    check(not t.is_alive(), "%s -o FIFO: the reader never saw EOF" % label)
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "%s -o FIFO replaced the FIFO" % label)
    check(got.get("data") == REF[label], "%s -o FIFO: reader got %d bytes, want %d" %
          (label, len(got.get("data") or b""), len(REF[label])))
    check(entries(F) == ["out.fifo"], "%s -o FIFO left %s" % (label, entries(F)))
    os.unlink(fifo)
print("ok: -o onto a FIFO: the reader gets the whole CSV, the FIFO stays")

S = os.path.join(TMP, "stdout")
os.makedirs(S)
link = os.path.join(S, "so")
os.symlink("/proc/self/fd/1", link)
for label, args in WRITERS:
    p = subprocess.run([POST, *args, "-o", link], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=HANG_S)
    check(p.returncode == 0, "%s -o LINK-TO-/proc/self/fd/1: exit %d %r" % (label, p.returncode, p.stderr))
    check(REF[label] in p.stdout, "%s -o LINK-TO-/proc/self/fd/1: CSV not on stdout (%d bytes)" %
          (label, len(p.stdout)))
    check(os.path.islink(link) and os.readlink(link) == "/proc/self/fd/1", "%s: the link was replaced" % label)
    check(entries(S) == ["so"], "%s -o LINK left %s" % (label, entries(S)))
    # stdout a regular file: still written through, the file is not replaced
    # behind the shell's back (same inode afterwards).  The private link, not
    # /dev/stdout: a build with the old bug renamed a file over /dev/stdout.
    red = os.path.join(TMP, "redirect.out")
    with open(red, "wb") as f:
        ino = os.fstat(f.fileno()).st_ino
        p = subprocess.run([POST, *args, "-o", link], stdout=f, stderr=subprocess.PIPE, timeout=HANG_S)
    check(p.returncode == 0, "%s -o LINK > FILE: exit %d" % (label, p.returncode))
    check(REF[label] in read(red), "%s -o LINK > FILE: CSV missing" % label)
    check(os.stat(red).st_ino == ino, "%s -o LINK > FILE: the file was replaced" % label)
    check(os.path.islink(link), "%s -o LINK > FILE: the link was replaced" % label)
    os.unlink(red)
print("ok: -o onto a symlink to /proc/self/fd/1 with stdout a pipe and a regular file: written through")

# Regular outputs: replaced atomically, mode from the umask.
R = os.path.join(TMP, "reg")
os.makedirs(R)
out = os.path.join(R, "o.csv")
with open(out, "w") as f:
    f.write("old\n")
old_ino = os.stat(out).st_ino
run(["dump", RING, "-o", out])
check(read(out) == REF["dump"] and os.stat(out).st_ino != old_ino, "regular -o: not replaced by a new file")
check(stat.S_IMODE(os.stat(out).st_mode) == 0o644, "mode %o under umask 022" % stat.S_IMODE(os.stat(out).st_mode))
os.unlink(out)
run(["dump", RING, "-o", out], preexec_fn=lambda: os.umask(0o077))
check(stat.S_IMODE(os.stat(out).st_mode) == 0o600, "mode %o under umask 077" % stat.S_IMODE(os.stat(out).st_mode))
tgt = os.path.join(R, "target.csv")
os.rename(out, tgt)
os.symlink("target.csv", out)
run(["dump", RING, "-o", out])
check(os.path.islink(out) and read(tgt) == REF["dump"], "-o SYMLINK-TO-REGULAR: link replaced or target not written")
check(entries(R) == ["o.csv", "target.csv"], "regular -o left %s" % entries(R))
print("ok: regular output replaced by a new inode, mode 0644/0600 under umask 022/077, symlink kept")

if is_root:
    # The test's own tree is 0700: the shared directory lives in /tmp.
    ST = tempfile.mkdtemp(prefix="anchor-sticky.", dir="/tmp")
    atexit.register(shutil.rmtree, ST, True)
    os.chmod(ST, 0o1777)
    victim = os.path.join(TMP, "victim")
    with open(victim, "w") as f:
        f.write("root's file\n")
    target = os.path.join(ST, "out.csv")
    last = int(open("/proc/sys/kernel/ns_last_pid").read())
    plant = ("import os,sys\nd,v,a,b=sys.argv[1],sys.argv[2],int(sys.argv[3]),int(sys.argv[4])\n"
             "for p in range(a,b): os.symlink(v, os.path.join(d, 'out.csv.tmp.%d' % p))\n")
    setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    # the planter's interpreter must be reachable by uid 65534 (not under /root)
    if os.access("/usr/bin/python3", os.X_OK):
        cmd = ["/usr/bin/python3", "-c", plant, ST, victim, str(last + 1), str(last + 3001)]
    else:
        cmd = ["sh", "-c", 'i=$3; while [ $i -lt $4 ]; do ln -s "$2" "$1/out.csv.tmp.$i"; i=$((i+1)); done',
               "sh", ST, victim, str(last + 1), str(last + 3001)]
    subprocess.run(setpriv + cmd, check=True)
    nplanted = len(entries(ST))
    p = run(["dump", RING, "-o", target])
    check(read(victim) == b"root's file\n", "a planted temp-name symlink was followed: root's victim overwritten")
    check(read(target) == REF["dump"] and not os.path.islink(target), "sticky dir: output not written")
    links = [e for e in entries(ST) if e != "out.csv"]
    check(len(links) == nplanted and all(os.path.islink(os.path.join(ST, e)) for e in links),
          "sticky dir: planted links were changed (%d of %d left)" % (len(links), nplanted))
    # ... and a link planted at the output name itself is not followed
    final = os.path.join(ST, "final.csv")
    subprocess.run(setpriv + ["ln", "-s", victim, final], check=True)
    p = run(["dump", RING, "-o", final], rc=1)
    one_line_error(p, final, "symlink owned by another user in a sticky directory", "sticky final-name link")
    check(read(victim) == b"root's file\n" and os.path.islink(final), "sticky final-name link followed")
    print("ok: sticky dir, uid 65534 planted %d links at FILE.tmp.PID and one at the output name: victim untouched"
          % nplanted)
    shutil.rmtree(ST, True)  # now, not only at exit: the test may be killed later

# Output equal to an input: refused, input unchanged, nothing left.
E = os.path.join(TMP, "eq")
os.makedirs(E)
os.symlink(RING, os.path.join(E, "ring-link"))
os.link(RING, os.path.join(E, "ring-hard"))
cwd_rel = os.path.relpath(RING, TMP)
cases = [
    (["dump", RING], RING, None),
    (["dump", RING], "./" + cwd_rel, TMP),
    (["dump", RING], os.path.join("..", os.path.basename(D), "r.ring"), E),
    (["dump", RING], os.path.join(E, "ring-link"), None),
    (["dump", RING], os.path.join(E, "ring-hard"), None),
    (["perun", PERUN], PERUN, None),
    (["samples", PROF], PROF, None),
    (["samples", PROF, "--by-frame"], PROF, None),
    (["phases", "--ring", RING, "--perun", PERUN], RING, None),
    (["phases", "--ring", RING, "--perun", PERUN], PERUN, None),
    (["timeline", "--ring", RING, "--perun", PERUN], PERUN, None),
    (["phases", "--rings", RINGS, "--perun", PERUN], os.path.join(RINGS, "a.ring"), None),
]
for args, o, cwd in cases:
    before = {d: entries(d) for d in (D, E, RINGS)}
    p = run(args + ["-o", o], rc=None, cwd=cwd)
    one_line_error(p, o, "refusing to overwrite", "%s -o %s" % (" ".join(args[:1]), o))
    for path, data in ORIG.items():
        check(read(path) == data, "%s -o %s changed %s" % (args[0], o, path))
    check({d: entries(d) for d in (D, E, RINGS)} == before, "%s -o %s left files behind" % (args[0], o))
print("ok: -o equal to an input refused with one line, input unchanged (%d cases)" % len(cases))

# SIGINT/SIGTERM during a long write leave no temp file.
BIG = os.path.join(TMP, "big.json")
subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_pyspy_profile.py"), BIG, "--seconds", "60",
                "--rate", "500"], check=True, capture_output=True)
for sig in (signal.SIGINT, signal.SIGTERM):
    done = False
    for attempt in range(5):
        K = os.path.join(TMP, "kill-%d-%d" % (sig, attempt))
        os.makedirs(K)
        p = subprocess.Popen([POST, "samples", BIG, "-o", os.path.join(K, "big.csv")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while p.poll() is None and not entries(K):
            time.sleep(0.002)
        if p.poll() is not None:
            p.wait()
            continue  # finished before its temp was seen: try again
        p.send_signal(sig)
        p.wait(HANG_S)
        if p.returncode == 0:
            continue  # the signal came after the rename: try again
        check(p.returncode == -sig, "samples: exit %d after %s, want death by the signal" %
              (p.returncode, signal.Signals(sig).name))
        check(entries(K) == [], "%s during samples left %s" % (signal.Signals(sig).name, entries(K)))
        done = True
        break
    check(done, "could not signal samples while it wrote (5 tries)")
    print("ok: %s during a long write: died of the signal, no temp file left" % signal.Signals(sig).name)
os.unlink(BIG)

# ---- point 11: inputs that are not regular files --------------------------
I = os.path.join(TMP, "inputs")
os.makedirs(I)
fifo = os.path.join(I, "in.fifo")
os.mkfifo(fifo)
bad = [(fifo, "FIFO")]
if is_root:
    zero = os.path.join(I, "zero")
    os.mknod(zero, 0o666 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero's numbers: endless input
    bad.append((zero, "character device"))
OUT = os.path.join(TMP, "in-out")
os.makedirs(OUT)
ncase = 0
for node, kind in bad:
    cmds = [
        ["info", node],
        ["dump", node],
        ["samples", node],
        ["samples", node, "--by-frame"],
        ["samples", PROF, "--ring", node],
        ["perun", node],
        ["phases", "--ring", node, "--perun", PERUN],
        ["phases", "--ring", RING, "--perun", node],
        ["functions", "--ring", RING, "--perun", PERUN, "--profile", node],
        ["timeline", "--ring", RING, "--perun", PERUN, "--profile", node],
        ["timeline", "--ring", node, "--perun", PERUN],
        ["report", "--ring", node, "--perun", PERUN, "-d", os.path.join(OUT, "rep")],
        ["report", "--ring", RING, "--perun", PERUN, "--profile", node, "-d", os.path.join(OUT, "rep")],
        ["phases", "--rings", node, "--perun", PERUN],
        ["stragglers", "--rings", node, "--perun", PERUN],
    ]
    for c in cmds:
        if c[0] not in ("info", "report"):
            c = c + ["-o", os.path.join(OUT, "o.csv")]
        p = run(c, rc=None)
        one_line_error(p, node, kind, " ".join(c))
        check(not glob.glob(os.path.join(OUT, "o.csv*")), "%s left an output" % " ".join(c))
        ncase += 1
print("ok: a FIFO without writer%s as input: one line, exit 1, no hang (%d cases)" %
      (" and a char device (1,5)" if is_root else "", ncase))
if FAILED:
    sys.exit(1)
print("PASS")
