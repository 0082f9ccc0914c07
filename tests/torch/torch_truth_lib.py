"""Shared by tests/torch: run the real transformer (tests/victims/
torch_truth_train.py) under torch.profiler, real perun at 0.1 s and the
emulated RAPL sensor (tools/groundtruth), and compute exact truth from the
trace itself: every op's joules are its time inside each phase times the
power the emulated sensor drew in that phase (package + dram), the phase
being the record_function range (mirroring the anchor) around it.
Emulated sensor, not a measurement."""
import csv
import gzip
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
TMP = os.environ.get("ANCHOR_TEST_TMP") or __import__("tempfile").mkdtemp()
VICTIM = os.path.join(ROOT, "tests", "victims", "torch_truth_train.py")
sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
import run_scenario  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from interval_check import miss_ratio, misses_allowed  # noqa: E402,F401  (re-exported to the torch tests)

# name, ms (unused by the victim: real work sets it), package W, dram W, kind
PHASES = [("data", 40, 6.0, 1.0, "sleep"), ("forward", 10, 30.0, 3.0, "spin"),
          ("backward", 20, 45.0, 4.0, "spin"), ("optimizer.step", 5, 20.0, 2.0, "spin")]
POWER = {p[0]: p[2] + p[3] for p in PHASES}
fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)
    return cond


def need():
    for mod in ("perun", "torch"):
        if importlib.util.find_spec(mod) is None:
            print("skip: %s is not installed" % mod)
            sys.exit(77)


def record(name, steps=70, extra=(), gz=False):
    out = os.path.join(TMP, name)
    trace = os.path.join(out, "trace.json" + (".gz" if gz else ""))
    os.makedirs(out, exist_ok=True)
    spec = run_scenario.make_spec(PHASES, repeat=1, jitter=0.0, sampling_period=0.1, seed=3)
    s = run_scenario.run(out, spec, sampling_period=0.1, python=sys.executable,
                         libanchor=os.path.join(BUILD, "libanchor.so"), quiet=True, workload=VICTIM,
                         workload_args=["--trace", trace, "--steps", str(steps)] + list(extra), timeout_s=900)
    return out, trace, s["files"]["ring"], s["files"]["perun_hdf5"]


def anchorpost(*args):
    p = subprocess.run([os.path.join(BUILD, "anchorpost")] + list(args), capture_output=True, text=True)
    if p.returncode:
        print("anchorpost %s failed (%d):\n%s" % (" ".join(args), p.returncode, p.stderr[-3000:]))
        sys.exit(1)
    return p


def load_trace(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)


HOST = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")


def truth_per_op(trace):
    """{(op, category): [self_j, total_j, self_s, total_s]} from the trace's
    own nesting: an event's phase is the outermost user_annotation named
    as a phase around it; events outside every phase are left out (kept
    in a separate count)."""
    by_thread = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in HOST:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    out, outside = {}, 0
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [event, end, child_time, phase]
        def close(item):
            e, end, child, ph = item
            if ph is None:
                return
            k = (e["name"], e["cat"])
            r = out.setdefault(k, [0.0, 0.0, 0.0, 0.0])
            self_s = max(e["dur"] - child, 0.0) / 1e6
            r[0] += self_s * POWER[ph]
            r[2] += self_s
            # total once per outermost event of that name
            if not any(s[0]["name"] == e["name"] for s in stack):
                r[1] += e["dur"] / 1e6 * POWER[ph]
                r[3] += e["dur"] / 1e6
        for e in evs:
            end = e["ts"] + e["dur"]
            while stack and stack[-1][1] <= e["ts"]:
                close(stack.pop())
            if stack:
                end = min(end, stack[-1][1])
                stack[-1][2] += end - e["ts"]
            ph = next((s[0]["name"] for s in stack if s[0]["cat"] == "user_annotation" and s[0]["name"] in POWER), None)
            if ph is None and e["cat"] == "user_annotation" and e["name"] in POWER:
                ph = e["name"]
            if ph is None:
                outside += 1
            stack.append([e, end, 0.0, ph])
        while stack:
            close(stack.pop())
    return out, outside


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# anchor.torch.layers(model, depth=2) on the victim's model: its module paths
LAYER_PATHS = ["0", "1", "1.layers.0", "1.layers.1", "2"]


def layer_phases():
    """PHASES plus every layer's forward and backward, each its own power
    (forward 22-34 W, backward 36-60 W package; dram a tenth)."""
    out = list(PHASES)
    for i, pth in enumerate(LAYER_PATHS):
        out.append((pth + "/forward", 2, 22.0 + 3 * i, 2.2 + 0.3 * i, "spin"))
        out.append((pth + "/backward", 4, 36.0 + 6 * i, 3.6 + 0.6 * i, "spin"))
    return out


