"""The sensor's own lag behind perun's stamps (model/sensor_lag.h): joules
per layer against exact truth, anchorpost before and after, on the same
recordings (BENCHMARKS.md section 20).

    PYTHONPATH=build/python python bench/sensor_lag.py [--old OLD/anchorpost] \
        [--runs N] [--steps S] [--load K] [--out DIR] [--reuse] [--accuracy DIR]

Each run records tests/victims/torch_truth_train.py (a real 2-layer
transformer, anchor.torch.layers(model, depth=2), 1-10 ms layers) under
real perun 1.0 at 0.1 s on the emulated RAPL sensor, whose power follows
the layer running (tests/torch/torch_truth_lib.py; emulated sensor, not a
measurement), then runs `anchorpost phases` with build/anchorpost and with
--old, and compares every phase row's self joules (package + dram) with
the exact truth: whether the 95 % interval holds it, the median half width
and the errors of the rows with >= 10 % of the largest row's joules.
--load K runs `stress-ng --cpu K` beside the recordings.  --reuse analyses
the recordings already in --out.  --accuracy DIR also analyses the
recordings bench/accuracy.py left in DIR (its scenarios) the same way.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "torch"))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def layer_rows(binary, rec, truth):
    """(covered, n, half widths, errors) of one recording's phase rows."""
    from torch_truth_lib import phase_sums
    out = os.path.join(rec, "lagbench-%d.csv" % os.getpid())
    p = subprocess.run([binary, "phases", "--ring", os.path.join(rec, "run.ring"), "--perun",
                        os.path.join(rec, "perun", "torch_truth_train.hdf5"), "-o", out],
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s phases failed: %s" % (binary, p.stderr.strip()[-500:]))
    lag = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("perun's readings lag")]
    ph = phase_sums(out)
    os.unlink(out)
    big = max(truth.values())
    cov = n = 0
    half, err = [], []
    for name, t in truth.items():
        if name not in ph:
            continue
        e, lo, hi, _ = ph[name]
        n += 1
        cov += lo <= t <= hi
        if t >= 0.1 * big:
            half.append(100 * (hi - lo) / 2 / max(e, 1e-12))
            err.append(100 * abs(e - t) / t)
    return cov, n, half, err, (lag[0][lag[0].index(":") + 2:] if lag else "")


def summary(name, res):
    cov = sum(r[0] for r in res)
    n = sum(r[1] for r in res)
    half = [h for r in res for h in r[2]]
    err = [e for r in res for e in r[3]]
    print("%-5s %2d runs: intervals hold the truth in %d of %d rows; large rows (%d): median half width %.1f %%, "
          "median |error| %.1f %%, p95 |error| %.1f %%, worst %.1f %%"
          % (name, len(res), cov, n, len(half), statistics.median(half), statistics.median(err),
             sorted(err)[int(0.95 * (len(err) - 1))], max(err)))


def accuracy_rows(binary, rec):
    import accuracy
    out = []
    for sc in accuracy.SCENARIOS:
        src = accuracy.NO_HOOK_FROM.get(sc[0])
        d = os.path.join(rec, src or sc[0])
        if not os.path.exists(os.path.join(d, "truth.json")):
            continue
        tmp = os.path.join(rec, "lagbench-%d" % os.getpid())
        out += accuracy.analyse(sc, d, binary, "auto", ["--no-hook"] if src else [], tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="anchorpost to compare with (e.g. built before sensor_lag.c)")
    ap.add_argument("--new", default=os.path.join(ROOT, "build", "anchorpost"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--load", type=int, default=0)
    ap.add_argument("--out", default="/tmp/anchor-sensor-lag")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--accuracy")
    a = ap.parse_args()
    os.environ.setdefault("ANCHOR_TEST_TMP", a.out)
    from torch_truth_lib import layer_phases, record_layers, truth_per_phase
    bins = [("old", a.old)] if a.old else []
    bins.append(("new", a.new))
    res = {which: [] for which, _ in bins}
    hog = None
    if a.load and not a.reuse:
        hog = subprocess.Popen(["stress-ng", "--cpu", str(a.load), "--quiet"])
    try:
        for i in range(a.runs):
            name = "run%d" % i
            rec = os.path.join(a.out, name)
            if not a.reuse:
                record_layers(name, steps=a.steps)
            truth = truth_per_phase(os.path.join(rec, "instances.csv"), layer_phases(), os.path.join(rec, "run.ring"))
            line = []
            for which, binary in bins:
                r = layer_rows(binary, rec, truth)
                res[which].append(r)
                line.append("%s %d/%d, half %.1f %%, worst %.1f %%" % (which, r[0], r[1], statistics.median(r[2]),
                                                                     max(r[3])))
            print("%s: %s; lag: %s" % (name, "; ".join(line), res["new"][-1][4] or "-"), flush=True)
    finally:
        if hog:
            hog.terminate()
            hog.wait()
    for which, _ in bins:
        summary(which, res[which])
    if a.accuracy:
        for which, binary in bins:
            rs = accuracy_rows(binary, a.accuracy)
            for klass in ("long", "short", "mixed"):
                rr = [r for r in rs if r["class"] == klass]
                if not rr:
                    continue
                half = [100 * (r["ci_high_j"] - r["ci_low_j"]) / 2 / r["true_j"] for r in rr]
                print("accuracy %-4s %-6s %2d rows: hold %2d, median half width %.2f %%, worst |error| %.2f %%"
                      % (which, klass, len(rr), sum(r["covered"] for r in rr), statistics.median(half),
                         max(abs(r["err_pct"]) for r in rr)))
            for r in rs:
                if not r["covered"]:
                    print("   %s misses %s %s %s: %+.2f %% [%.2f, %.2f] truth %.2f" % (
                        which, r["scenario"], r["phase"], r["group"], r["err_pct"], r["ci_low_j"], r["ci_high_j"],
                        r["true_j"]))
    print("emulated sensor, not a measurement: the power is known because it is emulated")


if __name__ == "__main__":
    main()
