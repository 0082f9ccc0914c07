"""Mutated rings and perun files never give exit 0 with garbage (issue 23
point 6).

Deterministic mutations (seed fixed, ANCHOR_MUTATIONS scales the count) of
real inputs:

  * rings written by the real writer (tests/victims/marker: threads, a
    wrapped ring whose SYNC records are all overwritten so UTC comes from
    the header's creation stamp, forks): each header word set to 0, 2^64-1,
    2^63, a random value or one flipped bit, and random bytes anywhere;
    then `info` and `dump`;
  * the repository's real perun file (perun 1.0.0 over an emulated RAPL and
    NVML, with regions): one element of a timesteps, values, alt_values or
    region dataset set to inf, -inf, NaN, 1e30 or -1e30 (h5py); then
    `perun`, `perun --regions` and `phases`.

Each run must either fail cleanly (exit 1, one stderr line
"anchorpost: FILE: ...") or succeed with sane output: every time in
1970..2262 (what a CLOCK_REALTIME nanosecond count can say), every count
below 2^40 (no ring holds more: 2^30 slots at most), every number finite,
every relative time within 10^9 s.  Before: a header head of 2^64-1 printed
"overwritten 4611686018427385855 slots", a creation stamp >= 2^63 dated
dump rows 1734, a region time of -inf went into the CSV.
"""
import csv
import io
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
POST = os.path.join(BUILD, "anchorpost")
MARKER = os.path.join(BUILD, "victims", "marker")
FIXTURE = os.path.join(ROOT, "tests", "data", "perun", "emulated_rapl_nvml.hdf5")
N = int(os.environ.get("ANCHOR_MUTATIONS", "1"))  # scale; 1 = about 570 runs, 10-20 s
TIMEOUT_S = 60  # far above any run here (perun's guard itself stops libhdf5 at 20 s)

COUNT_MAX = 1 << 40
REL_T_MAX_S = 1e9
YEAR_MIN, YEAR_MAX = 1970, 2262

for exe in (POST, MARKER):
    if not os.access(exe, os.X_OK):
        print("skip: %s not built (make)" % exe)
        sys.exit(77)
try:
    import h5py
    import numpy as np
except ImportError:
    print("skip: h5py/numpy missing (scripts/install-deps.sh)")
    sys.exit(77)

failures = []


def bad(label, msg):
    failures.append("%s: %s" % (label, msg))
    if len(failures) <= int(os.environ.get("ANCHOR_SHOW_FAILURES", "12")):
        print("FAIL: %s: %s" % (label, msg))


def run(args):
    return subprocess.run([POST, *args], capture_output=True, text=True, timeout=TIMEOUT_S)


def clean_failure(p, path, label):
    """exit 0 (then the caller checks the output) or a clean exit 1."""
    if p.returncode == 0:
        return True
    lines = p.stderr.strip().splitlines()
    if p.returncode != 1:
        bad(label, "exit %d (stderr %r)" % (p.returncode, p.stderr[-300:]))
    elif len(lines) != 1 or not lines[0].startswith("anchorpost: %s: " % path):
        bad(label, "not one line naming the file: %r" % p.stderr[-300:])
    return False


def year_ok(iso):
    m = re.match(r"(-?\d+)-\d\d-\d\dT", iso)
    return m is not None and YEAR_MIN <= int(m.group(1)) <= YEAR_MAX


def check_info(out, label):
    for line in out.splitlines():
        key = line.split(" ", 1)[0]
        if key in ("created", "span"):
            for iso in re.findall(r"-?\d+-\d\d-\d\dT[\d:.]+Z", line):
                if not year_ok(iso):
                    bad(label, "info %s: impossible time %s" % (key, iso))
        if key in ("written", "lost", "records", "warning", "format"):
            for num in re.findall(r"\b\d+\b", line):
                if int(num) >= COUNT_MAX:
                    bad(label, "info: impossible count %s in %r" % (num, line))


def check_dump(out, label):
    r = csv.reader(io.StringIO(out))
    header = next(r, None)
    if header is None:
        return
    iu, iso_col = header.index("unix_ns"), header.index("utc_iso")
    for row in r:
        if row[iu] and not (0 <= int(row[iu]) < (1 << 63)):
            bad(label, "dump: impossible unix_ns %s" % row[iu])
            return
        if row[iso_col] and not year_ok(row[iso_col]):
            bad(label, "dump: impossible time %s" % row[iso_col])
            return


def finite_csv(path, cols, label, rel_time_cols=()):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        for row in r:
            for c in cols:
                v = row.get(c)
                if v is None or v == "":
                    continue
                x = float(v)
                if not math.isfinite(x):
                    bad(label, "%s: %s = %s" % (os.path.basename(path), c, v))
                    return
                if c in rel_time_cols and abs(x) > REL_T_MAX_S:
                    bad(label, "%s: impossible time %s = %s" % (os.path.basename(path), c, v))
                    return


rng = random.Random(20231)

