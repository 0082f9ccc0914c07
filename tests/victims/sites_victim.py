"""Victim of t_pyspy_sites.py: every kind of anchor call site, each line
the test needs tagged with a comment `# @NAME` (the test finds them)."""
import sys
import time

import anchor


def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:  # @busy
        pass


@anchor.phase("optim")
def step_fn():
    busy(0.002)  # @optim_body


steps = int(sys.argv[1])
for step in range(steps):  # @loop
    anchor.mark("data")
    time.sleep(0.06)  # @data_body
    with anchor.phase("fwd"):
        busy(0.002)  # @fwd_body
        with anchor.phase("inner"):
            busy(0.002)  # @inner_body
    step_fn()  # @optim_call
    with anchor.phase("even" if step % 2 else "odd"):
        busy(0.001)  # @dyn_body
