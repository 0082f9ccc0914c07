"""Real `py-spy record --idle --format speedscope` of phases written
through helpers (issue 21): a context-manager class whose __enter__ calls
anchor.phase(name).__enter__(), one generic `with anchor.phase(name)`
called from one line per phase, and the same helper called from one line
in a loop over the names (the data cannot tell those phases apart by
structure).  Everything under libanchor, as the user runs it.

Truth: each phase runs a function that runs in no other phase
(tests/victims/placement_victim.py); the ring's BEGIN/END records say when
(tests/lib/placement_check.py).  Each recording must either place >= 90 %
of those samples in their phase with a stated uncertainty that covers the
true miss and is not uselessly wide (< 100 ms at 100 Hz), or say CANNOT
PLACE on the alignment line and mark its samples placed=0; never a
narrow interval around a wrong placement.  Before issue 21 the helper
class placed 43 % at +-272 ms without a word."""
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
STYLES = ("helper_class", "generic_lines", "generic")
RATE = 100


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(tmp, style):
    ring, prof = os.path.join(tmp, style + ".ring"), os.path.join(tmp, style + ".json")
    env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(BUILD, "python"),
               LD_PRELOAD=os.path.join(BUILD, "libanchor.so"))
    for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE"):
        env.pop(k, None)
    cmd = [pyspy_binary(), "record", "--idle", "--format", "speedscope", "-r", str(RATE), "-o", prof, "--",
           sys.executable, VICTIM, style, "2.5"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode or not os.path.exists(prof):
        if "ermission" in r.stderr or "ptrace" in r.stderr.lower():
            print("SKIP: py-spy cannot attach here")
            sys.exit(77)
        fail("py-spy record %s: %s" % (style, r.stderr[-300:]))
    out = os.path.join(tmp, style + ".csv")
    r = subprocess.run([ANCHORPOST, "samples", prof, "--ring", ring, "--stack-text", "-o", out],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        fail("anchorpost samples %s: %s" % (style, r.stderr))
    return ring, out


def main():
    if not pyspy_binary():
        print("SKIP: py-spy is not installed")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="anchor-place-", dir=os.environ.get("ANCHOR_TEST_TMP"))
    for style in STYLES:
        ring, out = record(tmp, style)
        s = pc.score(ANCHORPOST, ring, out, tmp)
        line, stated, cannot = pc.alignment_line(out + ".alignment.txt")
        print("%s: %d of %d placed right (%.1f %%), true miss p95 %.3g ms, stated +-%.3g ms%s" % (
            style, s["right"], s["n"], 100 * s["share"], s["err_p95_ms"], stated, ", CANNOT PLACE" if cannot else ""))
        if s["n"] < 50:
            fail("%s: only %d samples of phase-only functions: %s" % (style, s["n"], line))
        if cannot:
            if s["unplaced"] != s["n"]:
                fail("%s: CANNOT PLACE but %d of %d samples not marked placed=0" % (style, s["n"] - s["unplaced"], s["n"]))
            if not stated >= s["err_p95_ms"]:
                fail("%s: CANNOT PLACE with +-%g ms, narrower than the true miss %g ms" % (style, stated, s["err_p95_ms"]))
            continue
        if s["share"] < 0.9:
            fail("%s: %.1f %% placed right without a CANNOT PLACE: %s" % (style, 100 * s["share"], line))
        if not stated >= s["err_p95_ms"]:
            fail("%s: stated +-%g ms does not cover the true p95 miss %g ms: %s" % (style, stated, s["err_p95_ms"], line))
        # STEP OPEN (align_pyspy_slip.c) says in words that another step of
        # the loop holds the sites as well and adds that step's distance:
        # the phases hold, the width is the step's, announced
        m = re.search(r"STEP OPEN: the phases repeat every [0-9.e+]+ ms and a mapping ([0-9.e+]+) ms away", line)
        step_ms = float(m.group(1)) if m else 0.0
        if stated > 100 + step_ms:
            fail("%s: stated +-%g ms for a %.0f %%-right placement says nothing: %s" % (style, stated, 100 * s["share"], line))
    print("ok")


main()
