#!/usr/bin/env python3
"""The Python baseline for bench/pyspy_scale.sh: what a user would write
without anchorpost.  json.load the speedscope file, then the same
per-frame aggregate as `anchorpost samples --by-frame` (self and total
samples and seconds; a frame counted once per sample for total), grouping
identical stacks first so the per-sample loop stays cheap.

usage: pyspy_py_baseline.py PROFILE.json OUT.csv [--load-only]"""
import collections
import csv
import json
import sys

UNIT_S = {"seconds": 1.0, "milliseconds": 1e-3, "microseconds": 1e-6, "nanoseconds": 1e-9}

with open(sys.argv[1]) as f:
    doc = json.load(f)
if "--load-only" in sys.argv:
    sys.exit(0)
frames = doc["shared"]["frames"]
key = [(fr["name"], fr.get("file") or "", "" if fr.get("line") is None else fr["line"]) for fr in frames]
stats = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])
for prof in doc["profiles"]:
    unit = UNIT_S[prof["unit"]]
    per_stack = collections.defaultdict(lambda: [0, 0.0])
    for s, w in zip(prof["samples"], prof["weights"]):
        if s:
            e = per_stack[tuple(s)]
            e[0] += 1
            e[1] += w * unit
    for st, (n, sec) in per_stack.items():
        a = stats[key[st[-1]]]
        a[0] += n
        a[2] += sec
        for k in {key[i] for i in st}:
            a = stats[k]
            a[1] += n
            a[3] += sec
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["function", "file", "line", "self_samples", "total_samples", "self_s", "total_s"])
    for k, (sn, tn, ss, ts) in sorted(stats.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0][0])):
        w.writerow([k[0], k[1], k[2], sn, tn, "%.9f" % ss, "%.9f" % ts])
