"""Several rings on one timeline, checked against a known truth.

Synthetic job (tools/ringgen): 3 ranks in lock step, rank 1 the deliberate
straggler.  Ranks 0 and 1 run on "hostA", rank 2 on "hostB"; the hosts'
CLOCK_MONOTONIC origins differ by ~4900 s, so their SYNC records carry
very different realtime-monotonic offsets and raw timestamps cannot be
compared.  Rank 2 never writes PROC_EXIT (killed).  A two-host perun file
(tools/ringgen/perun_synth.py) carries each host's emulated RAPL counters.

Checked:
  * merged step starts (stragglers t0_unix_ns) equal the truth within 1 us
    for every rank and step (the raw monotonic stamps are ~4900 s apart);
  * the slowest rank and every rank's wait per step match the truth;
  * rank 2 is reported as ended without an exit record;
  * the node split: hostB's single rank gets its host's joules per phase
    (counters' truth within 3 %); hostA's two ranks each half the node's
    joules over their own phases (rank 0 within 3 %, rank 1 inside its
    stated interval), host rows are the sums of their ranks', "all" of the
    hosts', the ranks' totals add up to the host's counters; rank 0's wait
    joules are its half of the allreduce's truth;
  * errors: a glob that matches nothing, a ring without SYNC records;
  * without perun's stamps (ringgen writes none), each host's offset follows
    single-ring `phases`' rule (align_perun_fallback): ranks running as
    `perun monitor` (ringgen --perun-monitor) bound it by the sampler's fork
    and exit; the stated 95 % interval (fitted, and --no-fit: the bounds')
    holds the true offset, and a perun file whose span cannot fit those
    lifetimes is refused by phases and stragglers with one line.
"""
import csv
import os
import re
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
GEN = os.path.join(BUILD, "tools", "ringgen")
POST = os.path.join(BUILD, "anchorpost")
STEPS = 300


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        die(msg)


def run(*args, rc=0):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if rc is not None and p.returncode != rc:
        die("%s -> %d (want %d)\n%s%s" % (" ".join(args), p.returncode, rc, p.stdout, p.stderr))
    return p


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def trace_truth(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("# phase_j "):
                name, vals = line[len("# phase_j "):].strip().rsplit("=", 1)
                pkg, dram = (float(x) for x in vals.split(","))
                out[name] = (pkg, dram)
    return out


for exe in (GEN, POST):
    if not os.access(exe, os.X_OK):
        print("skip: %s not built (make)" % exe)
        sys.exit(77)
try:
    import h5py  # noqa: F401
except ImportError:
    print("skip: h5py missing (scripts/install-deps.sh)")
    sys.exit(77)

rings = os.path.join(TMP, "rings")
os.makedirs(rings, exist_ok=True)
hosts = {0: ("hostA", 5_000_000_000_000), 1: ("hostA", 5_000_000_000_000), 2: ("hostB", 123_000_000_000)}
for r, (host, mono) in hosts.items():
    args = [GEN, os.path.join(rings, "run-%s-%d.ring" % (host, r)), "--rank", str(r), "--nranks", "3",
            "--steps", str(STEPS), "--slow-rank", "1", "--slow-ms", "2", "--host", host,
            "--mono-base-ns", str(mono), "--seed", "7",
            "--power-out", os.path.join(TMP, "power-%d.csv" % r)]
    if r == 0:
        args += ["--truth", os.path.join(TMP, "truth.csv")]
    if r == 2:
        args += ["--no-exit"]
    run(*args)
truth = {(int(t["step"]), int(t["rank"])): t for t in read_csv(os.path.join(TMP, "truth.csv"))}

# The skew is real: the same true instant is ~4877 s apart in raw stamps.
dumps = {}
for r, (host, _) in hosts.items():
    out = os.path.join(TMP, "dump-%d.csv" % r)
    run(POST, "dump", os.path.join(rings, "run-%s-%d.ring" % (host, r)), "-o", out)
    dumps[r] = [d for d in read_csv(out) if d["kind"] == "begin" and d["name"] == "train_step"]
raw_gap_s = abs(int(dumps[0][0]["mono_ns"]) - int(dumps[2][0]["mono_ns"])) / 1e9
check(raw_gap_s > 4000, "raw monotonic stamps should differ by ~4877 s, not %.3f s" % raw_gap_s)

# perun file: hostA's counters follow rank 0 (its lowest rank), hostB's rank 2.
h5 = os.path.join(TMP, "perun", "train.hdf5")
os.makedirs(os.path.dirname(h5), exist_ok=True)
run(sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), h5,
    "hostA=" + os.path.join(TMP, "power-0.csv"), "hostB=" + os.path.join(TMP, "power-2.csv"))

