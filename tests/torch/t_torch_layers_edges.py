"""anchor.torch.layers' edges in the ring (issue 25 point 3), real torch:
tests/victims/torch_layers_edges.py trains a model with a first layer on
data, a nested encoder, a head and a branch whose input gradient never
comes, then evaluates under no_grad and removes the hooks.  From
`anchorpost dump`:
  * every range nests (begin/end as a stack per thread) and is closed;
  * each step's layer backward ranges lie inside its `backward` phase, in
    backward order (head and tap before enc, enc.layers.1 before
    enc.layers.0 and both inside enc, then a), each forward inside
    `forward`;
  * the first layer's backward is a real range: it holds the instant its
    weight gradient is accumulated (a mark the victim writes then); the branch's ends where an unrelated
    module's backward begins (it holds only its own submodule);
  * no layer backward under no_grad, no layer record after remove()."""
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile

ROOT = os.environ.get("ANCHOR_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
TMP = os.environ.get("ANCHOR_TEST_TMP") or tempfile.mkdtemp()
VICTIM = os.path.join(ROOT, "tests", "victims", "torch_layers_edges.py")
STEPS = 3
fails = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        fails.append(msg)
    return cond


def main():
    if importlib.util.find_spec("torch") is None:
        print("skip: torch is not installed")
        return 77
    os.makedirs(TMP, exist_ok=True)
    ring = os.path.join(TMP, "edges.ring")
    if os.path.exists(ring):
        os.remove(ring)
    env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(BUILD, "python"))
    p = subprocess.run([sys.executable, VICTIM, str(STEPS)], env=env, capture_output=True, text=True, timeout=300)
    if not check(p.returncode == 0, "victim ran (exit %d) %s" % (p.returncode, p.stderr[-2000:])):
        return 1
    check("Full backward hook" not in p.stderr and "Warning" not in p.stderr,
          "the user's stderr holds no warning of ours: %r" % p.stderr[-500:])
    dump = os.path.join(TMP, "edges.csv")
    subprocess.run([os.path.join(BUILD, "anchorpost"), "dump", ring, "-o", dump], check=True)
    rows = list(csv.DictReader(open(dump)))
    ev = [(int(r["mono_ns"]), r["tid"], r["kind"], r["name"]) for r in rows if r["kind"] in ("begin", "end")]
    wgrad = sorted(int(r["mono_ns"]) for r in rows if r["kind"] == "mark" and r["name"] == "a.weight.grad")
    ev.sort(key=lambda e: e[0])
    # nesting: a stack per thread; ranges as (name, t0, t1, parent chain)
    stacks, ranges, bad = {}, [], []
    for t, tid, kind, name in ev:
        s = stacks.setdefault(tid, [])
        if kind == "begin":
            s.append((name, t))
        elif not s or s[-1][0] != name:
            bad.append("end %s with %s open" % (name, [x[0] for x in s]))
        else:
            n, t0 = s.pop()
            ranges.append((n, t0, t, tuple(x[0] for x in s)))
    check(not bad, "every end closes the innermost open range: %s" % bad[:3])
    check(all(not s for s in stacks.values()), "nothing left open: %s" % {k: v for k, v in stacks.items() if v})
    steps = [r for r in ranges if r[0] == "backward"]
    check(len(steps) == STEPS + 1, "%d backward phases (%d steps + one after remove)" % (len(steps), STEPS))
    for i, (_, b0, b1, _) in enumerate(steps[:STEPS]):
        inside = sorted((r for r in ranges if r[0].endswith("/backward") and b0 <= r[1] and r[2] <= b1),
                        key=lambda r: r[1])
        names = [r[0][:-len("/backward")] for r in inside]
        check(sorted(names) == sorted(["head", "tap", "tap.lin", "enc", "enc.layers.0", "enc.layers.1", "a"]),
              "step %d: every layer's backward inside backward: %s" % (i, names))
        pos = {n: k for k, n in enumerate(names)}
        if len(pos) == 7:
            check(pos["enc"] < pos["enc.layers.1"] < pos["enc.layers.0"] < pos["a"] and pos["head"] < pos["enc"],
                  "step %d: backward order head, enc, enc.layers.1, enc.layers.0, a: %s" % (i, names))
            by = {r[0][:-len("/backward")]: r for r in inside}
            check("enc/backward" in by["enc.layers.0"][3] and "enc/backward" in by["enc.layers.1"][3],
                  "step %d: encoder layers nest inside enc/backward" % i)
            wg = [t for t in wgrad if by["a"][1] <= t <= by["a"][2]]
            check(len(wg) == 1, "step %d: the first layer's backward holds its weight gradient's arrival "
                  "(a real range, %d ns)" % (i, by["a"][2] - by["a"][1]))
            check(by["tap"][2] <= by["head"][1] and by["tap.lin"][2] <= by["tap"][2],
                  "step %d: the branch without an input gradient (tap) ends where the next module's backward "
                  "begins, holding only its own submodule" % i)
    fw = [r for r in ranges if r[0] == "forward"]
    for i, (_, f0, f1, _) in enumerate(fw[:STEPS]):
        names = sorted(r[0] for r in ranges if r[0].endswith("/forward") and f0 <= r[1] and r[2] <= f1)
        check(len(names) == 7, "step %d: 7 layer forwards inside forward: %s" % (i, names))
    ev_ = [r for r in ranges if r[0] == "eval"][0]
    inev = [r[0] for r in ranges if "/" in r[0] and ev_[1] <= r[1] <= ev_[2]]
    check(inev and all(n.endswith("/forward") for n in inev), "eval under no_grad: forwards only: %s" % inev)
    ar = [r for r in ranges if r[0] == "after_remove"][0]
    check(not [r for r in ranges if "/" in r[0] and ar[1] <= r[1] <= ar[2]], "no layer record after remove()")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
