"""anchorpost perun on ~200 randomly corrupted copies of the perun fixtures,
built with ASan + UBSan; then every other command that reads perun (phases,
functions, timeline, report, stragglers) on the same files, normal build.

A libFuzzer target suits HDF5 poorly (libhdf5 wants files), so this mutates
files instead, with a fixed seed: flipped bits, overwritten byte runs, and
truncations, over the whole file and over its first 4 KiB (superblock and
root object headers).  Every run must end with exit 0, or exit 1 and one
line "anchorpost: FILE: ..."; no sanitizer report, no signal, no hang.
Sanitizer reports whose first frame (past the sanitizer's own) is inside
libhdf5 are bugs of libhdf5, not ours: they are listed as LIBHDF5 lines with
whether h5dump (same libhdf5) also crashes on that file, and the normal build
must still answer them with exit 0/1 and one line (perun_guard.c walks the
file in a child first); then they do not fail the test.  Anything in our
code, any hang, or any other exit fails it.
ASan runs with allocator_may_return_null=1 so a huge malloc from a corrupt
size field returns NULL as plain malloc does, instead of aborting.
The other commands get a synthetic ring with phases (tools/ringgen, so the
perun file is read: the ring is loaded first) and a tiny chrometrace
profile; each must end with exit 0, or exit 1 and one line
"anchorpost: ...: ..." after any warnings: no signal, no hang (report must
also leave no output directory behind when it fails).
"""

import os
import random
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from perun_testlib import BUILD, TMP, check, die, fixture_sets

SEED = 20261129
N = int(os.environ.get("PERUN_CORRUPT_N", "200"))
# Cases of this seed that hit libhdf5 1.10.8 bugs in a 1000-case run over the
# perun 0.9.1 files of ../shared/fixtures/perun: SEGV, heap overflow or memcpy
# overlap in H5HG_read/H5Aexists, and two endless loops in H5HG_read ->
# H5C_protect (375, 550).  Run them too when those files are present.
KNOWN_SHARED = [0, 19, 231, 375, 462, 527, 550, 745]
LIMIT_S = 8  # perun_guard.c time limit for libhdf5 (fixtures read in < 0.1 s)
ROOT = os.environ.get("ANCHOR_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
B = os.path.join(BUILD, "asan")

# The same build as t_sanitizers_slow.sh's (tests/lib/asan_build.sh): when that
# ran first, nothing is compiled here.
p = subprocess.run(["bash", os.path.join(ROOT, "tests", "lib", "asan_build.sh"), f"{B}/anchorpost"],
                   cwd=ROOT, env=dict(os.environ, BUILD=BUILD), capture_output=True, text=True, timeout=600)
if p.returncode != 0:
    die(f"ASan+UBSan build failed: {p.stderr[-2000:]}")
AP = os.path.join(B, "anchorpost")
PLAIN = os.path.join(BUILD, "anchorpost")
print(f"ok: built {AP} with -fsanitize=address,undefined")

env = dict(os.environ,
           ASAN_OPTIONS="exitcode=86:detect_leaks=1:allocator_may_return_null=1:symbolize=1",
           UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1",
           ANCHORPOST_PERUN_TIMEOUT_S=str(LIMIT_S))


def load_seeds(folder):
    seeds = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".hdf5"):
            with open(os.path.join(folder, name), "rb") as f:
                seeds.append((name, f.read()))
    check(seeds, f"no perun fixtures in {folder}")
    return seeds


rng = random.Random(SEED)


def mutate(data):
    d = bytearray(data)
    kind = rng.choice(["flip", "flip_head", "run", "run_head", "truncate"])
    span = len(d) if not kind.endswith("_head") else min(len(d), 4096)
    if kind.startswith("flip"):
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(span)
            d[i] ^= 1 << rng.randrange(8)
    elif kind.startswith("run"):
        i = rng.randrange(span)
        n = rng.randint(1, 64)
        fill = rng.choice([None, 0x00, 0xFF])
        for k in range(i, min(i + n, len(d))):
            d[k] = rng.randrange(256) if fill is None else fill
    else:
        d = d[: rng.randrange(1, len(d))]
    return kind, bytes(d)


