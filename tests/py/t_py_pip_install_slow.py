"""`pip install .` from the repository root, into a venv that already has
its own sitecustomize.py: the package (distribution anchor-energy) brings
the C extension and starts auto mode through anchor_auto.pth, never by
replacing the user's file; `pip uninstall` removes exactly what it put
there and the user's sitecustomize.py is byte-for-byte intact and still
runs.  Auto mode from the venv alone (no PYTHONPATH, no LD_PRELOAD):
ANCHOR_AUTO=torch anchors a script with no `import anchor`; a helper that
inherits ANCHOR_AUTO and never imports torch writes no ring.

The venv uses --system-site-packages (torch, setuptools) and pip runs with
--no-build-isolation --no-index: no network needed."""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYTHON, ROOT, TMP, check, dump, events, skip  # noqa: E402

USER_SC = "import builtins\nbuiltins.USER_SITECUSTOMIZE = 'ran'\nMARKER = 'the user\\'s own'\n"
TRAIN = r'''
import builtins, json, sys
import torch
m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(4):
    opt.zero_grad(); m(torch.randn(8, 4)).sum().backward(); opt.step()
print(json.dumps({"user_sc": getattr(builtins, "USER_SITECUSTOMIZE", None),
                  "anchor": sys.modules["anchor"].__file__ if "anchor" in sys.modules else None}))
'''


def env_clean(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANCHOR_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env.update(extra)
    return env


def main():
    real = subprocess.run([PYTHON, "-c", "import sys; print(sys.executable)"], capture_output=True,
                          text=True).stdout.strip()
    if subprocess.run([real, "-c", "import setuptools, pip, venv"], capture_output=True).returncode:
        skip("pip/setuptools/venv not available to %s" % real)
    venv = os.path.join(TMP, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    p = subprocess.run([real, "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
    check(p.returncode == 0, "venv: %s" % p.stderr)
    vpy = os.path.join(venv, "bin", "python")
    site = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                          capture_output=True, text=True).stdout.strip()
    check(site.startswith(venv), "venv site-packages: %r" % site)
    user_sc = os.path.join(site, "sitecustomize.py")
    with open(user_sc, "w") as f:
        f.write(USER_SC)
    digest = hashlib.sha256(USER_SC.encode()).hexdigest()

    p = subprocess.run([vpy, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", "--no-deps", ROOT],
                       capture_output=True, text=True, timeout=300, env=env_clean())
    check(p.returncode == 0, "pip install . failed:\n%s\n%s" % (p.stdout[-3000:], p.stderr[-3000:]))
    check(glob.glob(os.path.join(site, "anchor", "_anchor*.so")), "no extension installed")
    for f in ("anchor/__init__.py", "anchor/__init__.pyi", "anchor/py.typed", "anchor/_torch_hooks.py",
              "anchor_auto.pth", "_anchor_autostart.py"):
        check(os.path.exists(os.path.join(site, f)), "missing %s" % f)
    check(glob.glob(os.path.join(site, "anchor_energy-*.dist-info")), "distribution is not anchor-energy")
    check(hashlib.sha256(open(user_sc, "rb").read()).hexdigest() == digest, "install changed the user's sitecustomize.py")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    q = subprocess.run([vpy, "-m", "pip", "show", "anchor-energy"], capture_output=True, text=True, env=env_clean())
    check("Version: %s" % version in q.stdout, "pip show: %s" % q.stdout)
    print("ok: pip install . (anchor-energy %s): extension, package, anchor_auto.pth; user's sitecustomize untouched"
          % version)

    work = os.path.join(TMP, "work")
    os.makedirs(work, exist_ok=True)
    script = os.path.join(TMP, "pip_train.py")
    with open(script, "w") as f:
        f.write(TRAIN)
    ring = os.path.join(TMP, "pip.ring")
    q = subprocess.run([vpy, script], env=env_clean(ANCHOR_AUTO="torch", ANCHOR_FILE=ring), capture_output=True,
                       text=True, timeout=120, cwd=work)
    check(q.returncode == 0, "auto run failed: %s" % q.stderr)
    out = json.loads(q.stdout.strip().splitlines()[-1])
    check(out["user_sc"] == "ran", "the user's sitecustomize did not run with anchor installed")
    check(out["anchor"] and out["anchor"].startswith(site), "auto mode imported %r" % out["anchor"])
    rows = dump(ring)
    for name, n in (("forward", 4), ("backward", 4), ("optimizer.step", 4), ("anchor.sync_pulse", 6)):
        got = len(events(rows, "begin", name))
        check(got == n, "ANCHOR_AUTO=torch from the venv: %d %s ranges, want %d" % (got, name, n))
    print("ok: ANCHOR_AUTO=torch through anchor_auto.pth: 4 forward/backward/step, pulses after import torch")

    q = subprocess.run([vpy, "-c", "import sys; print('anchor' in sys.modules)"], env=env_clean(ANCHOR_AUTO="torch"),
                       capture_output=True, text=True, timeout=60, cwd=work)
    check(q.returncode == 0 and q.stderr == "", "helper: %s" % q.stderr)
    check(not glob.glob(os.path.join(work, "*.ring")), "a helper with ANCHOR_AUTO wrote %s" % os.listdir(work))
    q = subprocess.run([vpy, "-c", "import sys; print(sorted(m for m in sys.modules if 'anchor' in m))"],
                       env=env_clean(), capture_output=True, text=True, timeout=60, cwd=work)
    check(q.stdout.strip() == "['_anchor_autostart']", "without ANCHOR_* the .pth loads %s" % q.stdout.strip())
    print("ok: helper with ANCHOR_AUTO: no ring; without ANCHOR_*: only _anchor_autostart is imported")

    p = subprocess.run([vpy, "-m", "pip", "uninstall", "-y", "-q", "anchor-energy"], capture_output=True, text=True,
                       env=env_clean())
    check(p.returncode == 0, "pip uninstall: %s" % p.stderr)
    left = [f for f in os.listdir(site) if "anchor" in f]
    check(not left, "uninstall left %s" % left)
    check(hashlib.sha256(open(user_sc, "rb").read()).hexdigest() == digest, "uninstall changed the user's sitecustomize.py")
    q = subprocess.run([vpy, "-c", "import builtins, sitecustomize; print(sitecustomize.MARKER, builtins.USER_SITECUSTOMIZE)"],
                       env=env_clean(), capture_output=True, text=True, cwd=work)
    check(q.stdout.strip() == "the user's own ran", "the user's sitecustomize after uninstall: %r %r" % (q.stdout, q.stderr))
    print("ok: pip uninstall removed every anchor file; the user's sitecustomize.py intact and running")


main()
