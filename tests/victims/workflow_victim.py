"""A user's script as the README writes it: anchor.mark("data") before
ranges, plus a mark inside a range (an instant, no row).  No PyTorch, so
the tests that run it stay fast.  argv: STEPS [crash]"""
import sys
import time

import anchor


def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
for i in range(steps):
    anchor.mark("data")
    busy(0.01)
    with anchor.phase("forward"):
        busy(0.02)
        anchor.mark("inside")        # inside a range: an instant
    with anchor.phase("step"):
        busy(0.01 + 0.01 * (i % 3))  # jitter: separable phases
if len(sys.argv) > 2 and sys.argv[2] == "crash":
    raise RuntimeError("the user's script crashed")