SAN_FRAME = re.compile(r"libsanitizer|__interceptor_|asan_|ubsan_|lsan_")


def first_frame(block):
    """First stack frame of a report block that is not the sanitizer's own."""
    for ln in block.splitlines():
        if re.match(r"\s*#\d+ ", ln) and not SAN_FRAME.search(ln):
            return ln.strip()
    return ""


def classify(stderr):
    """'libhdf5' when every report starts inside libhdf5, else 'ours'."""
    if "runtime error:" in stderr:  # UBSan: only our code is instrumented
        return "ours", stderr[stderr.index("runtime error:"):].splitlines()[0]
    if "LeakSanitizer" in stderr:
        blocks = re.split(r"(?=(?:Direct|Indirect) leak of)", stderr)[1:]
        firsts = [first_frame(b) for b in blocks]
        where = "libhdf5" if firsts and all("libhdf5" in f for f in firsts) else "ours"
        return where, f"leak, allocated at {firsts[:2]}"
    m = re.search(r"ERROR: AddressSanitizer: ([^\n(]+)", stderr)
    if m:
        f = first_frame(stderr[m.start():])
        return ("libhdf5" if "libhdf5" in f else "ours"), f"{m.group(1).strip()} at {f}"
    return "ours", "no sanitizer report"


def h5dump_crashes(path):
    try:
        r = subprocess.run(["h5dump", path], capture_output=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired) as e:
        return f"h5dump: {type(e).__name__}"
    return f"h5dump exit {r.returncode}" + (" (signal: crashes too)" if r.returncode < 0 or
                                              r.returncode >= 128 else "")


GEN = os.path.join(BUILD, "tools", "ringgen")
RING = os.path.join(TMP, "corrupt-ring.ring")
PROFILE = os.path.join(TMP, "corrupt-profile.json")
# Cases at a time: each is a chain of single-threaded processes, so one per
# core (at most 4) halves the wall time on 2 cores; the time limits above
# are 40-80x what a read takes (< 0.1 s), so sharing the cores changes no
# verdict.
JOBS = max(1, min(4, os.cpu_count() or 1))
lock = threading.Lock()
OTHER_LIMIT_S = 4  # the guard's limit for the other commands (fewer seconds per looping case)
subprocess.run([GEN, RING, "--rank", "0", "--nranks", "1", "--steps", "20", "--pid", "4242"],
               check=True, capture_output=True)
with open(PROFILE, "w") as f:
    f.write('[{"args":{"filename":"/x/train.py","line":3},"cat":"py-spy","name":"step","ph":"B",'
            '"pid":4242,"tid":1,"ts":1000},'
            '{"args":{"filename":"/x/train.py","line":3},"cat":"py-spy","name":"step","ph":"E",'
            '"pid":4242,"tid":1,"ts":900000}]')
other_env = dict(os.environ, ANCHORPOST_PERUN_TIMEOUT_S=str(OTHER_LIMIT_S))
other_counts = {}
other_slowest = {}


