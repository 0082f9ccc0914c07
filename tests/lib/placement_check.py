"""Placement of py-spy samples against the truth (issue 21), computed
without anchorpost's alignment: a sample whose stack holds a function
that runs in one phase only (PHASE_FN) belongs in that phase; the ring's
own BEGIN/END records (anchorpost dump) say when each phase ran; the
sample's placed time is samples.csv's at_s (its instant; unix_s is its
slice's start), in UTC through unix_s - t_s.

score(ring, samples_csv) -> dict: n (samples with a phase-only function),
right (placed inside an occurrence of their phase on their thread),
share, err_p95_ms / err_max_ms (distance from the placed time to the
nearest occurrence of the true phase, 0 inside), unplaced (rows that
samples.csv marks placed=0)."""
import bisect
import csv
import math
import os
import re
import subprocess

csv.field_size_limit(1 << 30)
PHASE_FN = {"data": "data_work", "fwd": "fwd_work", "bwd": "bwd_work", "opt": "opt_work"}


def occurrences(anchorpost, ring, tmp):
    """{(tid, phase): sorted [(t0_unix_s, t1_unix_s)]} from the ring."""
    out = os.path.join(tmp, os.path.basename(ring) + ".dump.csv")
    subprocess.run([anchorpost, "dump", ring, "-o", out], check=True, capture_output=True)
    occ, open_ = {}, {}
    with open(out) as f:
        for r in csv.DictReader(f):
            k = (r["tid"], r["name"])
            if r["kind"] == "begin":
                open_.setdefault(k, []).append(int(r["unix_ns"]) / 1e9)
            elif r["kind"] == "end" and open_.get(k):
                occ.setdefault(k, []).append((open_[k].pop(), int(r["unix_ns"]) / 1e9))
    for v in occ.values():
        v.sort()
    return occ


def _dist(iv, t):
    i = bisect.bisect_right(iv, (t, float("inf"))) - 1
    best = float("inf")
    for j in (i, i + 1):
        if 0 <= j < len(iv):
            a, b = iv[j]
            best = min(best, 0.0 if a <= t <= b else min(abs(t - a), abs(t - b)))
    return best


def score(anchorpost, ring, samples_csv, tmp, phase_fn=None):
    """phase_fn: {phase: function-name regex} (default PHASE_FN)."""
    occ = occurrences(anchorpost, ring, tmp)
    pat = {q: re.compile(r"(^|;)(%s) \(" % fn) for q, fn in (phase_fn or PHASE_FN).items()}
    n = right = unplaced = 0
    errs = []
    with open(samples_csv) as f:
        for r in csv.DictReader(f):
            st = r.get("stack_text") or ""
            qs = [q for q, p in pat.items() if p.search(st)]
            if len(qs) != 1 or not r.get("unix_s"):
                continue
            n += 1
            if r.get("placed") == "0":
                unplaced += 1
            at = float(r["unix_s"]) + (float(r["at_s"]) - float(r["t_s"]) if r.get("at_s") else 0.0)
            iv = occ.get((r["tid"], qs[0]), [])
            d = _dist(iv, at)
            right += d == 0.0
            errs.append(d)
    errs.sort()
    p95 = errs[int(0.95 * (len(errs) - 1))] if errs else float("nan")
    return {"n": n, "right": right, "share": right / n if n else float("nan"), "err_p95_ms": p95 * 1e3,
            "err_max_ms": (errs[-1] if errs else float("nan")) * 1e3, "unplaced": unplaced}


def alignment_line(path):
    """The py-spy line of an alignment.txt, its stated uncertainty (ms) and
    whether it says it cannot place."""
    line = next((x for x in open(path).read().splitlines() if x.startswith("py-spy ")), "")
    m = re.search(r"uncertainty \+-([0-9.e+-]+) ms", line)
    return line, float(m.group(1)) if m else float("nan"), "CANNOT PLACE" in line


CLOCK_RE = re.compile(r"(^|;)((data|fwd|bwd|opt)_c\d\d) \(")


def _clock_points(anchorpost, ring, samples_csv, clock_csv, tmp):
    """(sample_index, thread, placed - true seconds, true instant) of every
    placed sample holding a clock slot (see score_clock)."""
    out = os.path.join(tmp, os.path.basename(ring) + ".dump.csv")
    if not os.path.exists(out):
        subprocess.run([anchorpost, "dump", ring, "-o", out], check=True, capture_output=True)
    with open(out) as f:
        base_s = int(next(csv.DictReader(f))["mono_ns"]) / 1e9
    slots = {}
    with open(clock_csv) as f:
        for r in csv.DictReader(f):
            slots.setdefault(r["slot"], []).append((int(r["t0_mono_ns"]) / 1e9, int(r["t1_mono_ns"]) / 1e9))
    for v in slots.values():
        v.sort()
    pts = []
    with open(samples_csv) as f:
        for r in csv.DictReader(f):
            m = CLOCK_RE.search(r.get("stack_text") or "")
            if not m or r.get("placed") == "0" or not r.get("at_s"):
                continue
            iv = slots.get(m.group(2))
            if not iv:
                continue
            t = base_s + float(r["at_s"])
            i = bisect.bisect_right(iv, (t, float("inf"))) - 1
            best = None
            for j in (i, i + 1):
                if 0 <= j < len(iv):
                    a, b = iv[j]
                    s = 0.0 if a <= t <= b else (t - b if t > b else t - a)
                    if best is None or abs(s) < abs(best):
                        best = s
            pts.append((int(r["sample_index"]), r["thread"], best, t - best))
    return pts


