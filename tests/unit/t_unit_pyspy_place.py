"""The speedscope alignment on synthetic sample sequences of known truth
(issue 21): a real ring from tests/victims/placement_victim.py (real
Python, the module's own writer, its SITE records), and a speedscope
profile made here from the ring's own phase ranges: a sample every
PERIOD_S of *real* time, its stack the one the victim runs at that instant
(the with-statement's body line, the phase-only function), but nominal
times i/100 as py-spy writes them: py-spy fell behind by 3 % (the scale
must be fitted), and the first SKIP_S of the process has no sample (the
offset must be found).  Every sample's true instant is known, so the
stated uncertainty is checked against the true time error itself:

  helper_class   >= 95 % inside their phase, stated >= the true p95
                 error and <= 3x it + one period; no PY-SPY'S RATE VARIED
  helper_class, catching up
                 500 Hz nominal, a sample every 3 ms of real time but
                 every 0.85 ms in the data phase (py-spy starved while the
                 victim computes, catching up while it sleeps): >= 90 %
                 inside, stated >= the true p95 of the samples in
                 phases, the line says PY-SPY'S RATE VARIED with data the
                 fastest, and that samples outside the sites have no
                 exact time where they lie beyond the figure
  generic        one `with anchor.phase(name)` for every phase, called
                 from one line in a loop: the stacks cannot tell the
                 phases apart; >= 90 % placed or CANNOT PLACE with every
                 sample placed=0, never a narrow wrong interval"""
import bisect
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import placement_check as pc  # noqa: E402

BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
ANCHORPOST = os.path.join(BUILD, "anchorpost")
VICTIM = os.path.join(ROOT, "tests", "victims", "placement_victim.py")
PERIOD_S, NOMINAL_S, SKIP_S = 0.0103, 0.01, 0.3
FN = pc.PHASE_FN
MODULE = {"name": "<module>", "file": VICTIM, "line": len(open(VICTIM).read().splitlines())}  # main()


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def src_line(func, needle):
    """Line of the first line holding needle inside def func."""
    lines = open(VICTIM).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("def %s(" % func))
    return next(i + 1 for i in range(start, len(lines)) if needle in lines[i])


def frames_for(style):
    """{phase: [frame, ...]} below main for each phase, and the frames
    outside every phase."""
    main = {"name": "main", "file": VICTIM, "line": src_line("main", "step(L)")}
    spin = {"name": "spin", "file": VICTIM, "line": src_line("spin", "while")}
    out = {}
    for q, fn in FN.items():
        body = {"name": fn, "file": VICTIM, "line": src_line(fn, "work(" if q != "data" else "work(\"data\", s * 0.5)")}
        if style == "helper_class":
            st = [{"name": "step_helper_class", "file": VICTIM, "line": src_line("step_helper_class", '%s(L["%s"])' % (fn, q))}]
        else:
            st = [{"name": "step_generic", "file": VICTIM, "line": src_line("step_generic", "run_phase(name")},
                  {"name": "run_phase", "file": VICTIM, "line": src_line("run_phase", "return fn(s)")}]
        out[q] = [main] + st + [body, spin]
    out[None] = [main, {"name": "spin", "file": VICTIM, "line": src_line("main", "spin(rng")}, spin]
    out["setup"] = [{"name": "main", "file": VICTIM, "line": src_line("main", "setup_work(")},
                    {"name": "setup_work", "file": VICTIM, "line": src_line("setup_work", "spin(")}, spin]
    return out