strag = os.path.join(TMP, "stragglers.csv")
phases = os.path.join(TMP, "phases.csv")
p = run(POST, "phases", "--rings", rings, "--perun", h5, "--by-rank", "-o", phases, "--stragglers", strag)
print(p.stdout)

# 1. Alignment and straggler truth.
rows = read_csv(strag)
check(len(rows) == 3 * STEPS, "%d straggler rows, want %d" % (len(rows), 3 * STEPS))
worst_ns = 0
for row in rows:
    t = truth[(int(row["step"]), int(row["rank"]))]
    err = abs(int(row["t0_unix_ns"]) - int(t["t0_unix_ns"]))
    worst_ns = max(worst_ns, err)
    check(row["slowest"] == t["slowest"], "step %s rank %s: slowest %s, truth %s" %
          (row["step"], row["rank"], row["slowest"], t["slowest"]))
    check(abs(float(row["wait_ms"]) * 1e6 - int(t["wait_ns"])) < 1000,
          "step %s rank %s: wait %s ms, truth %.6f ms" % (row["step"], row["rank"], row["wait_ms"],
                                                        int(t["wait_ns"]) / 1e6))
check(worst_ns <= 1000, "merged step starts off by up to %d ns (want <= 1 us)" % worst_ns)
print("ok: %d steps x 3 ranks on one timeline, worst error %d ns (raw stamps %.0f s apart), "
      "straggler and waits as in the truth" % (STEPS, worst_ns, raw_gap_s))

# 2. The killed rank is reported, its ring still read in full.
check("r2@hostB" in p.stdout and "no exit record" in p.stdout.split("r2@hostB", 1)[1].splitlines()[0],
      "rank 2 (no PROC_EXIT) not reported as ended without exit record")
check("1 rank(s) ended abnormally" in p.stdout, "abnormal-rank summary missing")
print("ok: rank 2 reported as killed (no exit record), its %d steps read" % STEPS)

# 3. Joules per phase vs the counters' truth, under the node split
# (mring.h): at each instant a node's power goes in equal parts to its
# ranks that are in a phase.  hostB has one rank: its rows are the whole
# host's phase joules.  hostA's power follows rank 0's phases (ringgen),
# and both of its ranks are in a phase at every instant of the run, so a
# rank's true share of phase p is half the node's energy over its own time
# in p: exact for rank 0 (its timeline is what drove the counters), inside
# the stated interval for rank 1 (its phases are offset from the power it
# is attributed against: the estimate can only be as good as that).
def segments(ring_dump):
    out, opened = [], {}
    for d in read_csv(ring_dump):
        if d["kind"] == "begin" and d["name"] != "train_step":
            opened[d["name"]] = int(d["unix_ns"])
        elif d["kind"] == "end" and d["name"] in opened:
            out.append((opened.pop(d["name"]), int(d["unix_ns"]), d["name"]))
    return sorted(out)


def split_truth(mine, driver, power_w, ranks_busy):
    """{phase: joules}: the driver's phase power over mine's phases / ranks."""
    out, k = {}, 0
    for a, b, name in mine:
        while k < len(driver) and driver[k][1] <= a:
            k += 1
        j = k
        while j < len(driver) and driver[j][0] < b:
            lo, hi = max(a, driver[j][0]), min(b, driver[j][1])
            if hi > lo:
                out[name] = out.get(name, 0) + power_w[driver[j][2]] * (hi - lo) / 1e9 / ranks_busy
            j += 1
    return out


rows = read_csv(phases)
full = {}
for r in (0, 1):
    out = os.path.join(TMP, "dump-full-%d.csv" % r)
    run(POST, "dump", os.path.join(rings, "run-hostA-%d.ring" % r), "-o", out)
    full[r] = segments(out)
tr0 = trace_truth(os.path.join(TMP, "power-0.csv"))
time0 = {}
for a, b, name in full[0]:
    time0[name] = time0.get(name, 0) + (b - a) / 1e9
for group, col in (("cpu", 0), ("ram", 1)):
    watts = {name: tr0[name][col] / time0[name] for name in time0}  # ringgen: a fixed power per phase
    for r in (0, 1):
        want = split_truth(full[r], full[0], watts, 2)
        got = {x["phase"]: x for x in rows if x["scope"] == "rank" and x["rank"] == str(r) and x["device_group"] == group}
        for name, w in want.items():
            x = got[name]
            e, lo, hi = float(x["energy_j"]), float(x["ci95_low_j"]), float(x["ci95_high_j"])
            check(abs(float(x["node_share"]) - 0.5) < 1e-6, "rank %d %s: node_share %s, want 0.5 (two busy ranks)" %
                  (r, name, x["node_share"]))
            if r == 0 and w > 0.5:
                check(abs(e - w) <= 0.03 * w, "rank 0 %s %s: %.3f J, split truth %.3f J" % (name, group, e, w))
            check(lo - 1e-6 <= w <= hi + 1e-6, "rank %d %s %s: interval [%.3f, %.3f] misses the split truth %.3f J" %
                  (r, name, group, lo, hi, w))