# ---- rings ---------------------------------------------------------------
R = os.path.join(TMP, "rings")
os.makedirs(R)
seeds = {}
for name, args in (("threads", ["threads", "3", "50"]), ("wrapped", ["threads", "2", "3000"]),
                   ("forks", ["forks", "2", "20", MARKER])):
    path = os.path.join(R, name + ".ring")
    env = dict(os.environ, ANCHOR_FILE=path, ANCHOR_RING_SIZE="64K")
    subprocess.run([MARKER, *args], env=env, check=True, capture_output=True)
    seeds[name] = open(path, "rb").read()
    p = run(["info", path])
    if p.returncode != 0:
        print("FAIL: seed %s unreadable: %s" % (name, p.stderr))
        sys.exit(1)
    check_info(p.stdout, "seed " + name)

# The header's 64-bit words a writer sets (ring_format.h), by offset.
HDR_WORDS = {"nslots": 24, "data_offset": 32, "feat_mask": 40, "create_realtime_ns": 72,
             "create_monotonic_ns": 80, "head": 1024, "dropped": 1088, "dropped_user": 1096,
             "lapped": 1152}
for k, name in ((2, "user"), (3, "user_last"), (4, "other"), (6, "nested_user")):
    HDR_WORDS["lane0.%s" % name] = 1216 + 8 * k  # the lane the seeds' first thread owns
SPECIAL = [0, (1 << 64) - 1, 1 << 63, None, "flip"]


def mutate_ring(data, label):
    b = bytearray(data)
    if label.startswith("word"):
        word, how = label.split(":")[1], label.split(":")[2]
        off = HDR_WORDS[word]
        old = struct.unpack_from("<Q", b, off)[0]
        if how == "flip":
            new = old ^ (1 << rng.randrange(64))
        elif how == "rand":
            new = rng.getrandbits(64)
        else:
            new = int(how)
        struct.pack_into("<Q", b, off, new)
    else:
        for _ in range(rng.randint(1, 8)):
            off = rng.randrange(len(b)) if rng.random() < 0.5 else rng.randrange(4096)
            b[off] = rng.randrange(256)
    return bytes(b)


nring = 0
for seed, data in seeds.items():
    cases = []
    for word in HDR_WORDS:
        for how in SPECIAL:
            cases.append("word:%s:%s" % (word, "rand" if how is None else how))
    cases += ["bytes:%d" % i for i in range(10 * N)]
    for c in cases:
        label = "%s %s" % (seed, c)
        path = os.path.join(R, "m.ring")
        with open(path, "wb") as f:
            f.write(mutate_ring(data, c))
        p = run(["info", path])
        if clean_failure(p, path, label + " info"):
            check_info(p.stdout, label + " info")
        p = run(["dump", path])
        if clean_failure(p, path, label + " dump"):
            check_dump(p.stdout, label + " dump")
        nring += 1
print("ok: %d mutated rings through info and dump" % nring)

# ---- perun ---------------------------------------------------------------
P = os.path.join(TMP, "perun")
os.makedirs(P)
RING = os.path.join(R, "threads.ring")
targets = []
with h5py.File(FIXTURE, "r") as f:
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.ndim == 1 and obj.shape[0] and obj.dtype.kind == "f":
            if name.rsplit("/", 1)[-1] in ("timesteps", "values") or "/regions/" in name:
                targets.append(name)
    f.visititems(visit)
if not any("/regions/" in t for t in targets) or not any(t.endswith("timesteps") for t in targets):
    print("FAIL: the fixture lacks regions or timesteps: %s" % targets)
    sys.exit(1)
SPECIAL_F = [float("inf"), float("-inf"), float("nan"), 1e30, -1e30]
nperun = 0
for i in range(8 * N):
    for val in SPECIAL_F:
        name = targets[(i * len(SPECIAL_F) + SPECIAL_F.index(val)) % len(targets)] if i < len(targets) \
            else rng.choice(targets)
        path = os.path.join(P, "m.hdf5")
        shutil.copy(FIXTURE, path)
        with h5py.File(path, "r+") as f:
            d = f[name]
            k = rng.randrange(d.shape[0])
            d[k] = np.array(val, dtype=d.dtype)
        label = "perun %s[%d] = %r" % (name.split("/nodes/")[-1], k, val)
        out = os.path.join(P, "o.csv")
        p = run(["perun", path, "-o", out])
        if clean_failure(p, path, label):
            finite_csv(out, ["t_rel_s", "value"], label, ("t_rel_s",))
        p = run(["perun", path, "--regions", "-o", out])
        if clean_failure(p, path, label + " --regions"):
            finite_csv(out, ["start_s", "stop_s"], label + " --regions", ("start_s", "stop_s"))
        p = run(["phases", "--ring", RING, "--perun", path, "-o", out])
        if clean_failure(p, path, label + " phases"):
            finite_csv(out, [c for c in open(out).readline().strip().split(",")
                             if c.endswith("_j") or c.endswith("_w") or c.endswith("_s")], label + " phases")
        for e in os.listdir(P):
            if e != "m.hdf5":
                os.unlink(os.path.join(P, e))
        nperun += 1
print("ok: %d mutated perun files through perun, perun --regions and phases" % nperun)

if failures:
    print("%d of %d runs gave garbage with exit 0 (first ones above)" % (len(failures), 2 * nring + 3 * nperun))
    sys.exit(1)
print("PASS")
