"""`report -d OUT` into an existing OUT never replaces what is not a plain
output of its own (issue 23 point 4).

report builds its files beside OUT and moves them in file by file; a rename
drops whatever had the name.  Each case puts one thing at an output's name
in OUT, runs report (ring + perun + a py-spy profile, so all 19 files are
written) and wants: exit 1, one stderr line naming OUT/NAME and saying why,
OUT exactly as before (names, kinds, bytes), no build directory left:

  * a FIFO, a character device (as root), a socket, a directory;
  * a symlink to a regular file elsewhere, a dangling symlink;
  * the run's own inputs under an output's name: the ring given as
    OUT/phases.csv, the profile as OUT/trace.json, the perun file as
    OUT/perun.csv, and a hard link of the ring at OUT/samples.csv.

And the control: a stale regular phases.csv and an unrelated FIFO in OUT:
report succeeds, replaces phases.csv, leaves the FIFO alone.
"""
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
GEN = os.path.join(BUILD, "tools", "ringgen")
TIMEOUT_S = 120  # far above a report of this size; reached only by a hang


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
os.makedirs(D)
RING = os.path.join(D, "r.ring")
PERUN = os.path.join(D, "p.hdf5")
PROF = os.path.join(D, "prof.json")
subprocess.run([GEN, RING, "--rank", "0", "--nranks", "1", "--steps", "50", "--host", "hostA",
                "--power-out", os.path.join(D, "pw.csv")], check=True, capture_output=True)
subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), PERUN,
                "hostA=" + os.path.join(D, "pw.csv")], check=True, capture_output=True)
# py-spy's layout, on the ring's own process and thread (ringgen: 1000/1000).
with open(PROF, "w") as f:
    f.write('{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":[{"type":"sampled",'
            '"name":"Process 1000 Thread 1000 \\"MainThread\\"","unit":"seconds","startValue":0.0,'
            '"endValue":0.05,"samples":[[0],[0,1],[0,1],[0],[0]],"weights":[0.01,0.01,0.01,0.01,0.01]}],'
            '"shared":{"frames":[{"name":"main","file":"/x/train.py","line":1,"col":null},'
            '{"name":"step","file":"/x/train.py","line":9,"col":null}]},'
            '"activeProfileIndex":null,"exporter":"py-spy@0.4.1","name":"py-spy profile"}')


def report(out, ring=RING, perun=PERUN, prof=PROF):
    return subprocess.run([POST, "report", "--ring", ring, "--perun", perun, "--profile", prof, "-d", out],
                          capture_output=True, text=True, timeout=TIMEOUT_S)


def snapshot(d):
    """name -> (kind, link target or bytes) of every entry of d."""
    snap = {}
    for e in sorted(os.listdir(d)):
        p = os.path.join(d, e)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            snap[e] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                snap[e] = ("file", st.st_ino, f.read())
        else:
            snap[e] = (stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev)
    return snap


p = report(os.path.join(TMP, "ref"))
check(p.returncode == 0, "reference report failed: %s" % p.stderr)
NAMES = sorted(os.listdir(os.path.join(TMP, "ref")))
check(len(NAMES) >= 19 and "trace.json" in NAMES and "samples.csv" in NAMES, "reference report wrote %s" % NAMES)
print("ok: reference report: %d files" % len(NAMES))

ncase = 0


def refused(label, name, make, want, **inputs):
    """OUT holds make(path) at OUT/name; report must refuse, OUT unchanged."""
    global ncase
    ncase += 1
    out = os.path.join(TMP, "case%02d" % ncase)
    os.makedirs(out)
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("the user's own file\n")
    held = make(os.path.join(out, name))
    before = snapshot(out)
    p = report(out, **{k: v(out) for k, v in inputs.items()})
    lines = p.stderr.strip().splitlines()
    what = "%s at OUT/%s" % (label, name)
    check(p.returncode == 1, "%s: exit %d, want 1 (stderr %r)" % (what, p.returncode, p.stderr))
    check(len(lines) == 1, "%s: want one stderr line, got %r" % (what, p.stderr))
    check(lines[0].startswith("anchorpost: %s/%s: " % (out, name)), "%s: the line does not name it: %r" %
          (what, lines[0]))
    check(want in lines[0], "%s: %r not in %r" % (what, want, lines[0]))
    check(snapshot(out) == before, "%s: OUT changed: %s -> %s" % (what, sorted(before), sorted(snapshot(out))))
    left = [e for e in os.listdir(TMP) if e.startswith(os.path.basename(out) + ".tmp.")]
    check(not left, "%s: left %s" % (what, left))
    if hasattr(held, "close"):  # the socket
        held.close()
    print("ok: %s: refused: %s" % (what, lines[0].split(": ", 2)[-1]))


def fifo(p):
    os.mkfifo(p)


def chardev(p):
    os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def sock(p):
    s = socket.socket(socket.AF_UNIX)
    s.bind(p)
    return s


def directory(p):
    os.makedirs(p)


def link_elsewhere(p):
    tgt = os.path.join(TMP, "elsewhere-%s" % os.path.basename(os.path.dirname(p)))
    with open(tgt, "w") as f:
        f.write("keep\n")
    os.symlink(tgt, p)


def dangling(p):
    os.symlink(os.path.join(TMP, "no-such-file"), p)


refused("a FIFO", "phases.csv", fifo, "FIFO")
if os.geteuid() == 0:
    refused("a character device", "timeline.csv", chardev, "character device")
else:
    print("note: not root: the character device case skipped")
refused("a socket", "samples.csv", sock, "socket")
refused("a directory", "timeline.svg", directory, "directory")
refused("a symlink to a file elsewhere", "trace.json", link_elsewhere, "symlink")
refused("a dangling symlink", "perun.csv", dangling, "symlink")
refused("the ring", "phases.csv", lambda p: shutil.copy(RING, p), "input",
        ring=lambda out: os.path.join(out, "phases.csv"))
refused("the profile", "trace.json", lambda p: shutil.copy(PROF, p), "input",
        prof=lambda out: os.path.join(out, "trace.json"))
refused("the perun file", "perun.csv", lambda p: shutil.copy(PERUN, p), "input",
        perun=lambda out: os.path.join(out, "perun.csv"))
refused("a hard link of the ring", "samples.csv", lambda p: os.link(RING, p), "input")

# Control: a regular stale output is replaced, an unrelated FIFO stays.
out = os.path.join(TMP, "control")
os.makedirs(out)
with open(os.path.join(out, "phases.csv"), "w") as f:
    f.write("stale\n")
os.mkfifo(os.path.join(out, "other.fifo"))
p = report(out)
check(p.returncode == 0, "control: report failed: %s" % p.stderr)
check(open(os.path.join(out, "phases.csv")).read() != "stale\n", "control: the stale phases.csv was not replaced")
check(stat.S_ISFIFO(os.lstat(os.path.join(out, "other.fifo")).st_mode), "control: other.fifo was touched")
check(sorted(os.listdir(out)) == sorted(NAMES + ["other.fifo"]), "control: OUT holds %s" % sorted(os.listdir(out)))
print("ok: control: a stale regular output replaced, an unrelated FIFO left alone")
print("PASS (%d refusals)" % ncase)
