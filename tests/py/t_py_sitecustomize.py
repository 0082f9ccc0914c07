"""anchor's sitecustomize.py must not shadow the user's.

With build/python (anchor's sitecustomize) first on PYTHONPATH and a user
directory holding its own sitecustomize.py and usercustomize.py after it,
the user's files run exactly once, `import sitecustomize` yields the user's
module, and the script prints exactly what it prints without anchor on the
path, with auto mode off and on.  A user sitecustomize that raises is
reported by site.py exactly as without anchor, and auto mode still starts.
"""
import json
import os
import subprocess
import site

import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))  # tests/lib
from pyanchor_util import PYDIR, PYTHON, TMP, check, dump, events, need_build  # noqa: E402

SCRIPT = r'''
import builtins, json, sys
sc = sys.modules.get("sitecustomize")
try:
    import sitecustomize
    imported = sitecustomize.__file__
except Exception as e:
    imported = type(e).__name__
print(json.dumps({"user_site_runs": getattr(builtins, "USER_SITE_RUNS", 0),
                  "user_custom_runs": getattr(builtins, "USER_CUSTOM_RUNS", 0),
                  "sitecustomize_file": getattr(sc, "__file__", None),
                  "imported": imported,
                  "marker": getattr(sc, "MARKER", None),
                  "anchor": "anchor" in sys.modules}))
'''


def run(pythonpath, extra_env, ring):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_") and k != "LD_PRELOAD"}
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    env["ANCHOR_FILE"] = ring
    env.update(extra_env)
    script = os.path.join(TMP, "site_script.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    p = subprocess.run([PYTHON, script], env=env, capture_output=True, text=True, timeout=60, cwd=TMP)
    check(p.returncode == 0, "script failed: %s" % p.stderr)
    return json.loads(p.stdout), p.stderr


def main():
    need_build()
    user = os.path.join(TMP, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import builtins\nbuiltins.USER_SITE_RUNS = getattr(builtins, 'USER_SITE_RUNS', 0) + 1\n"
                "MARKER = 'user-sitecustomize'\n")
    with open(os.path.join(user, "usercustomize.py"), "w") as f:
        f.write("import builtins\nbuiltins.USER_CUSTOM_RUNS = getattr(builtins, 'USER_CUSTOM_RUNS', 0) + 1\n")
    user_custom = 1 if site.ENABLE_USER_SITE else 0
    ring = os.path.join(TMP, "site.ring")

    base, _ = run([user], {}, ring + ".base")
    check(base["user_site_runs"] == 1 and base["marker"] == "user-sitecustomize", "baseline: %r" % base)
    for auto in ({}, {"ANCHOR_AUTO": "torch", "ANCHOR_SYNC_PULSE": "0"}, {"ANCHOR_SYNC_PULSE": "1"}):
        got, err = run([PYDIR, user], auto, ring)
        want = dict(base, anchor=bool(auto))
        check(got == want, "with anchor's sitecustomize (%r): %r, want %r" % (auto, got, want))
        check(got["user_custom_runs"] == user_custom, "usercustomize ran %d times" % got["user_custom_runs"])
        check(err == "", "stderr: %r" % err)
    pulses = events(dump(ring), "begin", "anchor.sync_pulse")
    check(len(pulses) == 6, "ANCHOR_SYNC_PULSE=1: %d pulse bursts, want 3 at start + 3 at exit" % len(pulses))

    # A user sitecustomize that raises: same report as without anchor.
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("MARKER = 'partial'\nraise ZeroDivisionError('user sitecustomize is broken')\n")
    base, base_err = run([user], {}, ring + ".base2")
    got, err = run([PYDIR, user], {"ANCHOR_AUTO": "torch", "ANCHOR_SYNC_PULSE": "0"}, ring + ".broken")
    check("Error in sitecustomize" in base_err and err == base_err, "error report differs:\n%r\n%r" % (base_err, err))
    check(got["anchor"] and got["marker"] == base["marker"], "broken user sitecustomize: %r vs %r" % (got, base))
    print("ok: user sitecustomize/usercustomize run once, unchanged output, errors reported as without anchor")


main()
