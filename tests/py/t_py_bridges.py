"""Bridges (anchor._bridges), in real Python with real torch and nvtx:

  * ANCHOR_AUTO=torch,record_function,nvtx: torch.profiler.record_function
    (context manager, nested, decorator), torch.cuda.nvtx (push/pop, range(),
    mark) and the nvtx package (annotate as context manager and decorator,
    push/pop, start/end across threads, mark) become anchor ranges/marks
    with their names, in order; torch.profiler still records the
    record_function range; on a CPU-only torch, torch.cuda.nvtx still raises
    its RuntimeError (behaviour unchanged) after the anchor is written;
  * without the bridges, none of those names reach the ring;
  * anchor.nvtx(True): finds an NVTX backend (the nvtx package here), calls
    the original NVTX functions (no second anchor through the bridge);
    the C path calls push(name) after BEGIN and pop() before END, and an
    NVTX callable that raises does not break the block.
"""
import importlib.util
import json

import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import TMP, check, dump, need_build, run_py, skip  # noqa: E402

need_build()
# find_spec, not import: the test process never uses them itself, and
# importing it only to see whether it is there costs seconds.
_missing = [m for m in ("nvtx", "torch") if importlib.util.find_spec(m) is None]
if _missing:
    skip("no module named %s (scripts/install-deps.sh installs torch and nvtx)" % ", ".join(_missing))

SCRIPT = r'''
import json, sys, threading
import torch, nvtx, anchor
out = {"cuda": torch.cuda.is_available()}
with torch.profiler.record_function("rf.outer"):
    with torch.autograd.profiler.record_function("rf.inner"):
        pass
@torch.profiler.record_function("rf.deco")
def f():
    return 3
out["deco"] = f()
if sys.argv[1:] == ["profile"]:  # starting the profiler takes seconds: once
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        with torch.profiler.record_function("rf.prof"):
            torch.ones(4) + 1
    out["prof_keys"] = sorted({e.key for e in prof.key_averages()} & {"rf.prof"})
out["raised"] = []
for call in (lambda: torch.cuda.nvtx.range_push("tn.push"), lambda: torch.cuda.nvtx.range_pop(),
             lambda: torch.cuda.nvtx.mark("tn.mark")):
    try:
        call()
    except RuntimeError:
        out["raised"].append(1)
with nvtx.annotate("nv.ctx", color="red"):
    pass
@nvtx.annotate("nv.deco")
def g():
    return 4
@nvtx.annotate()
def nv_default():
    return 5
out["nv"] = [g(), nv_default()]
nvtx.push_range("nv.push", domain="d1")
nvtx.pop_range(domain="d1")
r = nvtx.start_range("nv.start")
t = threading.Thread(target=nvtx.end_range, args=(r,))
t.start(); t.join()
nvtx.mark("nv.mark")
out["nvtx_on"] = anchor.nvtx(True)
with anchor.phase("ph.nvtx"):
    pass
anchor.nvtx(False)
calls = []
def bad_pop():
    calls.append("pop")
    raise ValueError("nvtx broke")
anchor._anchor._set_nvtx(lambda n: calls.append("push " + n), bad_pop)
with anchor.phase("ph.rec"):
    calls.append("body")
anchor._anchor._set_nvtx(None, None)
out["calls"] = calls
print(json.dumps(out))
'''

NAMES = ["rf.outer", "rf.inner", "rf.deco", "rf.prof", "tn.push", "tn.mark", "nv.ctx", "nv.deco", "nv_default",
         "nv.push", "nv.start", "nv.mark", "ph.nvtx", "ph.rec"]

ring = TMP + "/bridges.ring"
p = run_py(SCRIPT, ring, False, extra={"ANCHOR_AUTO": "torch,record_function,nvtx", "ANCHOR_SYNC_PULSE": "0"},
           args=("profile",))
out = json.loads(p.stdout.strip().splitlines()[-1])
got = [(r["kind"], r["name"]) for r in dump(ring) if r["name"] in NAMES]
want = [("begin", "rf.outer"), ("begin", "rf.inner"), ("end", "rf.inner"), ("end", "rf.outer"),
        ("begin", "rf.deco"), ("end", "rf.deco"), ("begin", "rf.prof"), ("end", "rf.prof"),
        ("begin", "tn.push"), ("end", "tn.push"), ("mark", "tn.mark"),
        ("begin", "nv.ctx"), ("end", "nv.ctx"), ("begin", "nv.deco"), ("end", "nv.deco"),
        ("begin", "nv_default"), ("end", "nv_default"), ("begin", "nv.push"), ("end", "nv.push"),
        ("begin", "nv.start"), ("end", "nv.start"), ("mark", "nv.mark"),
        ("begin", "ph.nvtx"), ("end", "ph.nvtx"), ("begin", "ph.rec"), ("end", "ph.rec")]
check(got == want, "bridged anchors:\n got  %s\n want %s" % (got, want))
check(out["deco"] == 3 and out["nv"] == [4, 5], "decorated functions return their values: %s" % out)
check(out["prof_keys"] == ["rf.prof"], "torch.profiler still sees the record_function range")
check(out["raised"] == ([] if out["cuda"] else [1, 1, 1]), "torch.cuda.nvtx behaves as without anchor: %s" % out)
check(out["nvtx_on"] is True, "anchor.nvtx(True) finds the nvtx package")
check(out["calls"] == ["push ph.rec", "body", "pop"], "phase calls NVTX push/pop around the body: %s" % out)

ring2 = TMP + "/nobridge.ring"
run_py(SCRIPT, ring2, False, extra={"ANCHOR_AUTO": "torch", "ANCHOR_SYNC_PULSE": "0"})
got2 = {r["name"] for r in dump(ring2) if r["name"] in NAMES}
check(got2 == {"ph.nvtx", "ph.rec"}, "without the bridges only anchor's own phases: %s" % sorted(got2))
print("ok")
