"""Helpers shared by the py-spy tests: what Python's json module says a
py-spy file holds, computed independently of anchorpost."""
import collections
import csv
import json
import os
import subprocess
import sys

ROOT = os.environ.get("ANCHOR_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
ANCHORPOST = os.path.join(BUILD, "anchorpost")
UNIT_S = {"seconds": 1.0, "milliseconds": 1e-3, "microseconds": 1e-6, "nanoseconds": 1e-9}

csv.field_size_limit(1 << 30)


def frame_text(fr):
    """The collapsed-stack convention anchorpost writes: func (file:line)."""
    line = fr.get("line")
    if fr.get("file") is None and line is None:
        return fr["name"]
    return "%s (%s%s)" % (fr["name"], fr.get("file") or "", ":%d" % line if line is not None else "")


def speedscope_truth(path):
    """Per profile: samples, total weight (s), leaf self counts, stacks."""
    with open(path) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    out = {}
    for prof in doc["profiles"]:
        unit = UNIT_S[prof["unit"]]
        leaves = collections.Counter()
        stacks = []
        for s in prof["samples"]:
            if s:
                fr = frames[s[-1]]
                leaves[(fr["name"], fr.get("file") or "", "" if fr.get("line") is None else str(fr["line"]))] += 1
            stacks.append(";".join(frame_text(frames[i]) for i in s))
        out[prof["name"]] = {
            "n": len(prof["samples"]),
            "weight_s": sum(prof["weights"]) * unit,
            "leaves": leaves,
            "stacks": stacks,
            "weights_s": [w * unit for w in prof["weights"]],
        }
    return doc, out


def by_frame_truth(doc):
    """function,file,line -> [self, total, self_s, total_s], a frame counted
    once per sample for total (recursion), duplicate frame entries merged."""
    frames = doc["shared"]["frames"]
    key = [(f["name"], f.get("file") or "", "" if f.get("line") is None else str(f["line"])) for f in frames]
    agg = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])
    for prof in doc["profiles"]:
        unit = UNIT_S[prof["unit"]]
        for s, w in zip(prof["samples"], prof["weights"]):
            if not s:
                continue
            d = w * unit
            a = agg[key[s[-1]]]
            a[0] += 1
            a[2] += d
            for k in {key[i] for i in s}:
                a = agg[k]
                a[1] += 1
                a[3] += d
    return agg


def run(args, **kw):
    return subprocess.run([ANCHORPOST] + args, capture_output=True, text=True, **kw)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def frame_label(f):
    """A frames.csv row as samples --stack-text writes it: 'func (file:line)'."""
    if f["file"] or f["line"]:
        return "%s (%s%s)" % (f["function"], f["file"], ":" + f["line"] if f["line"] else "")
    return f["function"]


def read_samples(path):
    """samples.csv joined with its companions (OUT.stacks.csv, .frames.csv,
    .threads.csv): each row gains stack (text, root;...;leaf), leaf_function,
    leaf_file, leaf_line, profile and pthread_id, as the old wide layout had."""
    rows = read_csv(path)
    base = path[:-4] if path.endswith(".csv") else path
    frames = {f["frame_id"]: f for f in read_csv(base + ".frames.csv")}
    stacks = {}
    for r in read_csv(base + ".stacks.csv"):
        stacks.setdefault(r["stack_id"], []).append((int(r["depth"]), r["frame_id"]))
    threads = {t["thread"]: t for t in read_csv(base + ".threads.csv")}
    text = {}
    for sid, fr in stacks.items():
        fr.sort()
        text[sid] = [frames[f] for _, f in fr]
    for r in rows:
        fl = text.get(r["stack_id"], [])
        r["stack"] = ";".join(frame_label(f) for f in fl)
        leaf = fl[-1] if fl else {"function": "", "file": "", "line": ""}
        r["leaf_function"], r["leaf_file"], r["leaf_line"] = leaf["function"], leaf["file"], leaf["line"]
        t = threads[r["thread"]]
        r["profile"], r["pthread_id"] = t["profile"], t["pthread_id"]
    return rows


# A run of unchanged samples (no event in chrometrace) this many periods
# long is py-spy not sampling: a spinning thread changes line every
# sample or two, so 25 periods (probability ~2^-25 by chance) is a stall.
STALL_PERIODS = 25