def score_clock(anchorpost, ring, samples_csv, clock_csv, tmp):
    """The true *time* error of placed samples, from the victim's clock
    (placement_victim.py, ANCHOR_PLACEMENT_CLOCK_LOG): a sample holding slot
    X was read while one of X's slots ran, so its error is the distance from
    its placed instant (at_s on the ring's timeline) to the nearest of X's
    slots (0 inside one: known to within a slot, 2 ms).  Placed samples only
    (placed=1).  -> n, p50/p95/max of |error| ms, the signed median ms
    (placed minus true, from the nearest slot edge: a bias shows here).
    The p95 of a couple of hundred samples is itself an estimate:
    p95_lo_ms / p95_hi_ms are its one-sided 95 % confidence bounds,
    distribution-free (the order statistics whose rank a binomial(n, 0.95)
    count reaches with 95 %, normal approximation)."""
    pts = _clock_points(anchorpost, ring, samples_csv, clock_csv, tmp)
    errs = sorted(abs(p[2]) for p in pts)
    signed = sorted(p[2] for p in pts)
    q = lambda v, p: v[int(p * (len(v) - 1))] * 1e3 if v else float("nan")  # noqa: E731
    n = len(errs)
    half = 1.645 * math.sqrt(n * 0.95 * 0.05) if n else 0.0
    rank = lambda r: errs[min(n - 1, max(0, int(math.floor(r))))] * 1e3 if errs else float("nan")  # noqa: E731
    return {"n": n, "p50_ms": q(errs, 0.5), "p95_ms": q(errs, 0.95), "max_ms": q(errs, 1.0),
            "p95_lo_ms": rank(0.95 * (n - 1) - half), "p95_hi_ms": rank(0.95 * (n - 1) + half + 1),
            "signed_p50_ms": q(signed, 0.5), "inside": sum(e == 0 for e in errs) / len(errs) if errs else float("nan")}


def pyspy_phase_rates(anchorpost, ring, samples_csv, tmp, fn_by_phase):
    """Whether py-spy kept one rate across the phases, from the stacks and
    the ring alone (no placement): for each phase, the main thread's
    samples whose stack holds that phase's function (fn_by_phase) over
    the phase's exact time in the ring.  On a loaded machine py-spy falls
    behind while the victim computes and catches up, back to back, while
    it sleeps (placement_victim.py's data phase sleeps half its time):
    one recording had 992 samples/s in data against 153-206 in the busy
    phases at 500 Hz.  -> (ratio, words): the highest phase rate over the
    lowest, each moved two Poisson sigmas towards the other (so counting
    noise alone stays under 1.2: 0.55-1.18 in 64 recordings at 100 Hz)."""
    occ = {k: v for k, v in occurrences(anchorpost, ring, tmp).items() if k[1] in fn_by_phase}
    if not occ:
        return float("nan"), "no phases to compare"
    tids = {}
    for (tid, _), v in occ.items():
        tids[tid] = tids.get(tid, 0) + len(v)
    main = max(tids, key=tids.get)
    secs = {q: sum(b - a for a, b in v) for (tid, q), v in occ.items() if tid == main}
    n = dict.fromkeys(fn_by_phase, 0)
    with open(samples_csv) as f:
        for r in csv.DictReader(f):
            if r["thread"] == "0":
                q = [k for k, fn in fn_by_phase.items() if fn + " (" in (r.get("stack_text") or "")]
                if len(q) == 1:
                    n[q[0]] += 1
    rate = {k: n[k] / secs[k] for k in fn_by_phase if secs.get(k)}
    if len(rate) < 2:
        return float("nan"), "no phases to compare"
    hi, lo = max(rate, key=rate.get), min(rate, key=rate.get)
    up = (n[hi] - 2 * math.sqrt(n[hi])) / secs[hi]
    down = (n[lo] + 2 * math.sqrt(n[lo])) / secs[lo]
    return (up / down if down > 0 else float("inf")), ", ".join(
        "%s %.0f/s" % (k, rate[k]) for k in sorted(rate, key=rate.get, reverse=True))
