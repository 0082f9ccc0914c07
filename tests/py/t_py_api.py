"""anchor Python API: values, ranges, phase, bad calls; with and without LD_PRELOAD.

Documented behaviour under test: non-str names raise TypeError, lone
surrogates UnicodeEncodeError, bad values TypeError/OverflowError, and
nothing is written for a failed call; long names are truncated to NAME_MAX
bytes at a character boundary; end() without begin() and misnested ranges
raise nothing and are recorded exactly as called.
"""
import json
import os

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import TMP, check, dump, events, need_build, run_py  # noqa: E402

SCRIPT = r'''
import json, os, sys, threading
import anchor
out = {"enabled": anchor.enabled(), "preloaded": anchor.preloaded(), "path": anchor.ring_path(),
       "pid": os.getpid(), "tid": threading.get_native_id(), "errors": []}
def expect(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc as e:
        out["errors"].append(type(e).__name__)
        return
    out["errors"].append("none")
anchor.mark("m.plain")
anchor.mark("m.int", 42)
anchor.mark("m.neg", value=-7)
anchor.mark("m.float", 0.25)
anchor.mark("m.none", None)
anchor.mark("m.bool", True)
expect(TypeError, anchor.mark, 17)
expect(TypeError, anchor.mark, None)
expect(TypeError, anchor.mark, b"bytes")
expect(TypeError, anchor.begin, 3.5)
expect(TypeError, anchor.end, ["x"])
expect(TypeError, anchor.phase, 1)
expect(TypeError, anchor.mark, "m.badvalue", "str")
expect(TypeError, anchor.mark, "m.badvalue", [1])
expect(OverflowError, anchor.mark, "m.badvalue", 2**64)
expect(TypeError, anchor.mark)
expect(TypeError, anchor.mark, "a", 1, 2)
expect(TypeError, anchor.mark, "a", val=1)
expect(UnicodeEncodeError, anchor.mark, "bad\udcffname")
expect(UnicodeEncodeError, anchor.begin, "\ud800")
expect(TypeError, anchor.phase("p.ok"), 5)           # decorating a non-callable
anchor.mark("L" * 5000)                               # huge: truncated
anchor.mark("é" * 60)                                 # 120 bytes: cut at a char boundary
anchor.end("e.without.begin")
anchor.begin("n.outer"); anchor.begin("n.inner"); anchor.end("n.outer"); anchor.end("n.inner")
with anchor.phase("p.ctx") as ph:
    out["ph_name"] = ph.name
try:
    with anchor.phase("p.raises"):
        raise KeyError("boom")
except KeyError:
    out["raised_through"] = True
@anchor.phase("p.deco")
def deco(x, y=1):
    "docstring kept"
    return x + y
out["deco"] = [deco(1), deco(2, y=5), deco.__name__, deco.__doc__]
import asyncio
@anchor.phase("p.async")
async def coro():
    await asyncio.sleep(0.01)
    return 9
out["async"] = asyncio.run(coro())
p = anchor.phase("p.reused")
with p:
    with p:
        pass
anchor.sync()
out["repr"] = repr(p)
print(json.dumps(out))
'''


