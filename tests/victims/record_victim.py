"""Victim of t_py_record_tools.py: three phases written three ways (a
`with` body, another `with`, a decorated function), busy so that py-spy's
samples land inside them.  argv[1]: steps."""
import sys
import time

import anchor


def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s:
        pass


@anchor.phase("step")
def step():
    busy(0.02)  # in step


for i in range(int(sys.argv[1])):
    with anchor.phase("forward"):
        busy(0.04)  # in forward
    with anchor.phase("backward"):
        busy(0.03)  # in backward
    step()
