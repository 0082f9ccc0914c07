"""Every layer a phase, against exact truth (issue 25 points 3, 4): the real
transformer of tests/victims/torch_truth_train.py with
anchor.torch.layers(model, depth=2), trained on CPU; the emulated RAPL
sensor draws a different power in each layer's forward and backward (the
victim publishes the innermost phase at each anchored edge), real perun
reads it at 0.1 s.  `anchorpost report`:
  * phases.csv has every layer's forward and backward by module path
    (`1.layers.0/forward`, ...), nested inside forward/backward;
  * the self joules' 95 % intervals (package + dram) hold the exact truth
    (the sensor's power integrated over the ring's own segments of each
    phase) in all phase rows that got joules but as many as a correct 95 %
    interval misses once in 200 runs (3 of 14), none by more than twice
    its half width, and are informative
    for the rows that carry >= 10 % of the largest row's joules: median
    half width <= 40 % at 200 steps (measured 5-27 % once the sensors'
    lag behind perun's stamps is fitted, model/sensor_lag.h); the small
    rows (under 1 J) have wide intervals that say so;
  * report draws layers.svg/.png: joules per layer, forward and backward
    side by side with error bars, a row per module path.
Emulated sensor, not a measurement."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_truth_lib import (LAYER_PATHS, anchorpost, check, fails, layer_phases, miss_ratio, misses_allowed,  # noqa: E402
                             need, phase_sums, record_layers, truth_per_phase)


def main():
    need()
    out, trace, ring, h5, inst = record_layers("layers", steps=200)
    rep = os.path.join(out, "rep")
    anchorpost("report", "--ring", ring, "--perun", h5, "--profile", trace, "-d", rep)
    truth = truth_per_phase(inst, layer_phases(), ring)
    ph = phase_sums(os.path.join(rep, "phases.csv"))
    for pth in LAYER_PATHS:
        for what in ("forward", "backward"):
            check(pth + "/" + what in ph, "phases.csv has %s/%s with joules" % (pth, what))
    n = cover = undecided = 0
    half, err, ratio = [], [], []
    biggest = max(truth.values())
    for name, t in sorted(truth.items()):
        if name not in ph:
            continue
        e, lo, hi, flags = ph[name]
        if "unidentifiable" in flags.lower():
            undecided += 1
        n += 1
        ok = lo <= t <= hi
        cover += ok
        ratio.append(miss_ratio(e, lo, hi, t))
        if t >= 0.1 * biggest:
            half.append((hi - lo) / 2 / max(e, 1e-12))
            err.append(abs(e - t) / max(t, 1e-12))
        print("     %-22s est %8.4f J [%8.4f, %8.4f] truth %8.4f %s %s" % (
            name, e, lo, hi, t, "" if ok else "MISS (%.2f of its half width)" % ratio[-1], flags))
    check(n >= 12, "at least 12 phases with joules (%d)" % n)
    # One run is 14 rows.  At exactly 95 % coverage 14 rows miss once or
    # more in half of the runs and twice or more in 15 %: one run cannot
    # judge the rate (bench/sensor_lag.py does, over many runs: BENCHMARKS
    # section 20).  What one run can judge: no more misses than a correct
    # 95 % interval shows but once in 200 runs (misses_allowed: 3 of 14),
    # and no miss that chance does not explain (the truth more than twice
    # the half width away).  A CI run missed 1.layers.1's forward and
    # backward by 1.09 and 1.005 of their half widths (the fit moved joules
    # between them); 16 runs on 2026-12-07 (8 idle, 8 beside stress-ng
    # --cpu 2) held 224 of 224, the worst at 0.97 of its half width.
    k = misses_allowed(n)
    check(n and n - cover <= k, "intervals hold the truth in %d of %d phase rows (at most %d misses)" % (cover, n, k))
    check(ratio and max(ratio) <= 2.0, "every truth within twice its half width of the estimate (worst %.2f of it)"
          % max(ratio or [0]))
    check(half and err, "large rows to judge")
    mh, we = statistics.median(half or [0]), max(err or [0])
    # With the sensors' lag fitted (model/sensor_lag.h) the large rows'
    # median half width measured 5-27 % over 8 runs, idle and loaded
    # (27-86 % before, with 3 ms of timing assumed): wider than 40 % says
    # the intervals have stopped saying anything useful.
    check(mh <= 0.40, "large rows: median half width %.1f %% (at most 40 %%); worst |error| %.1f %%, inside its "
          "interval" % (100 * mh, 100 * we))
    print("     %d rows flagged as not identifiable" % undecided)
    svg = open(os.path.join(rep, "layers.svg")).read() if os.path.exists(os.path.join(rep, "layers.svg")) else ""
    check(svg and all(">%s<" % pth in svg for pth in LAYER_PATHS) and os.path.getsize(os.path.join(rep, "layers.png")) > 1000,
          "report drew layers.svg/.png with every layer's row")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