def run_case(preload):
    ring = os.path.join(TMP, "api-%s.ring" % ("pre" if preload else "own"))
    p = run_py(SCRIPT, ring, preload)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    check(out["enabled"] and out["path"] == ring, "not attached to %s: %r" % (ring, out))
    check(out["preloaded"] == preload, "preloaded() is %r, want %r" % (out["preloaded"], preload))
    check(out["errors"] == ["TypeError"] * 8 + ["OverflowError"] + ["TypeError"] * 3 +
          ["UnicodeEncodeError"] * 2 + ["TypeError"], "errors: %r" % out["errors"])
    check(out["raised_through"] and out["ph_name"] == "p.ctx", "phase ctx: %r" % out)
    check(out["deco"] == [2, 7, "deco", "docstring kept"] and out["async"] == 9, "decorator: %r" % out)
    check(out["repr"] == "anchor.phase('p.reused')", out["repr"])
    rows = [r for r in dump(ring) if r["pid"] == out["pid"]]
    user = [r for r in rows if r["kind"] in ("mark", "begin", "end")]
    check(all(r["tid"] == out["tid"] for r in user), "tid mismatch")
    got = [(r["kind"], r["name"], r["value"]) for r in user]
    # A coroutine's range carries its task's range id, the same on both ends.
    ids = {v for k, n, v in got if n == "p.async"}
    check(len(ids) == 1 and "" not in ids, "p.async: one range id on BEGIN and END: %r" % ids)
    got = [(k, n, "" if n == "p.async" else v) for k, n, v in got]
    want = [("mark", "m.plain", ""), ("mark", "m.int", "42"), ("mark", "m.neg", "-7"),
            ("mark", "m.float", "0.25"), ("mark", "m.none", ""), ("mark", "m.bool", "1"),
            ("mark", "L" * 79, ""), ("mark", "é" * 39, ""),
            ("end", "e.without.begin", ""),
            ("begin", "n.outer", ""), ("begin", "n.inner", ""), ("end", "n.outer", ""), ("end", "n.inner", ""),
            ("begin", "p.ctx", ""), ("end", "p.ctx", ""), ("begin", "p.raises", ""), ("end", "p.raises", ""),
            ("begin", "p.deco", ""), ("end", "p.deco", ""), ("begin", "p.deco", ""), ("end", "p.deco", ""),
            ("begin", "p.async", ""), ("end", "p.async", ""),
            ("begin", "p.reused", ""), ("begin", "p.reused", ""), ("end", "p.reused", ""), ("end", "p.reused", "")]
    if got != want:
        for g, w in zip(got + [None] * 5, want + [None] * 5):
            print("   " if g == w else "!! ", g, w)
        check(False, "recorded events differ from the calls (preload=%s)" % preload)
    check(len(events(rows, "proc_start")) == 1 and len(events(rows, "sync")) >= 2,
          "process records missing")
    check(len(events(rows, "proc_exit")) == 1, "no proc_exit")
    print("ok preload=%s: %d events as called" % (preload, len(user)))


def disabled_case():
    code = "import anchor, json; anchor.mark('x'); print(json.dumps([anchor.enabled(), anchor.ring_path()]))"
    p = run_py(code, None, False, extra={"ANCHOR_DISABLE": "1"})
    check(json.loads(p.stdout) == [False, ""], "ANCHOR_DISABLE: %s" % p.stdout)
    # No ANCHOR_FILE: a default ring in the cwd, exported to children.
    d = os.path.join(TMP, "default")
    os.makedirs(d)
    code = ("import anchor, os, subprocess, sys; anchor.mark('parent');"
            "print(anchor.ring_path(), os.environ['ANCHOR_FILE']);"
            "subprocess.run([sys.executable, '-c', 'import anchor; anchor.mark(\"child\")'], check=True)")
    p = run_py(code, None, False, cwd=d)
    path, env_path = p.stdout.split()
    check(path == env_path and os.path.dirname(path) == d and os.path.basename(path).startswith("anchor-")
          and path.endswith(".ring"), "default ring path %r" % p.stdout)
    names = [r["name"] for r in events(dump(path), "mark")]
    check(names == ["parent", "child"], "default ring marks %r" % names)
    # Same under LD_PRELOAD (libanchor.so names the default ring), with the
    # child started in another directory: it must find the parent's ring.
    d2 = os.path.join(TMP, "default-preload")
    os.makedirs(d2)
    code = ("import anchor, os, subprocess, sys; anchor.mark('parent');"
            "print(anchor.ring_path(), os.environ['ANCHOR_FILE']);"
            "subprocess.run([sys.executable, '-c', 'import anchor; anchor.mark(\"child\")'], check=True, cwd='/')")
    p = run_py(code, None, True, cwd=d2)
    path, env_path = p.stdout.split()
    check(path == env_path and os.path.dirname(path) == d2, "preload default ring path %r" % p.stdout)
    names = [r["name"] for r in events(dump(path), "mark")]
    check(names == ["parent", "child"], "preload default ring marks %r (child in another cwd)" % names)
    print("ok disabled and default path (own writer and preload)")


need_build()
run_case(False)
run_case(True)
disabled_case()
