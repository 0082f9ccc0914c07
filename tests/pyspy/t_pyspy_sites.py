"""SITE records (ring format 1.2, issue 12 point 3): a real Python process
with `import anchor` writes one per call site of `with anchor.phase`,
`@anchor.phase` and anchor.mark(); anchorpost labels a speedscope stack by
the innermost frame at a site's lines and places every labelled sample in
a range of its own phase, whatever the nominal sample times say.

The profile is built here from the victim's source lines (no py-spy, no
timing): per step one sample in each of data (after the mark), fwd, inner
(nested in fwd: the innermost wins), optim (a decorated function), one
at a `with` whose phase name is computed (two names at one site: labelled
with the set {even, odd}, issue 21) and one at the loop line
(unlabelled), at nominal 10 ms each,
so the profile is shorter than the run (as without --idle: the
sleeps' samples are missing).  Both writers: the module's own and
libanchor.so's (LD_PRELOAD).  Checked: 5 sites (data, fwd, inner, optim,
the computed name's set), 5 labelled samples per
step, 100 % of them inside their phase (a set's: inside one of its
phases)."""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
VICTIM = os.path.join(ROOT, "tests", "victims", "sites_victim.py")
STEPS = 12


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def tags():
    t = {}
    for i, line in enumerate(open(VICTIM).read().splitlines(), 1):
        m = re.search(r"# @(\w+)", line)
        if m:
            t[m.group(1)] = i
    return t


def profile(tid, out):
    t = tags()
    frames = [
        {"name": "<module>", "file": VICTIM, "line": t["data_body"]},    # 0
        {"name": "<module>", "file": VICTIM, "line": t["fwd_body"]},     # 1
        {"name": "busy", "file": VICTIM, "line": t["busy"]},             # 2
        {"name": "<module>", "file": VICTIM, "line": t["inner_body"]},   # 3
        {"name": "<module>", "file": VICTIM, "line": t["optim_call"]},   # 4
        {"name": "_decorate.<locals>.wrapper", "file": os.path.join(BUILD, "python", "anchor", "__init__.py"),
         "line": 97},                                                    # 5: anchor's own: never a site
        {"name": "step_fn", "file": VICTIM, "line": t["optim_body"]},    # 6
        {"name": "<module>", "file": VICTIM, "line": t["dyn_body"]},     # 7
        {"name": "<module>", "file": VICTIM, "line": t["loop"]},         # 8: not in any site
    ]
    step = [[0], [1, 2], [3, 2], [4, 5, 6, 2], [7, 2], [8]]
    samples = [s for _ in range(STEPS) for s in step]
    prof = {
        "$schema": "https://www.speedscope.app/file-format-schema.json", "exporter": "py-spy@0.4.3",
        "name": "py-spy profile", "activeProfileIndex": None, "shared": {"frames": frames},
        "profiles": [{"type": "sampled", "name": 'Thread %d "MainThread"' % tid, "unit": "seconds",
                      "startValue": 0.0, "endValue": 0.01 * len(samples), "samples": samples,
                      "weights": [0.01] * len(samples)}],
    }
    json.dump(prof, open(out, "w"))
    return 5 * STEPS


def run(tmp, preload):
    ring = os.path.join(tmp, "p%d.ring" % preload)
    env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(BUILD, "python"))
    for k in ("ANCHOR_AUTO", "ANCHOR_DISABLE", "ANCHOR_SYNC_PULSE", "LD_PRELOAD"):
        env.pop(k, None)
    if preload:
        env["LD_PRELOAD"] = os.path.join(BUILD, "libanchor.so")
    p = subprocess.Popen([sys.executable, VICTIM, str(STEPS)], env=env)
    if p.wait(timeout=300):
        fail("victim exited %d" % p.returncode)
    prof = os.path.join(tmp, "p%d.json" % preload)
    want = profile(p.pid, prof)
    out = os.path.join(tmp, "p%d.csv" % preload)
    r = subprocess.run([os.path.join(BUILD, "anchorpost"), "samples", prof, "--ring", ring, "-o", out],
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        fail("anchorpost samples: %s%s" % (r.stdout, r.stderr))
    line = [x for x in open(out + ".alignment.txt").read().splitlines() if "py-spy speedscope" in x]
    line = line[0] if line else ""
    m = re.search(r"structure: (\d+) phase site\(s\), (\d+) sample\(s\) at one, ([0-9.]+)% of those inside", line)
    if not m:
        fail("no structure in the alignment line: " + line)
    sites, lab, inside = int(m.group(1)), int(m.group(2)), float(m.group(3))
    if sites != 5 or lab != want or inside != 100.0:
        fail("want 5 sites, %d labelled samples, 100%% inside; got %d, %d, %g%%: %s"
             % (want, sites, lab, inside, line))
    print("ok (%s): %s" % ("LD_PRELOAD" if preload else "own writer", line.strip()))


def main():
    for f in ("anchorpost", "libanchor.so"):
        if not os.path.exists(os.path.join(BUILD, f)):
            print("SKIP: %s not built" % f)
            sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="anchor-sites-", dir=os.environ.get("ANCHOR_TEST_TMP"))
    for preload in (0, 1):
        run(tmp, preload)


main()