def other_commands(path, i):
    """Every other command that reads perun, on one corrupted file (i: the case's tag)."""
    rep = os.path.join(work, f"case{i}-report")
    cmds = {
        "phases": ["phases", "--ring", RING, "--perun", path, "-o", os.path.join(work, f"{i}-o-phases.csv")],
        "functions": ["functions", "--ring", RING, "--perun", path, "--profile", PROFILE,
                      "-o", os.path.join(work, f"{i}-o-functions.csv")],
        "timeline": ["timeline", "--ring", RING, "--perun", path, "-o", os.path.join(work, f"{i}-o-timeline.csv")],
        "report": ["report", "--ring", RING, "--perun", path, "--profile", PROFILE, "-d", rep],
        "stragglers": ["stragglers", "--ring", RING, "--perun", path, "-o", os.path.join(work, f"{i}-o-strag.csv")],
    }
    bad = []
    for name, args in cmds.items():
        t0 = time.monotonic()
        try:
            r = subprocess.run([PLAIN] + args, capture_output=True, text=True, errors="replace",
                               env=other_env, timeout=OTHER_LIMIT_S + 60)
            dt = time.monotonic() - t0
            with lock:
                if dt > other_slowest.get(name, (0, 0))[0]:
                    other_slowest[name] = (dt, i)
        except subprocess.TimeoutExpired:
            bad.append(f"{name}: hung for {OTHER_LIMIT_S + 60} s")
            continue
        lines = [ln for ln in r.stderr.strip().splitlines() if ln]
        errs = [ln for ln in lines if not ln.startswith("anchorpost: warning: ")]
        if r.returncode == 0:
            ok = not errs
        elif r.returncode == 1:
            ok = len(errs) == 1 and errs[0].startswith("anchorpost: ") and lines[-1] == errs[0]
            if name == "report" and (os.path.exists(rep) or
                                     any(e.startswith(os.path.basename(rep) + ".tmp.") for e in os.listdir(work))):
                ok, errs = False, errs + ["a failed report left files behind"]
        else:
            ok = False
        with lock:
            other_counts[(name, r.returncode if ok else "bad")] = other_counts.get((name, r.returncode if ok else "bad"), 0) + 1
        if not ok:
            bad.append(f"{name}: exit {r.returncode}: {lines[-3:]}")
        if os.path.isdir(rep):
            subprocess.run(["rm", "-rf", rep])
    return bad


counts = {"exit0": 0, "exit1": 0}
kinds = {}
problems = []
hdf5_bugs = []
work = os.path.join(TMP, "corrupt")
os.makedirs(work, exist_ok=True)
ran = 0


def run_cases(label, seeds, n, known):
    """Cases 0..n-1 and `known` of the seeded mutation sequence over `seeds`:
    the mutations drawn in order (the seed fixes them), then JOBS cases at a
    time (each case is its own files and processes)."""
    global ran, rng
    rng = random.Random(SEED)
    cases = []
    for i in range(max([n] + [k + 1 for k in known])):
        name, data = seeds[i % len(seeds)]
        kind, bad = mutate(data)
        if i >= n and i not in known:
            continue
        ran += 1
        kinds[kind] = kinds.get(kind, 0) + 1
        cases.append((label, i, name, kind, bad))
    with ThreadPoolExecutor(JOBS) as ex:
        list(ex.map(lambda c: one_case(*c), cases))


