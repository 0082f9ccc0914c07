"""The step-slip measurement of BENCHMARKS.md 15c (issue 21): how often a
speedscope alignment holds every sample a step of the loop off, and whether
the stated uncertainty covers it.

  python3 bench/step_slip.py record DIR N [RATE] [--no-idle]   # N recordings into DIR/RATE_i
  python3 bench/step_slip.py rescore DIR...        # align each again, score

record: real `py-spy record --idle --format speedscope` of
tests/victims/placement_victim.py helper_class 2.5 under libanchor with its
clock log (the recording of tests/pyspy/t_pyspy_clock_slow.py), then
`anchorpost samples`.  Run `stress-ng --cpu 2 &` beside it for the loaded
rows.  Each line: placed samples, the true time error p50/p95/max
(tests/lib/placement_check.py score_clock), the stated +- ms, and whether
it covers (stated >= p95) and is narrow enough (<= 3x p95 + one period, +
the open step's distance when the line says STEP OPEN)."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import placement_check as pc  # noqa: E402
from pyspy_common import ANCHORPOST, BUILD, pyspy_binary  # noqa: E402

VICTIM = os.path.join(ROOT, "tests", "victims", "placement_victim.py")


def score(d, per_ms):
    out = os.path.join(d, "s.csv")
    r = subprocess.run([ANCHORPOST, "samples", os.path.join(d, "p.json"), "--ring", os.path.join(d, "r.ring"),
                        "--stack-text", "-o", out], capture_output=True, text=True)
    if r.returncode:
        print("%s: %s" % (d, r.stderr.strip()))
        return
    s = pc.score_clock(ANCHORPOST, os.path.join(d, "r.ring"), out, os.path.join(d, "clock.csv"), d)
    line, stated, cannot = pc.alignment_line(out + ".alignment.txt")
    m = re.search(r"STEP OPEN: the phases repeat every [0-9.e+]+ ms and a mapping ([0-9.e+]+) ms away", line)
    step = float(m.group(1)) if m else 0.0
    covers = stated >= s["p95_ms"]
    narrow = stated <= 3 * s["p95_ms"] + per_ms + step
    print("%-28s n %4d true p50 %6.3g p95 %6.3g max %6.3g ms  stated +-%6.3g ms  %s%s%s%s" % (
        d, s["n"], s["p50_ms"], s["p95_ms"], s["max_ms"], stated, "covers" if covers else "NOT COVERED",
        ", width" if narrow else ", TOO WIDE", ", STEP OPEN" if m else "", ", CANNOT PLACE" if cannot else ""))
    sys.stdout.flush()


def record(base, n, rate, idle):
    for i in range(n):
        d = os.path.join(base, "%d_%d" % (rate, i))
        os.makedirs(d, exist_ok=True)
        env = dict(os.environ, ANCHOR_FILE=os.path.join(d, "r.ring"), PYTHONPATH=os.path.join(BUILD, "python"),
                   LD_PRELOAD=os.path.join(BUILD, "libanchor.so"),
                   ANCHOR_PLACEMENT_CLOCK_LOG=os.path.join(d, "clock.csv"))
        for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE"):
            env.pop(k, None)
        subprocess.run([pyspy_binary(), "record"] + (["--idle"] if idle else []) + ["--format", "speedscope", "-r", str(rate), "-o",
                        os.path.join(d, "p.json"), "--", sys.executable, VICTIM, "helper_class", "2.5"],
                       env=env, capture_output=True, text=True, check=True)
        score(d, 1000.0 / rate)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "record":
        idle = "--no-idle" not in sys.argv
        args = [a for a in sys.argv[2:] if a != "--no-idle"]
        record(args[0], int(args[1]), int(args[2]) if len(args) > 2 else 100, idle)
    elif len(sys.argv) >= 3 and sys.argv[1] == "rescore":
        for d in sys.argv[2:]:
            m = re.match(r"(\d+)_\d+$", os.path.basename(d.rstrip("/")))
            score(d, 1000.0 / int(m.group(1)) if m else 10.0)
    else:
        sys.exit(__doc__)


main()
