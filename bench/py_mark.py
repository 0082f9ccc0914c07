"""Cost of one anchor from Python next to the usual alternatives.

    python bench/py_mark.py [--quick]       # driver: runs both configurations
    python bench/py_mark.py --child         # one configuration (env decides)

The driver runs the child twice, without and with LD_PRELOAD=libanchor.so
(ANCHOR_FILE in a temp dir), and prints one markdown table.  In the child,
every case is timed with timeit in many short rounds that interleave the
cases (so load from other processes hits all of them alike).  Reported: the
median over rounds of ns per call net of the empty timeit loop, the fastest
round (gross), and medians of per-round ratios.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))

CASES = [
    ("loop", "empty timeit loop (subtracted)", "pass"),
    ("noop", "empty C-extension call `_anchor._noop()`", "noop()"),
    ("perf_counter_ns", "`time.perf_counter_ns()`", "pc()"),
    ("append", "`lst.append((name, time.perf_counter_ns()))`", "ap((name, pc()))"),
    ("print", "`print(name, time.time(), file=log)`", "pr(name, tt(), file=log)"),
    ("record_function", "torch `record_function(name)` enter/exit", "with rf(name): pass"),
    ("perun_monitor", "perun `@monitor()` on an empty function", "pm()"),
    ("mark", "`anchor.mark(name)`", "mark(name)"),
    ("mark_value", "`anchor.mark(name, i)`", "mark(name, 7)"),
    ("phase", "`with anchor.phase(name): pass`", "with phase(name): pass"),
]


def child(quick):
    import time

    import anchor
    from anchor import _anchor

    log = open(os.path.join(tempfile.mkdtemp(prefix="pymark-"), "log.txt"), "w")
    g = {
        "noop": _anchor._noop, "pc": time.perf_counter_ns, "tt": time.time, "pr": print, "log": log,
        "name": "train.step", "mark": anchor.mark, "phase": anchor.phase, "lst": [],
    }
    g["ap"] = g["lst"].append
    skipped = {}
    try:
        import torch  # noqa: F401
        from torch.autograd.profiler import record_function

        g["rf"] = record_function
    except Exception as e:  # pragma: no cover - torch is a project dependency
        skipped["record_function"] = repr(e)
    try:
        from perun import monitor

        @monitor()
        def empty():
            pass

        empty()  # first call sets perun up; time the steady state
        g["pm"] = empty
    except Exception as e:
        skipped["perun_monitor"] = "%s: %s" % (type(e).__name__, e)

    # Many short rounds, cases interleaved inside each round: a burst of
    # load from another process then hits every case of that round alike,
    # and per-round ratios cancel it.
    rounds = 60 if quick else 400
    calls = {"perun_monitor": 20, "record_function": 100, "print": 500}
    timers = {k: timeit.Timer(stmt, globals=g) for k, _, stmt in CASES if k not in skipped}
    per = {k: [] for k in timers}
    for _ in range(rounds):
        for key, t in timers.items():
            n = calls.get(key, 2000)
            g["lst"].clear()
            per[key].append(t.timeit(n) / n * 1e9)
    log.close()
    loop = per["loop"]
    net = {k: [x - l for x, l in zip(v, loop)] for k, v in per.items()}
    ratio = lambda a, b: statistics.median(x / y for x, y in zip(net[a], net[b]))
    return {
        "median_ns": {k: statistics.median(v) for k, v in per.items()},
        "min_ns": {k: min(v) for k, v in per.items()},
        "net_median_ns": {k: statistics.median(v) for k, v in net.items()},
        "ratio_mark_pc": ratio("mark", "perf_counter_ns"),
        "ratio_print_mark": ratio("print", "mark"),
        "ratio_phase_pc": ratio("phase", "perf_counter_ns"),
        "preloaded": anchor.preloaded(), "enabled": anchor.enabled(),
        "skipped": skipped, "rounds": rounds,
    }


def driver(quick):
    tmp = tempfile.mkdtemp(prefix="pymark-")
    results = {}
    for label, preload in (("own writer", False), ("LD_PRELOAD", True)):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_") and k != "LD_PRELOAD"}
        env["ANCHOR_FILE"] = os.path.join(tmp, "bench-%d.ring" % preload)
        env["PYTHONPATH"] = os.path.join(BUILD, "python") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        if preload:
            env["LD_PRELOAD"] = os.path.join(BUILD, "libanchor.so")
        args = [sys.executable, os.path.abspath(__file__), "--child"] + (["--quick"] if quick else [])
        p = subprocess.run(args, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            sys.exit(1)
        results[label] = json.loads(p.stdout.strip().splitlines()[-1])
        assert results[label]["preloaded"] == preload and results[label]["enabled"], results[label]
    labels = list(results)
    print("| call | " + " | ".join("%s: net ns (median) | min ns" % l for l in labels) + " |")
    print("|---|" + "---:|---:|" * len(labels))
    for key, desc, _ in CASES[1:]:
        cells = []
        for label in labels:
            r = results[label]
            if key in r["net_median_ns"]:
                cells += ["%.1f" % r["net_median_ns"][key], "%.1f" % r["min_ns"][key]]
            else:
                cells += ["n/a", "n/a"]
        print("| %s | %s |" % (desc, " | ".join(cells)))
    print()
    for label in labels:
        r = results[label]
        print("- %s: anchor.mark / perf_counter_ns = **%.2f**, print-to-log / anchor.mark = **%.1f**, "
              "phase / perf_counter_ns = %.2f (medians of per-round ratios, net of the %.1f ns loop)"
              % (label, r["ratio_mark_pc"], r["ratio_print_mark"], r["ratio_phase_pc"], r["median_ns"]["loop"]))
        for k, why in r["skipped"].items():
            print("- %s: %s skipped: %s" % (label, k, why))
    print("- %d rounds; per round 2000 calls per case (print 500, record_function 100, perun 20); Python %s"
          % (results[labels[0]]["rounds"], sys.version.split()[0]))

if __name__ == "__main__":
    quick = "--quick" in sys.argv
    if "--child" in sys.argv:
        print(json.dumps(child(quick)))
    else:
        driver(quick)
