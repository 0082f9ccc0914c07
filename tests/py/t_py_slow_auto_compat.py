"""Auto mode must not change what torch does: torch.jit.script, jit.trace,
torch.fx.symbolic_trace and torch.compile(backend="eager") give the same
results with ANCHOR_AUTO=torch, a forward that raises still raises (and
its range is closed), and the outputs equal those of a run without auto."""
import json
import os

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import TMP, check, dump, need_build, ranges, run_py  # noqa: E402

SCRIPT = r'''
import json, warnings
import torch, torch.nn as nn
warnings.simplefilter("ignore")
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
x = torch.randn(2, 4)
out = {"eager": m(x).detach().tolist()}
out["script"] = torch.jit.script(m)(x).detach().tolist()
out["fx"] = torch.fx.symbolic_trace(m)(x).detach().tolist()
out["trace"] = torch.jit.trace(m, x)(x).detach().tolist()
out["compile_eager"] = torch.compile(m, backend="eager")(x).detach().tolist()
class Bad(nn.Module):
    def forward(self, x):
        raise KeyError("boom")
try:
    Bad()(x)
except KeyError as e:
    out["raised"] = str(e)
print(json.dumps(out))
'''


def main():
    need_build()
    ring = os.path.join(TMP, "compat.ring")
    plain = run_py(SCRIPT, ring + ".plain", False, timeout=110)
    auto = run_py(SCRIPT, ring, False, extra={"ANCHOR_AUTO": "torch", "ANCHOR_SYNC_PULSE": "0"}, timeout=110)
    a, b = json.loads(plain.stdout), json.loads(auto.stdout)
    check(a == b, "auto mode changed results:\n%r\n%r" % (a, b))
    check(b["raised"] == "'boom'", "exception changed: %r" % b.get("raised"))
    n = len(ranges(dump(ring), "forward"))  # ranges() fails on an unclosed BEGIN
    check(n >= 4, "only %d forward ranges" % n)
    print("ok: jit.script, fx, compile(eager) and raising forward unchanged; %d forward ranges, all closed" % n)


main()