def one_case(label, i, name, kind, bad):
    """One corrupted file: the ASan build's `perun`, then the other commands."""
    path = os.path.join(work, f"{label}_case{i:03d}_{name}")
    out = os.path.join(work, f"{label}_case{i:03d}.csv")
    with open(path, "wb") as f:
        f.write(bad)
    args = [AP, "perun", path, "-o", out] + (["--regions"] if i % 5 == 4 else [])
    try:
        r = subprocess.run(args, capture_output=True, text=True, errors="replace", env=env,
                           timeout=LIMIT_S + 60)
    except subprocess.TimeoutExpired:
        problems.append(f"{label} case {i} ({kind} of {name}): hung for {LIMIT_S + 60} s")
        return
    # allocator_may_return_null=1 makes ASan note libhdf5's huge mallocs
    # from corrupt size fields; that note is ASan's, not anchorpost's output.
    lines = [ln for ln in r.stderr.strip().splitlines()
             if not re.match(r"==\d+==WARNING: AddressSanitizer failed to allocate", ln)]
    report = re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", r.stderr)
    if report:
        # The sanitizer report may come from the forked child that walks
        # the file first (perun_guard.c); the parent then exits 1.
        ok = False
    elif r.returncode == 0:
        ok = all(ln.startswith("anchorpost: warning: ") for ln in lines) and len(lines) <= 1 \
            and os.path.exists(out)
        with lock:
            counts["exit0"] += ok
    elif r.returncode == 1:
        if "did not finish reading this file" in r.stderr:
            hdf5_bugs.append(f"{label} case {i} ({kind} of {name}): libhdf5 looped, stopped after "
                             f"{LIMIT_S} s: {lines[-1:]}")
        ok = len(lines) == 1 and lines[0].startswith(f"anchorpost: {path}: ") \
            and not os.path.exists(out)
        with lock:
            counts["exit1"] += ok
    else:
        ok = False
    if not ok:
        if not report:
            problems.append(f"{label} case {i} ({kind} of {name}): exit {r.returncode} without a sanitizer "
                            f"report broke the one-line rule: {lines[:3]}")
        else:
            where, what = classify(r.stderr)
            line = f"{label} case {i} ({kind} of {name}): exit {r.returncode}: {what}"
            if where == "libhdf5":
                # The normal build must still end with one line and exit 1
                # (or convert): the guard turns libhdf5's crash into an error.
                q = subprocess.run([PLAIN, "perun", path, "-o", out], capture_output=True,
                                   text=True, errors="replace", timeout=LIMIT_S + 60,
                                   env=dict(os.environ, ANCHORPOST_PERUN_TIMEOUT_S=str(LIMIT_S)))
                ql = q.stderr.strip().splitlines()
                plain_ok = (q.returncode == 1 and len(ql) == 1) or \
                    (q.returncode == 0 and len(ql) <= 1)
                line += f"; {h5dump_crashes(path)}; normal build: exit {q.returncode} {ql[-1:]}"
                if plain_ok:
                    hdf5_bugs.append(line)
                else:
                    problems.append(line + " (normal build broke the one-line rule)")
            else:
                problems.append(line)
    for b in other_commands(path, f"{label}{i:03d}"):
        problems.append(f"{label} case {i} ({kind} of {name}): {b}")
    for p_ in (path, out, out + ".energy.csv"):
        if os.path.exists(p_) and ok:
            os.unlink(p_)


KNOWN = []
for label, folder in fixture_sets():
    if label == "repo":
        run_cases(label, load_seeds(folder), N, [])
    else:  # the cases known to reach libhdf5 bugs, on the files they were found with
        run_cases(label, load_seeds(folder), 0, KNOWN_SHARED)
        KNOWN = KNOWN_SHARED

print(f"ran {ran} corrupted copies (the first {N} of the repository's files; known cases {KNOWN} of ../shared's; seed {SEED}; mutations {kinds}): "
      f"{counts['exit0']} converted (exit 0), {counts['exit1']} refused with one line (exit 1)")
print("slowest of each other command (s, case): " +
      ", ".join(f"{k} {v[0]:.1f} ({v[1]})" for k, v in sorted(other_slowest.items())))
print("other commands on the same files (command, exit): " +
      ", ".join(f"{k[0]} {k[1]}: {v}" for k, v in sorted(other_counts.items(), key=str)))
for b in sorted(hdf5_bugs):
    print("LIBHDF5: " + b)
if hdf5_bugs:
    print(f"{len(hdf5_bugs)} of {ran} corrupted files hit bugs inside libhdf5 "
          f"{subprocess.run(['pkg-config', '--modversion', 'hdf5'], capture_output=True, text=True).stdout.strip()} "
          "(first frame in libhdf5, not in anchorpost); see docs/perun-format.md")
if problems:
    for pr in sorted(problems):
        print("PROBLEM: " + pr)
    die(f"{len(problems)} of {ran} corrupted files crashed, hung or broke the one-line rule "
        f"(inputs kept in {work})")
print("PASS")
