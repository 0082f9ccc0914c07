"""Zero configuration on the promised path (issue 12, point 1), with real
processes and no PYTHONPATH / ANCHOR_AUTO set by the test:

1. `LD_PRELOAD=build/libanchor.so python train.py` with `import anchor` in a
   small PyTorch script, run from an unrelated directory: the module is
   found (libanchor.so puts its directory on PYTHONPATH in CPython hosts),
   phases reach the ring.  A non-Python host under the same preload keeps
   its PYTHONPATH untouched.  (From an installed prefix: t_install_slow.sh.)
2. Importing the module for help() writes nothing; with ANCHOR_AUTO=torch
   exported, a helper that never imports torch, and one that imports
   anchor but never marks, leave no ring; a child forked before the
   parent's first mark writes into the same ring.
3. Real `perun monitor` (emulated RAPL) under LD_PRELOAD, no ANCHOR_AUTO:
   perun's sample stamps are in the ring and `anchorpost phases` aligns
   with them (alignment perun-hook).
4. perun's decorator API (`@perun.perun(...)`, psutil sensors) in a script
   under LD_PRELOAD, no variable: its sample stamps are in the ring.
"""
import csv
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import ANCHORPOST, LIB, PYTHON, ROOT, TMP, check, dump, events, need_build  # noqa: E402

TRAIN = r'''
import json, os, sys
import anchor
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(256, 32), torch.randn(256, 1)
for step in range(5):
    with anchor.phase("fwd"):
        loss = ((model(x) - y) ** 2).mean()
    with anchor.phase("bwd"):
        opt.zero_grad()
        loss.backward()
    anchor.mark("step", step)
    opt.step()
print(json.dumps({"file": anchor.__file__, "preloaded": anchor.preloaded(), "ring": anchor.ring_path()}))
'''


