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