def record_layers(name, steps=70, depth=2):
    out = os.path.join(TMP, name)
    trace = os.path.join(out, "trace.json")
    os.makedirs(out, exist_ok=True)
    spec = run_scenario.make_spec(layer_phases(), repeat=1, jitter=0.0, sampling_period=0.1, seed=3)
    s = run_scenario.run(out, spec, sampling_period=0.1, python=sys.executable,
                         libanchor=os.path.join(BUILD, "libanchor.so"), quiet=True, workload=VICTIM,
                         workload_args=["--trace", trace, "--steps", str(steps), "--layers", str(depth)],
                         timeout_s=900)
    return out, trace, s["files"]["ring"], s["files"]["perun_hdf5"], s["files"]["instances"]


def phase_sums(path):
    """{phase: (joules, ci95 low, ci95 high, flags)} of a phases.csv's
    scope-all phase rows that got joules, the device groups (package,
    dram) summed: what truth_per_phase gives, per phase."""
    by = {}
    for r in rows(path):
        if r["scope"] == "all" and r["row"] == "phase" and r["energy_j"]:
            by.setdefault(r["phase"], []).append(r)
    return {name: (sum(float(r["energy_j"]) for r in rs), sum(float(r["ci95_low_j"]) for r in rs),
                   sum(float(r["ci95_high_j"]) for r in rs), ";".join(r["flags"] for r in rs if r["flags"]))
            for name, rs in by.items()}


def truth_per_phase(instances, phases, ring=None):
    """Exclusive joules per phase, package + dram: the emulated sensor's
    power (set by the phase the victim published, instances.csv) integrated
    over each phase's own time.  With ring: the phase's time as the ring
    anchors it (the innermost open range on the thread that opened the
    most), which is what anchorpost attributes; the victim publishes a
    few us before each begin and after each end, and on a loaded machine a
    preemption between the two moves a 20 us phase's published time by
    more than half (1/backward: 13.2 ms published, 21.1 ms anchored over
    600 occurrences beside stress-ng).  Without ring: the published time."""
    power = {p[0]: p[2] + p[3] for p in phases}
    pub = [(int(r["t_begin_mono_ns"]), int(r["t_end_mono_ns"]), power[r["phase"]], r["phase"]) for r in rows(instances)]
    if ring is None:
        out = {}
        for a, b, w, ph in pub:
            out[ph] = out.get(ph, 0.0) + (b - a) / 1e9 * w
        return out
    pub.sort()
    out = {}
    i = 0
    for a, b, ph in ring_segments(ring, set(power)):
        while i > 0 and pub[i - 1][1] > a:
            i -= 1
        while i < len(pub) and pub[i][1] <= a:
            i += 1
        j, e = i, 0.0
        while j < len(pub) and pub[j][0] < b:
            lo, hi = max(a, pub[j][0]), min(b, pub[j][1])
            if hi > lo:
                e += (hi - lo) / 1e9 * pub[j][2]
            j += 1
        out[ph] = out.get(ph, 0.0) + e
    return out


def unattributed_check(out, ring, instances, phases_csv, phases=PHASES):
    """The unattributed row (cpu + ram) against the truth outside every
    anchored phase: the emulated sensor's total (truth.json; 0 W before the
    first and after the last publish) less the phases' exclusive truth.
    Those joules are the glue between phases (the victim's publish, a
    preemption there), drawn at a phase's power, not idle."""
    tj = json.load(open(os.path.join(out, "truth.json")))
    total = sum(d["total_j"] for d in tj["devices"].values())
    truth = total - sum(truth_per_phase(instances, phases, ring).values())
    rs = [r for r in rows(phases_csv) if r["scope"] == "all" and r["row"] == "unattributed"]
    est, lo, hi = (sum(float(r[c] or 0) for r in rs) for c in ("energy_j", "ci95_low_j", "ci95_high_j"))
    check(rs and lo <= truth <= hi, "the unattributed row %.3g J [%.3g, %.3g] holds the %.3g J outside every phase"
          % (est, lo, hi, truth))


def ring_segments(ring, names):
    """[(t0_ns, t1_ns, phase)] of the ring's exclusive timeline, read from
    `anchorpost dump`: on the thread with the most BEGIN records, the
    innermost open range named in names (an END closes the innermost open
    BEGIN of its name)."""
    p = subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", ring], capture_output=True, text=True, check=True)
    ev, count = [], {}
    for r in csv.DictReader(p.stdout.splitlines()):
        if r["kind"] in ("begin", "end"):
            key = (r["pid"], r["tid"])
            ev.append((int(r["mono_ns"]), key, r["kind"], r["name"]))
            count[key] = count.get(key, 0) + (r["kind"] == "begin")
    main = max(count, key=count.get)
    stack, segs, last = [], [], None
    for ts, key, kind, name in sorted(e for e in ev if e[1] == main):
        cur = next((n for n in reversed(stack) if n in names), None)
        if cur is not None and ts > last:
            segs.append((last, ts, cur))
        last = ts
        if kind == "begin":
            stack.append(name)
        elif name in stack:
            del stack[len(stack) - 1 - stack[::-1].index(name)]
    return segs