def env_clean(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANCHOR_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env.update(extra)
    return env


def real_python():
    return subprocess.run([PYTHON, "-c", "import sys; print(sys.executable)"], capture_output=True,
                          text=True).stdout.strip()


def preload_case(py):
    work = os.path.join(TMP, "elsewhere")
    os.makedirs(work, exist_ok=True)
    script = os.path.join(TMP, "zc_train.py")
    with open(script, "w") as f:
        f.write(TRAIN)
    ring = os.path.join(TMP, "zc.ring")
    p = subprocess.run([py, script], env=env_clean(LD_PRELOAD=LIB, ANCHOR_FILE=ring), cwd=work,
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "LD_PRELOAD + import anchor, no PYTHONPATH: exit %d\n%s" % (p.returncode, p.stderr))
    import json

    out = json.loads(p.stdout.strip().splitlines()[-1])
    check(out["preloaded"] and out["ring"] == ring, "module not on the preloaded writer: %r" % out)
    check(out["file"].startswith(os.path.join(os.path.dirname(LIB), "python")), "imported %s" % out["file"])
    rows = dump(ring)
    check(len(events(rows, "begin", "fwd")) == 5 and len(events(rows, "end", "bwd")) == 5, "phases missing")
    check(not glob.glob(os.path.join(work, "*.ring")), "a second ring in the cwd")
    # A non-Python host: PYTHONPATH as it was (unset).
    q = subprocess.run(["sh", "-c", 'echo "${PYTHONPATH-unset}"'], env=env_clean(LD_PRELOAD=LIB,
                       ANCHOR_FILE=ring), capture_output=True, text=True)
    check(q.stdout.strip() == "unset", "sh under libanchor got PYTHONPATH=%r" % q.stdout.strip())
    print("ok: LD_PRELOAD=build/libanchor.so python train.py (import anchor) from another directory, "
          "no PYTHONPATH: 5 fwd/bwd; sh's environment untouched")


def lazy_case(py):
    pydir = os.path.join(os.path.dirname(LIB), "python")
    work = os.path.join(TMP, "lazy")
    os.makedirs(work, exist_ok=True)
    cases = [
        ("help(anchor)", "import anchor, io, contextlib\n"
                         "with contextlib.redirect_stdout(io.StringIO()): help(anchor)\n"
                         "anchor.preloaded(); anchor.__version__", {}),
        ("ANCHOR_AUTO helper", "print(1)", {"ANCHOR_AUTO": "torch"}),
        ("ANCHOR_AUTO helper importing anchor", "import anchor, json; json.dumps(1)", {"ANCHOR_AUTO": "torch,perun"}),
    ]
    for what, code, extra in cases:
        p = subprocess.run([py, "-c", code], env=env_clean(PYTHONPATH=pydir, **extra), cwd=work,
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and p.stderr == "", "%s: exit %d %s" % (what, p.returncode, p.stderr))
        left = os.listdir(work)
        check(not left, "%s wrote %s" % (what, left))
    # The first event creates it.
    p = subprocess.run([py, "-c", "import anchor; anchor.mark('now')"], env=env_clean(PYTHONPATH=pydir), cwd=work,
                       capture_output=True, text=True, timeout=60)
    rings = glob.glob(os.path.join(work, "anchor-*.ring"))
    check(p.returncode == 0 and len(rings) == 1, "first mark: %s %s" % (os.listdir(work), p.stderr))
    check(len(events(dump(rings[0]), "mark", "now")) == 1, "the mark is not in the lazily created ring")
    # A child forked before the parent's first event shares the ring.
    fork_dir = os.path.join(TMP, "lazyfork")
    os.makedirs(fork_dir, exist_ok=True)
    code = ("import anchor, os\npid = os.fork()\nif pid == 0:\n    anchor.mark('child'); os._exit(0)\n"
            "os.waitpid(pid, 0)\nanchor.mark('parent')\n")
    p = subprocess.run([py, "-c", code], env=env_clean(PYTHONPATH=pydir), cwd=fork_dir, capture_output=True,
                       text=True, timeout=60)
    rings = glob.glob(os.path.join(fork_dir, "*.ring"))
    check(p.returncode == 0 and len(rings) == 1, "fork before the first mark: rings %s %s" % (rings, p.stderr))
    rows = dump(rings[0])
    check(len(events(rows, "mark", "child")) == 1 and len(events(rows, "mark", "parent")) == 1,
          "child and parent marks not in one ring")
    print("ok: help(anchor), helpers with ANCHOR_AUTO: no ring; the first mark creates it; "
          "a child forked before it shares the ring")


def perun_case(py):
    sys.path.insert(0, os.path.join(ROOT, "tools", "groundtruth"))
    import run_scenario

    def env_no_vars(libanchor, ring, preload):
        # Only the emulated sensor's module on PYTHONPATH: not anchor's
        # directory, no ANCHOR_AUTO.
        env = env_clean(PYTHONPATH=run_scenario.EMUL)
        if preload:
            env.update(ANCHOR_FILE=ring, LD_PRELOAD=libanchor)
        return env

    run_scenario._env = env_no_vars
    out = os.path.join(TMP, "perun")
    phases = [("fwd", 60, 40, 5, "spin"), ("bwd", 90, 70, 8, "spin")]
    run_scenario.run(out, run_scenario.make_spec(phases=phases, repeat=8, lead_in_s=0.5, lead_out_s=0.3),
                     python=py, libanchor=LIB, quiet=True)
    ring = os.path.join(out, "run.ring")
    stamps = events(dump(ring), "mark", "perun.sample")
    check(len(stamps) >= 5, "perun.sample marks without ANCHOR_AUTO: %d" % len(stamps))
    csv_out = os.path.join(TMP, "zc_phases.csv")
    p = subprocess.run([ANCHORPOST, "phases", "--ring", ring, "--perun", os.path.join(out, "perun", "workload.hdf5"),
                        "-o", csv_out], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "phases: %s" % p.stderr)
    rows = list(csv.DictReader(open(csv_out)))
    align = {r["alignment"] for r in rows}
    check(align == {"perun-hook"}, "alignment without ANCHOR_AUTO: %s" % align)
    print("ok: perun monitor under LD_PRELOAD, no ANCHOR_AUTO: %d perun.sample stamps, alignment perun-hook"
          % len(stamps))


DECORATED = r'''
import time
import perun

@perun.perun(data_out="perun_out", sampling_period=0.1)
def work():
    t = time.perf_counter()
    while time.perf_counter() - t < 1.0:
        pass

work()
'''


def decorator_case(py):
    work = os.path.join(TMP, "decorator")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "dec.py"), "w") as f:
        f.write(DECORATED)
    ring = os.path.join(TMP, "dec.ring")
    p = subprocess.run([py, "dec.py"], env=env_clean(LD_PRELOAD=LIB, ANCHOR_FILE=ring), cwd=work,
                       capture_output=True, text=True, timeout=150)
    check(p.returncode == 0, "perun decorator script: exit %d %s" % (p.returncode, p.stderr[-2000:]))
    check(glob.glob(os.path.join(work, "perun_out", "*.hdf5")), "perun wrote no HDF5")
    stamps = events(dump(ring), "mark", "perun.sample")
    check(len(stamps) >= 5, "perun.sample marks from the decorator API: %d" % len(stamps))
    print("ok: @perun.perun under LD_PRELOAD, no variable: %d perun.sample stamps" % len(stamps))


need_build()
py = real_python()
preload_case(py)
lazy_case(py)
perun_case(py)
decorator_case(py)