CLOCK_SLOT_S = 0.025  # tests/pyspy_victim.py's clock thread
CROWDED = 3          # a slot visit with 3x its samples is a catch-up burst


def clock_lag(doc, rate, run_s):
    """speedscope: the victim's clock thread (clock_0..3, one per 25 ms
    slot, cycling) dates the samples.  A visit to a slot should hold
    slot x rate samples; py-spy that stalls skips slots, then catches up
    by sampling without sleeping, crowding one visit.  lag = the skipped
    slots' time + the crowded samples' nominal time, plus run_s minus
    what the sample count covers."""
    frames = doc["shared"]["frames"]
    slot_of = {i: int(f["name"][-1]) for i, f in enumerate(frames) if re_clock(f["name"])}
    best = None
    for p in doc["profiles"]:
        seq = []
        for s in p["samples"]:
            k = next((slot_of[i] for i in reversed(s) if i in slot_of), None)
            if k is not None:
                seq.append(k)
        if len(seq) > len(best or []):
            best = seq
    n = max(len(p["samples"]) for p in doc["profiles"])
    if not best:
        return max(0.0, run_s - n / rate), "no clock thread in the profile"
    visits = []
    for k in best:
        if visits and visits[-1][0] == k:
            visits[-1][1] += 1
        else:
            visits.append([k, 1])
    want = CLOCK_SLOT_S * rate
    skipped = sum((b[0] - a[0]) % 4 - 1 for a, b in zip(visits, visits[1:]))
    crowded = sum(c - CROWDED * want for _, c in visits if c > CROWDED * want)
    lag = skipped * CLOCK_SLOT_S + crowded / rate + max(0.0, run_s - n / rate)
    return lag, "clock thread: %d slot(s) of %.0f ms skipped, %d sample(s) crowded, %d samples = %.3f s at %g Hz " \
        "over a %.3f s run" % (skipped, 1e3 * CLOCK_SLOT_S, crowded, n, n / rate, rate, run_s)


def re_clock(name):
    return len(name) == 7 and name.startswith("clock_") and name[-1] in "0123"


def pyspy_lag(path, fmt, rate, run_s, busy_frame):
    """How far py-spy fell behind while recording `path`, from the profile
    itself: (lag_s, why).  Its sampler falls behind on a loaded machine
    (the thread that reads the stacks is not scheduled): no fault of
    anchor's.  A test comparing py-spy's times with the victim's own clock
    adapts its tolerance by lag_s (or skips when lag_s swallows it).

    speedscope: times are nominal (i/rate): the victim's clock thread
    dates the samples (clock_lag).
    chrometrace: real stamps, an event only when a stack changes; while
    busy_frame (a function whose stacks change every sample or two) is
    open, a gap of more than STALL_PERIODS periods between events is a
    stall; lag = the stalls (minus a period each) plus what of run_s the
    trace's span misses."""
    period = 1.0 / rate
    with open(path) as f:
        doc = json.load(f)
    if fmt == "speedscope":
        return clock_lag(doc, rate, run_s)
    by_thread = collections.defaultdict(list)
    for e in doc:
        by_thread[(e["pid"], e["tid"])].append(e)
    events = max(by_thread.values(), key=lambda ev: sum(e["name"] == busy_frame for e in ev))
    stack, stalls, last = [], [], None
    for e in events:  # in file order: per thread chronological
        t = e["ts"] / 1e6
        if last is not None and t - last > STALL_PERIODS * period and busy_frame in stack:
            stalls.append(t - last)
        if e["ph"] == "B":
            stack.append(e["name"])
        elif e["ph"] == "E" and e["name"] in stack:
            del stack[len(stack) - 1 - stack[::-1].index(e["name"])]
        last = t
    ts = [e["ts"] / 1e6 for e in doc]
    span = max(ts) - min(ts) if ts else 0.0
    lag = sum(g - period for g in stalls) + max(0.0, run_s - span)
    return lag, "%d stall(s) > %d periods in %s (largest %.0f ms), trace span %.3f s over a %.3f s run" % (
        len(stalls), STALL_PERIODS, busy_frame, 1e3 * max(stalls, default=0.0), span, run_s)


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def pyspy_binary():
    """The real py-spy, not a pyenv shim (a bash script that runs a dozen
    processes first): beside the interpreter, else on PATH."""
    import shutil
    py = os.environ.get("PYTHON", sys.executable)
    beside = os.path.join(os.path.dirname(py), "py-spy")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy")
