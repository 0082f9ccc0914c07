"""anchor.enabled() and anchor.ring_path() are queries: they create no
ring (issue 22: a notebook that asks would get a ring per kernel), and
ring_path() names the file the first write then creates.  measure=True
(the framework callbacks' per-epoch energy) says once per process why it
measures nothing when no counter is readable.  Runs on whichever CPython
$PYTHON is (t_py_cpythons_slow.sh runs it on each)."""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import TMP, check, need_build, run_py  # noqa: E402

QUERY = r'''
import glob, json, os
import anchor
out = {"enabled": anchor.enabled(), "path": anchor.ring_path(), "again": anchor.ring_path()}
out["rings_after_queries"] = sorted(glob.glob("*.ring"))
anchor.mark("first.write")
out["rings_after_mark"] = sorted(os.path.abspath(p) for p in glob.glob("*.ring"))
out["path_after"] = anchor.ring_path()
print(json.dumps(out))
'''

MEASURE = r'''
import sys
from anchor._cbutil import EpochEnergy
e = EpochEnergy(True, powercap=sys.argv[1])
for epoch in range(3):
    e.start()
    assert e.stop() is None
print("joules", e.joules)
'''


def main():
    need_build()
    cwd = os.path.join(TMP, "nb")
    os.makedirs(cwd)
    p = run_py(QUERY, None, False, cwd=cwd)
    o = json.loads(p.stdout.strip().splitlines()[-1])
    check(o["enabled"] is True, "enabled() %r before the first write" % o["enabled"])
    check(o["rings_after_queries"] == [], "queries created %s" % o["rings_after_queries"])
    check(o["path"] and os.path.dirname(o["path"]) == os.path.realpath(cwd) or os.path.dirname(o["path"]) == cwd,
          "ring_path() %r not in the cwd %s" % (o["path"], cwd))
    check(o["path"] == o["again"] == o["path_after"], "ring_path() changed: %r %r %r" % (o["path"], o["again"], o["path_after"]))
    check([os.path.realpath(x) for x in o["rings_after_mark"]] == [os.path.realpath(o["path"])],
          "the first write created %s, ring_path() said %s" % (o["rings_after_mark"], o["path"]))

    # A named ring (ANCHOR_FILE) is not created by asking either.
    named = os.path.join(TMP, "named.ring")
    p = run_py("import anchor, os; print(anchor.enabled(), anchor.ring_path(), os.path.exists(%r))" % named,
               named, False, cwd=cwd)
    check(p.stdout.split() == ["True", named, "False"], "ANCHOR_FILE: %r" % p.stdout)
    check(not os.path.exists(named), "asking created %s" % named)

    off = os.path.join(TMP, "off")
    os.makedirs(off)
    p = run_py("import anchor; print(anchor.enabled(), repr(anchor.ring_path())); anchor.mark('x')", None, False,
               extra={"ANCHOR_DISABLE": "1"}, cwd=off)
    check(p.stdout.split() == ["False", "''"], "ANCHOR_DISABLE=1: %r" % p.stdout)
    check(glob.glob(os.path.join(off, "*.ring")) == [], "ANCHOR_DISABLE=1 made a ring")

    empty = os.path.join(TMP, "no-powercap")
    os.makedirs(empty)
    p = run_py(MEASURE, os.path.join(TMP, "m.ring"), False, args=(empty,), extra={"PYTHONPATH_TAIL": ""})
    said = [ln for ln in p.stderr.splitlines() if "measure=True measures nothing" in ln]
    check(len(said) == 1, "want one note over 3 epochs, got %d: %r" % (len(said), p.stderr))
    check("no RAPL domain under %s" % empty in said[0], "the note does not say why: %r" % said[0])
    print("PASS: queries create nothing (%s); measure=True: %s" % (os.path.basename(o["path"]), said[0]))


main()
