"""A/B of the Python module's hot path between two builds (e.g. before and
after a change to python_hooks/): alternating child processes, each timing
anchor.mark(name), `with anchor.phase(name): pass` and perf_counter_ns()
as the min of 15 x 20000 calls (own writer, a ring in a temp dir).

    python3 bench/py_mark_ab.py OLD_BUILD NEW_BUILD [ROUNDS]"""
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import timeit, anchor, time
g = {"mark": anchor.mark, "phase": anchor.phase, "pc": time.perf_counter_ns}
out = []
for stmt in ("mark('train.step')", "with phase('train.step'): pass", "pc()"):
    t = timeit.Timer(stmt, globals=g)
    t.timeit(5000)
    out.append(min(t.repeat(repeat=15, number=20000)) / 20000 * 1e9)
print(" ".join("%.1f" % x for x in out))
'''


def main():
    builds = {"old": sys.argv[1], "new": sys.argv[2]}
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    tmp = tempfile.mkdtemp(prefix="anchor-ab-")
    res = {"old": [], "new": []}
    for i in range(rounds):
        for v, b in builds.items():
            ring = os.path.join(tmp, "%s%d.ring" % (v, i))
            env = dict(os.environ, PYTHONPATH=os.path.join(b, "python"), ANCHOR_FILE=ring)
            env.pop("LD_PRELOAD", None)
            r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
            res[v].append([float(x) for x in r.stdout.split()])
            os.remove(ring)
    med = {v: [statistics.median(x[k] for x in res[v]) for k in range(3)] for v in res}
    for v in res:
        print("%s: median of %d runs, ns/call: mark %.1f  phase %.1f  perf_counter_ns %.1f"
              % (v, rounds, *med[v]))
    print("new/old: mark %.3f  phase %.3f" % (med["new"][0] / med["old"][0], med["new"][1] / med["old"][1]))


main()
