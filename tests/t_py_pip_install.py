"""`pip install --target DIR ./python_hooks` builds the same extension from
the same sources; the installed copy writes marks, and its sitecustomize
starts ANCHOR_AUTO with only DIR on PYTHONPATH.  Uses the interpreter's
setuptools (--no-build-isolation) so the test needs no network."""
import glob
import json
import os
import subprocess

from pyanchor_util import PYTHON, ROOT, TMP, check, dump, events, skip


def main():
    if subprocess.run([PYTHON, "-c", "import setuptools, pip"], capture_output=True).returncode:
        skip("pip/setuptools not available to %s" % PYTHON)
    target = os.path.join(TMP, "site")
    p = subprocess.run([PYTHON, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--target", target, os.path.join(ROOT, "python_hooks")],
                       capture_output=True, text=True, timeout=110)
    check(p.returncode == 0, "pip install failed:\n%s\n%s" % (p.stdout[-3000:], p.stderr[-3000:]))
    check(glob.glob(os.path.join(target, "anchor", "_anchor*.so")), "no extension installed")
    for f in ("__init__.py", "__init__.pyi", "py.typed", "_torch_hooks.py"):
        check(os.path.exists(os.path.join(target, "anchor", f)), "missing anchor/%s" % f)
    check(os.path.exists(os.path.join(target, "sitecustomize.py")), "missing sitecustomize.py")
    ring = os.path.join(TMP, "pip.ring")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_") and k != "LD_PRELOAD"}
    env.update(PYTHONPATH=target, ANCHOR_FILE=ring, ANCHOR_SYNC_PULSE="1")
    code = ("import anchor, json; anchor.mark('from.pip', 5);"
            "print(json.dumps([anchor.__file__, anchor.enabled()]))")
    q = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=TMP)
    check(q.returncode == 0, "installed module failed: %s" % q.stderr)
    path, enabled = json.loads(q.stdout)
    check(path.startswith(target) and enabled, "imported %s enabled=%s" % (path, enabled))
    rows = dump(ring)
    check([r["value"] for r in events(rows, "mark", "from.pip")] == ["5"], "mark missing")
    check(len(events(rows, "begin", "anchor.sync_pulse")) == 6, "sitecustomize of the install did not start")
    print("ok: pip --target install works, marks and auto start from the installed copy")


main()