def case(tmp, style, period=None, nominal_s=NOMINAL_S, tag=""):
    """period: {phase: real seconds between samples} (None: PERIOD_S
    everywhere, py-spy 3 % behind), the rest at period[None]."""
    ring = os.path.join(tmp, style + tag + ".ring")
    env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(BUILD, "python"))
    for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE"):
        env.pop(k, None)
    env["LD_PRELOAD"] = os.path.join(BUILD, "libanchor.so")  # the process's life from its start
    subprocess.run([sys.executable, VICTIM, style, "1.5", "7"], env=env, check=True, timeout=120)
    occ = pc.occurrences(ANCHORPOST, ring, tmp)
    tid = next(t for (t, q) in occ if q in FN)
    iv = sorted((a, b, q) for (t, q), v in occ.items() if t == tid and q in FN for a, b in v)
    starts = [a for a, _, _ in iv]
    t0, t1 = iv[0][0] - 0.6 + SKIP_S, iv[-1][1]  # the victim spends 0.6 s in set-up first
    fr = frames_for(style)
    table, idx = [], {}

    def fid(f):
        k = (f["name"], f["line"])
        if k not in idx:
            idx[k] = len(table)
            table.append(f)
        return idx[k]

    samples, truth = [], []
    t = t0
    while t < t1:
        k = bisect.bisect_right(starts, t) - 1
        q = iv[k][2] if k >= 0 and t <= iv[k][1] else (None if t >= iv[0][0] else "setup")
        samples.append([fid(f) for f in [MODULE] + fr[q]])
        truth.append((t, q))
        t += period.get(q, period[None]) if period else PERIOD_S
    prof = os.path.join(tmp, style + tag + ".json")
    json.dump({"$schema": "https://www.speedscope.app/file-format-schema.json", "exporter": "py-spy@0.4.3",
               "name": "py-spy profile", "activeProfileIndex": None, "shared": {"frames": table},
               "profiles": [{"type": "sampled", "name": 'Thread %s "MainThread"' % tid, "unit": "seconds",
                             "startValue": 0.0, "endValue": nominal_s * len(samples), "samples": samples,
                             "weights": [nominal_s] * len(samples)}]}, open(prof, "w"))
    out = os.path.join(tmp, style + tag + ".csv")
    r = subprocess.run([ANCHORPOST, "samples", prof, "--ring", ring, "--stack-text", "-o", out],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        fail("anchorpost samples: " + r.stderr)
    import csv
    rows = list(csv.DictReader(open(out)))
    if len(rows) != len(truth):
        fail("%d rows for %d samples" % (len(rows), len(truth)))
    err = [(abs(float(x["unix_s"]) + float(x["at_s"]) - float(x["t_s"]) - tt), q) for x, (tt, q) in zip(rows, truth)]
    errs = sorted(e for e, _ in err)
    # the samples in a phase, which its sites place (the figure's promise
    # where SAMPLE TIMES UNKNOWN says the others have no exact time)
    inside = sorted(e for e, q in err if q in FN)
    globals()["P95_IN_MS"] = inside[int(0.95 * (len(inside) - 1))] * 1e3
    globals()["MAX_OUT_MS"] = max([e for e, q in err if q not in FN] or [0]) * 1e3
    p95 = errs[int(0.95 * (len(errs) - 1))] * 1e3
    s = pc.score(ANCHORPOST, ring, out, tmp)
    line, stated, cannot = pc.alignment_line(out + ".alignment.txt")
    print("%s%s: %.1f %% of %d inside their phase, true time error p95 %.3g ms, stated +-%.3g ms%s" % (
        style, tag, 100 * s["share"], s["n"], p95, stated, ", CANNOT PLACE" if cannot else ""))
    return s, p95, stated, cannot, line


def main():
    if not os.path.exists(ANCHORPOST):
        print("SKIP: anchorpost not built")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="anchor-place-unit-", dir=os.environ.get("ANCHOR_TEST_TMP"))
    s, p95, stated, cannot, line = case(tmp, "helper_class")
    if cannot or s["share"] < 0.95:
        fail("helper_class: %.1f %% placed: %s" % (100 * s["share"], line))
    if not stated >= p95:
        fail("helper_class: stated +-%g ms below the true p95 time error %g ms: %s" % (stated, p95, line))
    # the profile falls 0.39 s short of the process's life (the first
    # SKIP_S unsampled, then 3 % behind), more than a step: the step is
    # left open (align_pyspy_confidence.c), and the width it may add is
    # that step, no more
    m = re.search(r"STEP OPEN: the phases repeat every [0-9.e+]+ ms and a mapping ([0-9.e+]+) ms away", line)
    step_ms = float(m.group(1)) if m else 0.0
    if stated > 3 * p95 + 1e3 * NOMINAL_S + step_ms:
        fail("helper_class: stated +-%g ms wider than 3x the true p95 %g ms + a period (+ %g ms STEP OPEN): %s" % (
            stated, p95, step_ms, line))
    m = re.search(r"scale ([0-9.]+)", line)
    if not m or abs(float(m.group(1)) - PERIOD_S / NOMINAL_S) > 0.01:
        fail("helper_class: py-spy fell 3 %% behind, the fitted scale should be %.3f: %s" % (PERIOD_S / NOMINAL_S, line))
    if "RATE VARIED" in line:
        fail("helper_class: py-spy kept one rate, yet the line says PY-SPY'S RATE VARIED: " + line)
    # py-spy at 500 Hz beside load: starved (3 ms) while the victim
    # computes, catching up back to back (0.85 ms) in the data phase, whose
    # function sleeps half its time (t_pyspy_clock_slow's recordings: 992
    # samples/s in data against 153-206 in the others).  The line must say
    # PY-SPY'S RATE VARIED; the figure must cover the samples in phases
    # (1-2 ms off here against a count floor of ~22 ms: the rates, not
    # the placement, widen it); the set-up before the first phase, placed
    # by a scale that py-spy did not keep there, is 20-90 ms off, and the
    # line must say that such samples have no exact time
    s, p95, stated, cannot, line = case(tmp, "helper_class", {"data": 0.00085, None: 0.003}, 0.002, "_catchup")
    if cannot or s["share"] < 0.9:
        fail("helper_class_catchup: %.1f %% placed: %s" % (100 * s["share"], line))
    if not stated >= P95_IN_MS:
        fail("helper_class_catchup: stated +-%g ms below the true p95 time error of the samples in phases %g ms: %s"
             % (stated, P95_IN_MS, line))
    if MAX_OUT_MS > stated and "samples outside them have no exact time" not in line:
        fail("helper_class_catchup: samples outside phases up to %g ms off, beyond +-%g ms, and the line does not "
             "say they have no exact time: %s" % (MAX_OUT_MS, stated, line))
    m = re.search(r"PY-SPY'S RATE VARIED: ([0-9]+) samples/s in (\S+) against ([0-9]+) in (\S+)", line)
    if not m or m.group(2) != "data":
        fail("helper_class_catchup: no PY-SPY'S RATE VARIED naming data as the fastest: " + line)
    print("helper_class_catchup: %s samples/s in data against %s in %s (truth %.0f and %.0f); in phases true p95 "
          "%.3g ms, outside up to %.3g ms" % (m.group(1), m.group(3), m.group(4), 1 / 0.00085, 1 / 0.003, P95_IN_MS,
                                            MAX_OUT_MS))
    s, p95, stated, cannot, line = case(tmp, "generic")
    if cannot:
        if s["unplaced"] != s["n"]:
            fail("generic: CANNOT PLACE but only %d of %d samples placed=0" % (s["unplaced"], s["n"]))
        if not stated >= p95:
            fail("generic: CANNOT PLACE with +-%g ms, below the true p95 %g ms" % (stated, p95))
    elif s["share"] < 0.9 or not stated >= p95:
        fail("generic: %.1f %% placed, stated %g ms vs true %g ms, and no CANNOT PLACE: %s" % (
            100 * s["share"], stated, p95, line))
    print("ok")


main()
