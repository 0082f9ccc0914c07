"""Bad rings: empty, truncated, zero-filled, random bytes, wrong magic,
newer major version, symlink at the ring path, foreign file at ANCHOR_FILE.
anchorpost: one line naming the file, exit 1, no crash; libanchor: refuses,
one stderr line, the host program runs unchanged."""
import os, random, struct, subprocess, sys

B = os.environ["BUILD"]
T = os.environ["ANCHOR_TEST_TMP"]
AP = f"{B}/anchorpost"
fails = 0

def check(name, data, expect):
    global fails
    path = os.path.join(T, name + ".ring")
    with open(path, "wb") as f:
        f.write(data)
    r = subprocess.run([AP, "info", path], capture_output=True, text=True)
    err = r.stderr.strip()
    ok = (r.returncode == 1 and len(err.splitlines()) == 1 and path in err
          and expect in err and r.returncode < 128)
    print(("ok  " if ok else "FAIL"), name, "->", r.returncode, err)
    fails += not ok

# A real ring to mutate.
good = os.path.join(T, "good.ring")
env = dict(os.environ, ANCHOR_FILE=good, ANCHOR_RING_SIZE="64K")
subprocess.run([f"{B}/victims/marker", "threads", "2", "100"], env=env, check=True)
data = open(good, "rb").read()
r = subprocess.run([AP, "info", good], capture_output=True, text=True)
assert r.returncode == 0 and "mark 200" in r.stdout, r.stdout + r.stderr

check("empty", b"", "empty file")
check("short", data[:100], "too short")
check("zero", bytes(len(data)), "zero-filled")
check("random", random.Random(7).randbytes(len(data)), "bad magic")
check("magic", b"NOTARING" + data[8:], "bad magic")
newer = bytearray(data); struct.pack_into("<H", newer, 10, 9)
minor = struct.unpack_from("<H", data, 12)[0]  # this build's writer = reader minor
check("newer", bytes(newer), "version 9.%d is newer than this reader (1.%d)" % (minor, minor))
geom = bytearray(data); struct.pack_into("<Q", geom, 24, 1000)
check("geometry", bytes(geom), "slot count")

# Truncated after the header: readable, with a warning that says so.
trunc = os.path.join(T, "trunc.ring")
open(trunc, "wb").write(data[: 4096 + 64 * 100])
r = subprocess.run([AP, "info", trunc], capture_output=True, text=True)
ok = r.returncode == 0 and "truncated" in r.stderr and trunc in r.stderr
print(("ok  " if ok else "FAIL"), "truncated ->", r.returncode, r.stderr.strip())
fails += not ok

# The writer side: a symlink at the ring path is never followed, a foreign
# file is never overwritten, and the host program still runs normally.
target = os.path.join(T, "victim.txt")
open(target, "w").write("precious\n")
link = os.path.join(T, "link.ring")
os.symlink(target, link)
foreign = os.path.join(T, "foreign.ring")
open(foreign, "w").write("not a ring at all, keep me\n" * 300)
for path, want in ((link, "symlink"), (foreign, "not an anchor ring")):
    env = dict(os.environ, ANCHOR_FILE=path)
    r = subprocess.run(["sh", "-c", "echo hello; exit 3"], env=dict(env, LD_PRELOAD=f"{B}/libanchor.so"),
                       capture_output=True, text=True)
    lines = [l for l in r.stderr.splitlines() if l.startswith("anchor[")]
    ok = (r.returncode == 3 and r.stdout == "hello\n" and len(lines) == 1 and want in lines[0])
    print(("ok  " if ok else "FAIL"), "writer", os.path.basename(path), "->", r.returncode, lines)
    fails += not ok
ok = open(target).read() == "precious\n" and open(foreign).read().startswith("not a ring")
print(("ok  " if ok else "FAIL"), "files behind symlink / foreign file untouched")
fails += not ok

# A ring is created 0600 and never truncated by a second attach.
fresh = os.path.join(T, "fresh.ring")
env = dict(os.environ, ANCHOR_FILE=fresh, ANCHOR_RING_SIZE="64K", LD_PRELOAD=f"{B}/libanchor.so")
subprocess.run(["true"], env=env, check=True)
mode = os.stat(fresh).st_mode & 0o777
subprocess.run(["true"], env=dict(env, ANCHOR_RING_SIZE="1M"), check=True)
r = subprocess.run([AP, "info", fresh], capture_output=True, text=True)
ok = mode == 0o600 and "processes  2" in r.stdout and "1024 slots" in r.stdout
print(("ok  " if ok else "FAIL"), f"mode {mode:o}, two processes appended, size kept")
fails += not ok
print("failures:", fails)
sys.exit(1 if fails else 0)