print("ok: hostA's ranks get half the node's joules of their phases (rank 0 within 3 %, rank 1 inside its interval)")
for name, (pkg, dram) in trace_truth(os.path.join(TMP, "power-2.csv")).items():
    for group, want in (("cpu", pkg), ("ram", dram)):
        got = [x for x in rows if x["scope"] == "host" and x["host"] == "hostB" and x["phase"] == name and
               x["device_group"] == group]
        if name == "(idle)":
            continue
        check(len(got) == 1, "no host row hostB %s %s" % (name, group))
        if want > 0.5:
            e = float(got[0]["energy_j"])
            check(abs(e - want) <= 0.03 * want, "hostB %s %s: %.3f J, truth %.3f J" % (name, group, e, want))
print("ok: hostB (one rank) joules per phase within 3 % of the counters' truth")


def energy(scope, host, rank, phase, group):
    got = [x for x in rows if x["scope"] == scope and x["host"] == host and x["rank"] == rank and
           x["phase"] == phase and x["device_group"] == group]
    check(len(got) == 1, "no %s row %s %s %s %s" % (scope, host, rank, phase, group))
    return float(got[0]["energy_j"]) if got[0]["energy_j"] else 0.0


names = sorted({x["phase"] for x in rows if x["row"] == "phase" and x["energy_j"]}) + ["(unattributed)", "(total)"]
for group in ("cpu", "ram"):
    for name in names:
        a0, a1 = energy("rank", "hostA", "0", name, group), energy("rank", "hostA", "1", name, group)
        ha, hb = energy("host", "hostA", "", name, group), energy("host", "hostB", "", name, group)
        check(abs(ha - a0 - a1) <= 1e-6 * max(1, ha), "hostA %s %s: %.6f J, its ranks %.6f + %.6f" %
              (name, group, ha, a0, a1))
        check(abs(energy("all", "", "", name, group) - ha - hb) <= 1e-6 * max(1, ha + hb),
              "all %s %s is not hostA + hostB" % (name, group))
    # perun's node total, read from the file, is what the ranks add up to.
    perun_total = sum(trace_truth(os.path.join(TMP, "power-0.csv")).get(n, (0, 0))[0 if group == "cpu" else 1]
                      for n in tr0)
    got = energy("rank", "hostA", "0", "(total)", group) + energy("rank", "hostA", "1", "(total)", group)
    check(abs(got - energy("host", "hostA", "", "(total)", group)) <= 1e-6 * got,
          "hostA %s: ranks' totals %.6f J, host total %.6f J" % (group, got, energy("host", "hostA", "", "(total)", group)))
    check(abs(got - perun_total) <= 0.01 * perun_total, "hostA %s: ranks add up to %.3f J, counters %.3f J" %
          (group, got, perun_total))
print("ok: ranks add up to their host (and to hostA's counters), hosts to all")

srows = read_csv(strag)
wait_j0 = sum(float(x["wait_j"]) for x in srows if x["rank"] == "0")
want0 = sum(trace_truth(os.path.join(TMP, "power-0.csv"))["MPI_Allreduce"]) / 2  # cpu + ram; its share: half
check(abs(wait_j0 - want0) <= 0.03 * want0, "rank 0 wait joules %.3f, truth %.3f (half the node's)" % (wait_j0, want0))
print("ok: rank 0 spent %.3f J waiting, its share (truth %.3f J)" % (wait_j0, want0))

# 4. One-line errors.
p = run(POST, "phases", "--rings", os.path.join(TMP, "nothing-*.ring"), rc=1)
check(p.stderr.count("\n") == 1 and "matches no file" in p.stderr, "glob error: %r" % p.stderr)
nosync = os.path.join(TMP, "nosync.ring")
with open(os.path.join(rings, "run-hostA-0.ring"), "rb") as f:
    hdr = f.read(4096)
with open(nosync, "wb") as f:
    f.write(hdr + b"\0" * (64 * 1024))  # the header, no records at all
