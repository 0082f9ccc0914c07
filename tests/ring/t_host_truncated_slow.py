"""The host survives its ring being truncated by another process at any
moment (issue 23, point 1): 8 threads marking, the main thread forking
children one after another (each marks from 3 threads and exits with its
own status; every 4th execs a marking child instead), the ring cut to 0
bytes, to its header's 4096, or to half, at a random instant of the run,
200 rounds, every other one with ANCHOR_STACKS=1.  Then 30 rounds of a
Python host (threads marking through the module, os.fork children) the
same way.  Each round: the host's stdout and exit status are those of the
same host with ANCHOR_DISABLE=1, nothing else on stderr than at most one
"anchor[pid]:" line per process.  Before the fix, 8 writer threads
loading the header through the pointer another thread's SIGBUS guard had
just cleared died of SIGSEGV in about 9 rounds of 10."""
import os
import random
import re
import subprocess
import sys
import time

B = os.environ["BUILD"]
T = os.environ["ANCHOR_TEST_TMP"]
PY = os.environ.get("PYTHON", sys.executable)
rng = random.Random(23)
MARKER = os.path.join(B, "victims", "marker")
RING_BYTES = 4096 + (1 << 20)  # ANCHOR_RING_SIZE=1M: header + 16384 slots
SIZES = (0, 4096, RING_BYTES // 2)
ANCHOR_LINE = re.compile(r"^anchor\[(\d+)\]: ")

PY_HOST = r"""
import anchor, os, sys, threading
stop = False
def busy(name):
    i = 0
    while not stop:
        anchor.mark(name)
        i += 1
ts = [threading.Thread(target=busy, args=("t%d" % k,)) for k in range(4)]
for t in ts:
    t.start()
codes = []
for i in range(6):
    pid = os.fork()
    if pid == 0:
        for k in range(300):
            with anchor.phase("child"):
                anchor.mark("c")
        os._exit(3 + i % 5)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
stop = True
for t in ts:
    t.join()
print("children", codes)
sys.exit(5)
"""


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def stderr_ok(err):
    """At most one anchor line per process, nothing foreign."""
    seen = set()
    for line in err.splitlines():
        m = ANCHOR_LINE.match(line)
        if not m or m.group(1) in seen:
            return False
        seen.add(m.group(1))
    return True


def rounds(name, cmd, n, base_env, span_s):
    ref = run(cmd, dict(base_env, ANCHOR_DISABLE="1"))
    if ref[0] not in (0, 5) or ref[2]:
        print(f"FAIL {name}: the host without anchor: exit {ref[0]}, stderr {ref[2]!r}")
        return 1
    bad = 0
    for i in range(n):
        ring = os.path.join(T, f"{name}{i}.ring")
        size = SIZES[i % 3]
        env = dict(base_env, ANCHOR_FILE=ring, ANCHOR_RING_SIZE="1M")
        if i % 2:
            env["ANCHOR_STACKS"] = "1"
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Any moment: from before the ring exists to after the host is done.
        time.sleep(rng.uniform(0, span_s))
        try:
            os.truncate(ring, size)
            cut = "cut"
        except FileNotFoundError:
            cut = "no ring yet"
        out, err = p.communicate(timeout=120)
        got = (p.returncode, out)
        if got != ref[:2] or not stderr_ok(err):
            bad += 1
            print(f"FAIL {name} round {i} (truncate -s {size}, {cut}, stacks {i % 2}): exit {p.returncode} "
                  f"(without anchor {ref[0]}), stdout {out!r}, stderr:\n{err}")
        elif i % 40 == 0:
            first = err.splitlines()[0] if err else "no anchor line"
            print(f"ok   {name} round {i} (truncate -s {size}, {cut}): exit {p.returncode}; {first}")
        if os.path.exists(ring):
            os.unlink(ring)
    print(f"{name}: {n - bad} of {n} rounds as without anchor")
    return bad


env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_") or k == "ANCHOR_ROOT"}
env.pop("LD_PRELOAD", None)
fails = rounds("c", [MARKER, "busy", "8", "4", MARKER], 200, env, 0.25)
py_env = dict(env, LD_PRELOAD=os.path.join(B, "libanchor.so"))
fails += rounds("py", [PY, "-c", PY_HOST], 30, py_env, 0.4)
print(f"failures: {fails}")
sys.exit(1 if fails else 0)
