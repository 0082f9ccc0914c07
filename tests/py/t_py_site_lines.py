"""SITE records hold the true lines of every `with anchor.phase` body on
this interpreter (issue 22: 3.8/3.9 read co_lnotab and SETUP_WITH blocks,
3.10 co_linetable, 3.11+ co_exceptiontable; tests/victims/site_lines_victim.py
tags each line with what its record must say).

Checked per phase: at= is the with (or mark) line; lines= is exactly the
first to the last tagged body line (also with an early return, a
continue, a try whose body ends in raise, nesting, async); a one-line with gets
why= and no lines; the decorated function spans its own lines.  Never a
line outside the body: that would put samples in the wrong phase.  Runs on
whichever CPython $PYTHON is (tests/py/t_py_cpythons_slow.sh runs it on
each one under pyenv)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYTHON, ROOT, TMP, check, dump, events, fail, need_build  # noqa: E402
import subprocess  # noqa: E402

VICTIM = os.path.join(ROOT, "tests", "victims", "site_lines_victim.py")


def tags():
    """{tag: {phase: [lines]}} from the victim's comments."""
    out = {}
    with open(VICTIM) as f:
        for ln, text in enumerate(f, 1):
            for m in re.finditer(r"# (with|in|why|deco) ([\w ]+?)(?= #|$)", text.rstrip("\n")):
                for name in m.group(2).split():
                    out.setdefault(m.group(1), {}).setdefault(name, []).append(ln)
    return out


def main():
    need_build()
    ring = os.path.join(TMP, "lines.ring")
    env = dict(os.environ, ANCHOR_FILE=ring, PYTHONPATH=os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")), "python"))
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([PYTHON, VICTIM], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "victim exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    sites = {}
    for r in events(dump(ring), kind="site"):
        f = dict(kv.split("=", 1) for kv in r["name"].split(";") if "=" in kv)
        check(f.get("file") == VICTIM, "site in another file: %s" % r["name"])
        check(f["phase"] not in sites, "two SITE records for %s" % f["phase"])
        sites[f["phase"]] = f
    t = tags()
    ver = "%d.%d" % sys.version_info[:2]
    want = set(t["with"]) | set(t["deco"])
    check(set(sites) == want, "%s: sites %s, want %s" % (ver, sorted(sites), sorted(want)))
    for name, f in sorted(sites.items()):
        what = "%s: phase %s: %s" % (ver, name, ";".join("%s=%s" % kv for kv in sorted(f.items()) if kv[0] != "file"))
        if name in t["deco"]:
            lo, hi = map(int, f.get("lines", "0-0").split("-"))
            body = t["deco"][name]
            # From its def (3.11+: RESUME) or decorator line, or its first
            # body line (3.8-3.10: the def line runs no code).
            check(min(body) - 3 <= lo <= min(body) and hi == max(body), what + ": want the function's lines")
            continue
        check(int(f.get("at", 0)) == t["with"][name][0], what + ": want at=%d" % t["with"][name][0])
        if f.get("mark") == "1":
            continue
        if name in t.get("why", {}):
            check("why" in f and "lines" not in f, what + ": want why= and no lines")
            continue
        check("lines" in f, what + ": no lines")
        lo, hi = map(int, f["lines"].split("-"))
        body = t["in"][name]
        check((lo, hi) == (min(body), max(body)), what + ": want lines=%d-%d" % (min(body), max(body)))
        print("ok", what)
    print("PASS: %d sites on %s" % (len(sites), ver))


main()
