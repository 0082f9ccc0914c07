"""issue 21: the stated py-spy uncertainty against the true *time* error of
real samples.  tests/victims/placement_victim.py's clock mode runs each
phase's busy time as 2 ms slots of 50 function names per phase and logs
every slot's CLOCK_MONOTONIC begin/end, so each placed sample's true
instant is known to within one slot (tests/lib/placement_check.py
score_clock).  Real `py-spy record --idle --format speedscope` at 100 and
500 Hz of the helper_class style, everything under libanchor.

Checks per recording: placed (no CANNOT PLACE); the stated uncertainty
covers the true p95 time error and is at most 3x it + one sample period
(BENCHMARKS.md §15b), plus the step's distance where the line says STEP
OPEN (tests/pyspy/t_pyspy_step_slip.py has two such recordings; one run
in about 7 beside load held every sample a step late before that check).
Before the count floor (align_pyspy_confidence.c
count_p95_s) the stated +-10.5 ms / +-2 ms stood against 13-17 ms /
7.6-9.8 ms: not covered.

The true p95 here is a sample quantile of 200-1100 samples, so both
checks use its one-sided 95 % confidence bounds (placement_check.py
score_clock p95_lo_ms / p95_hi_ms: the order statistics at 0.925-0.94 and
0.96-0.975 of them): covered means at least the lower bound, too wide
more than 3x the upper bound + a period.  Against the point p95, one of
124 loaded and idle recordings (BENCHMARKS.md 22) stated +-15.0 ms for a
true 15.1 ms [12.1, 18.2]: noise in the truth's own estimate, not a
broken promise.

The width check assumes py-spy kept one rate (the count floor reads the
samples per occurrence against its length).  On a loaded machine it does
not: it falls behind while the victim computes and catches up, back to
back, while the victim sleeps (the data phase sleeps half its time), so a
phase's samples no longer measure its length.  The check is skipped, with
a line saying so, where the stacks and the ring show the phases' sample
rates differing by more than PHASE_RATE_MAX (placement_check.py
pyspy_phase_rates: highest over lowest, each two Poisson sigmas towards
the other).  Over 61 recordings at 500 Hz (idle and beside stress-ng
--cpu 4) the count floor grew with that ratio: the 6 too wide (count floors of
28.5-39.0 ms against bounds of 23.6-34.5 ms) had 1.60-4.50; none below
1.4 was too wide; 64 at 100 Hz had 0.55-1.18.  (Until 2026-12-07 the rate over
100-sample stretches of clocked samples was the gate: it cannot see the
catch-up, which falls in the sleep, and one loaded run failed at 1.46.)
Coverage is checked always.  anchorpost says PY-SPY'S RATE VARIED where
it finds the same (from its phase sites): required above 1.6, refused
below 1.2 (21 of 127 kept recordings said it, exactly those at 1.42 and
above)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import placement_check as pc  # noqa: E402
from pyspy_common import ANCHORPOST, BUILD, pyspy_binary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VICTIM = os.path.join(ROOT, "tests", "victims", "placement_victim.py")
PHASE_RATE_MAX = 1.4


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    if not pyspy_binary():
        print("SKIP: py-spy is not installed")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="anchor-clock-", dir=os.environ.get("ANCHOR_TEST_TMP"))
    for rate in (100, 500):
        d = os.path.join(tmp, str(rate))
        os.makedirs(d)
        ring, prof, clock, out = (os.path.join(d, x) for x in ("r.ring", "p.json", "clock.csv", "s.csv"))
        env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(BUILD, "python"),
                   LD_PRELOAD=os.path.join(BUILD, "libanchor.so"), ANCHOR_PLACEMENT_CLOCK_LOG=clock)
        for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE"):
            env.pop(k, None)
        r = subprocess.run([pyspy_binary(), "record", "--idle", "--format", "speedscope", "-r", str(rate), "-o", prof,
                            "--", sys.executable, VICTIM, "helper_class", "2.5"], env=env, capture_output=True,
                           text=True, timeout=300)
        if r.returncode or not os.path.exists(prof):
            if "ermission" in r.stderr or "ptrace" in r.stderr.lower():
                print("SKIP: py-spy cannot attach here")
                sys.exit(77)
            fail("py-spy record: " + r.stderr[-300:])
        r = subprocess.run([ANCHORPOST, "samples", prof, "--ring", ring, "--stack-text", "-o", out],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            fail("anchorpost samples: " + r.stderr)
        s = pc.score_clock(ANCHORPOST, ring, out, clock, d)
        line, stated, cannot = pc.alignment_line(out + ".alignment.txt")
        per = 1000.0 / rate
        print("%d Hz: %d placed samples, true time error p50 %.3g / p95 %.3g [%.3g, %.3g] / max %.3g ms, stated +-%.3g ms" % (
            rate, s["n"], s["p50_ms"], s["p95_ms"], s["p95_lo_ms"], s["p95_hi_ms"], s["max_ms"], stated))
        if cannot:
            fail("%d Hz: CANNOT PLACE on a helper_class recording: %s" % (rate, line))
        if s["n"] < 50:
            fail("%d Hz: only %d samples hold a clock slot" % (rate, s["n"]))
        if not stated >= s["p95_lo_ms"]:
            fail("%d Hz: stated +-%g ms does not cover the true p95 time error %g ms (its lower bound %g): %s" % (
                rate, stated, s["p95_ms"], s["p95_lo_ms"], line))
        # STEP OPEN says in words that another step of the loop fits the
        # sites as well and adds that step's distance (align_pyspy_slip.c):
        # the width it may add is that distance, no more
        m = re.search(r"STEP OPEN: the phases repeat every [0-9.e+]+ ms and a mapping ([0-9.e+]+) ms away", line)
        step_ms = float(m.group(1)) if m else 0.0
        ratio, rates = pc.pyspy_phase_rates(ANCHORPOST, ring, out, d, pc.PHASE_FN)
        print("%d Hz: py-spy's samples per second of each phase: %s (ratio %.2f)" % (rate, rates, ratio))
        # anchorpost counts the same from its phase sites and says so in
        # words (align_pyspy_confidence.c phase_rates); near the threshold
        # the two counts may fall either side
        said = "PY-SPY'S RATE VARIED" in line
        if ratio > 1.6 and not said or ratio < 1.2 and said:
            fail("%d Hz: py-spy's phase rates differ %.2fx here, yet the line %s PY-SPY'S RATE VARIED: %s"
                 % (rate, ratio, "lacks" if ratio > 1.6 else "says", line))
        if ratio > PHASE_RATE_MAX:
            print("%d Hz: py-spy did not keep one rate across the phases (ratio > %.1f): the width is not judged, "
                  "only the coverage" % (rate, PHASE_RATE_MAX))
        elif not stated <= 3 * s["p95_hi_ms"] + per + step_ms:
            fail("%d Hz: stated +-%g ms wider than 3x the true p95 %g ms (its upper bound %g) + one period (+ %g ms "
                 "STEP OPEN): %s" % (rate, stated, s["p95_ms"], s["p95_hi_ms"], step_ms, line))
    print("ok: the stated uncertainty covers the true time error and is within 3x p95 + one period")


main()