p = run(POST, "stragglers", "--ring", nosync, "--ring", os.path.join(rings, "run-hostA-0.ring"), rc=1)
check(p.stderr.count("\n") == 1 and "nosync.ring" in p.stderr, "empty ring error: %r" % p.stderr)
# Bad rings on several loader threads at once: the library returns the
# error (mring.c keeps the first), the command prints exactly one line.
bad = os.path.join(TMP, "bad-rings")
os.makedirs(bad, exist_ok=True)
for i in range(6):
    with open(os.path.join(bad, "b%d.ring" % i), "wb") as f:
        f.write(hdr + b"\0" * (64 * 1024))
p = run(POST, "phases", "--rings", bad, "--by-rank", "--threads", "4", rc=1)
check(p.stderr.count("\n") == 1 and "the ring holds no records" in p.stderr,
      "six bad rings on four threads: want one line, got %r" % p.stderr)
print("ok: one-line errors for a glob matching nothing, an empty ring, and six on four threads")

# 5. No stamps: bounded by the ring, the same rule as one ring.
pm = os.path.join(TMP, "pm")
pm_rings = os.path.join(pm, "rings")
os.makedirs(pm_rings, exist_ok=True)
for r, (host, mono) in hosts.items():
    run(GEN, os.path.join(pm_rings, "run-%s-%d.ring" % (host, r)), "--rank", str(r), "--nranks", "3",
        "--steps", "150", "--host", host, "--mono-base-ns", str(mono), "--seed", "11", "--perun-monitor",
        "--power-out", os.path.join(pm, "power-%d.csv" % r))
pm_h5 = os.path.join(pm, "train.hdf5")
run(sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), pm_h5,
    "hostA=" + os.path.join(pm, "power-0.csv"), "hostB=" + os.path.join(pm, "power-2.csv"))
with open(os.path.join(pm, "power-0.csv")) as f:
    first_ns = int(f.readline().split("=", 1)[1])
# timeline origin: the earliest ring's creation (ringgen's default t0, no
# realtime error); perun's first timestep is 0
truth_off = (first_ns - 1790000000000000000) / 1e9
line_re = re.compile(r"perun host (\S+): offset (-?[0-9.]+) s, alignment (.+?) \(\+-\S+ ms\), "
                     r"95% interval \+-(\S+) ms; bounded to \[(-?[0-9.]+), (-?[0-9.]+)\] s")
for extra, want in (((), "+fit"), (("--no-fit",), "+bounds")):
    p = run(POST, "phases", "--rings", pm_rings, "--perun", pm_h5, "-o", os.path.join(pm, "p.csv"), *extra)
    got = {m.group(1): m for m in line_re.finditer(p.stdout)}
    check(sorted(got) == ["hostA", "hostB"], "%s: no stated offset interval per host:\n%s" % (extra, p.stdout[:1500]))
    for host, m in sorted(got.items()):
        off, method, ci, lo, hi = float(m.group(2)), m.group(3), float(m.group(4)), float(m.group(5)), float(m.group(6))
        check(method.endswith(want), "%s %s: alignment %s, want ...%s" % (extra, host, method, want))
        check(lo <= truth_off <= hi, "%s %s: bounds [%.3f, %.3f] miss the true offset %.3f" %
              (extra, host, lo, hi, truth_off))
        check(0 < ci < 1000 and abs(off - truth_off) <= ci / 1e3 + 1e-6,
              "%s %s: offset %.6f +- %g ms misses the true offset %.6f" % (extra, host, off, ci, truth_off))
        print("ok: %s%s offset %.6f s +- %g ms (95 %%), bounds [%.3f, %.3f], truth %.6f (%s)" %
              (host, " --no-fit" if extra else "", off, ci, lo, hi, truth_off, method))
# Another run's perun file: longer than the samplers lived.
run(GEN, os.path.join(pm, "long.ring"), "--rank", "0", "--nranks", "1", "--steps", "400", "--host", "hostA",
    "--seed", "11", "--perun-monitor", "--power-out", os.path.join(pm, "long.csv"))
long_h5 = os.path.join(pm, "long.hdf5")
run(sys.executable, os.path.join(ROOT, "tools", "ringgen", "perun_synth.py"), long_h5,
    "hostA=" + os.path.join(pm, "long.csv"), "hostB=" + os.path.join(pm, "long.csv"))
for cmd in ("phases", "stragglers"):
    out = os.path.join(pm, "x-%s.csv" % cmd)
    p = run(POST, cmd, "--rings", pm_rings, "--perun", long_h5, "-o", out, rc=1)
    check(p.stderr.count("\n") == 1 and "cannot be the perun run recorded in" in p.stderr,
          "%s with another run's perun file: want one refusal line, got %r" % (cmd, p.stderr))
    check(not os.path.exists(out), "%s wrote %s for another run's perun file" % (cmd, out))
    print("ok: %s refuses another run's perun file: %s" % (cmd, p.stderr.strip()[:160]))
